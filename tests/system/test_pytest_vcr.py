"""pytest-recording's interface on attest: unedited `@pytest.mark.vcr` tests, in real pytest runs with the
official openai SDK, recording against a scripted provider on loopback and replaying offline."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from attest_toolkit.fixtures import document as fx
from attest_toolkit.fixtures.importer import layout_name
from conftest import chat_response, clean_env, message_response, scrub
from upstream import FakeUpstream, Reply

KEY = "sk-test-" + "v" * 40
FIXTURES = Path("tests") / "attest" / "fixtures"

# As a pytest-recording suite is written: a module-level client, marked tests, parametrized ids.
TESTS = """
import openai
import pytest

client = openai.OpenAI(max_retries=0)

def ask(content):
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": content}])
    return reply.choices[0].message.content

@pytest.mark.vcr
@pytest.mark.parametrize("word", ["hello"])
def test_hello(word):
    assert ask(f"Say {word}") == "Hello!"

@pytest.mark.vcr
def test_no_call():
    assert 1 + 1 == 2

class TestChat:
    @pytest.mark.vcr
    def test_bye(self):
        assert ask("Say bye") == "Bye!"
"""

# A client built inside the test, as most suites do: no front is needed to replay.
INSIDE = """
import openai
import pytest

@pytest.mark.vcr
def test_hello():
    client = openai.OpenAI(max_retries=0)
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Say hello"}])
    assert reply.choices[0].message.content == "Hello!"
"""


def answer(text: str) -> Reply:
    return Reply(body=json.dumps(chat_response(text)).encode())


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    scrub(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    (pytester.path / "tests").mkdir()
    return pytester


def fixture_file(suite: pytest.Pytester, name: str) -> Path:
    return suite.path / FIXTURES / f"{name}{fx.SUFFIX}"


def chat(content: str, reply: str) -> dict:
    """One chat call as vcrpy records it."""
    request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}]}
    return {
        "request": {
            "body": json.dumps(request),
            "headers": {"authorization": [f"Bearer {KEY}"]},
            "method": "POST",
            "uri": "https://api.openai.com/v1/chat/completions",
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": ["application/json"]},
            "body": {"string": json.dumps(chat_response(reply))},
        },
    }


IMAGE = {  # a library fetching an image URL to sniff its type: not a model call
    "request": {"body": None, "headers": {}, "method": "GET", "uri": "https://example.com/cat.png"},
    "response": {
        "status": {"code": 200, "message": "OK"},
        "headers": {"Content-Type": ["image/png"]},
        "body": {"string": "png"},
    },
}


def cassette(path: Path, content: str, reply: str, *extra: dict) -> Path:
    """A vcrpy cassette of one chat call (and `extra` interactions), as pytest-recording writes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    interactions = [chat(content, reply), *extra]
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}), encoding="utf-8")
    return path


def import_cassette(suite: pytest.Pytester, name: str, path: str) -> None:
    """`attest fixture import --name NAME PATH`, as a user runs it from the project."""
    argv = [sys.executable, "-m", "attest_toolkit.cli", "fixture", "import", "--name", name, path]
    done = subprocess.run(argv, cwd=suite.path, env=clean_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_layout_names_are_valid_fixture_names_that_keep_directories_apart() -> None:
    assert layout_name(Path("tests/models/cassettes/test_openai/test_chat[gpt-4o].yaml")) == (
        "tests.models.test_openai.test_chat-gpt-4o"
    )
    assert layout_name(Path("tests/providers/cassettes/test_openai/test_chat[gpt-4o].yaml")) != (
        layout_name(Path("tests/models/cassettes/test_openai/test_chat[gpt-4o].yaml"))
    )
    assert layout_name(Path("tests/cassettes/test_a/TestChat.test_x[a b-<c>].json")) == (
        "tests.test_a.TestChat.test_x-a-b--c"
    )
    long = layout_name(Path("tests/cassettes/test_a/" + "x" * 400 + ".yaml"))
    assert len(long) + len(fx.SUFFIX) <= 255
    fx.check_name(long)


def test_without_pytest_recording_marked_tests_record_then_replay_offline(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(**{"tests/test_chat": TESTS})
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeUpstream([answer("Hello!"), answer("Bye!")]) as upstream:
        monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", upstream.url)
        result = suite.runpytest_subprocess("-p", "no:recording", "--record-mode=once")
        result.assert_outcomes(passed=3)
        assert len(upstream.requests) == 2
    hello = fixture_file(suite, "tests.test_chat.test_hello-hello")
    bye = fixture_file(suite, "tests.test_chat.TestChat.test_bye")
    assert f"attest record: 1 call recorded; wrote {hello}" in result.outlines
    assert f"attest record: 1 call recorded; wrote {bye}" in result.outlines
    assert sorted(p.name for p in (suite.path / FIXTURES).iterdir()) == sorted([hello.name, bye.name])
    assert fx.read_fixture(hello)["source"]["test"] == "tests/test_chat.py::test_hello[hello]"
    assert KEY not in hello.read_text()

    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ATTEST_OPENAI_UPSTREAM")
    monkeypatch.setenv("CI", "1")  # strict replay, no key: a module-level client still reaches attest
    replay = suite.runpytest_subprocess("-p", "no:recording", "--record-mode=none")
    replay.assert_outcomes(passed=3)
    assert "attest replay: 2 replayed · 0 live model calls · $0.00" in replay.outlines


def test_a_changed_request_fails_with_the_miss_and_a_marked_test_without_calls_needs_no_fixture(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(**{"tests/test_chat": INSIDE.replace("Say hello", "Say hello again")})
    suite.makepyfile(
        **{"tests/test_other": "import pytest\n\n@pytest.mark.vcr\ndef test_none():\n    pass\n"}
    )
    cassette(suite.path / "tests/cassettes/test_chat/test_hello.yaml", "Say hello", "Hello!")
    import_cassette(suite, "tests.test_chat.test_hello", "tests/cassettes/test_chat/test_hello.yaml")
    monkeypatch.setenv("CI", "1")
    result = suite.runpytest_subprocess("-p", "no:recording", "-q")
    result.assert_outcomes(passed=1, failed=1)
    (failed,) = [line for line in result.outlines if line.startswith("FAILED ")]
    assert failed.startswith(
        "FAILED tests/test_chat.py::test_hello - replay miss: messages changed: messages[0].content (hash "
    )
    assert failed.endswith("re-record with `pytest --attest-record=all tests/test_chat.py::test_hello`")
    assert not (suite.path / FIXTURES / "tests.test_other.test_none.attest.json").exists()


@pytest.mark.parametrize("opt_in", ["--attest-vcr", "ini"])
def test_with_pytest_recording_installed_the_opt_in_replays_an_imported_cassette(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, opt_in: str
) -> None:
    suite.makepyfile(**{"tests/test_chat": INSIDE})
    cassette(suite.path / "tests/cassettes/test_chat/test_hello.yaml", "Say another thing", "Hello!")
    cassette(suite.path / "elsewhere/test_hello.yaml", "Say hello", "Hello!")
    import_cassette(suite, "tests.test_chat.test_hello", "elsewhere/test_hello.yaml")
    monkeypatch.setenv("CI", "1")
    args = ["--attest-vcr"] if opt_in == "--attest-vcr" else []
    if opt_in == "ini":
        suite.makeini("[pytest]\nattest_vcr = true\n")
    result = suite.runpytest_subprocess(*args)
    result.assert_outcomes(passed=1)  # pytest-recording's cassette, which no longer matches, is not read
    assert "attest replay: 1 replayed · 0 live model calls · $0.00" in result.outlines

    if opt_in == "ini":
        return
    vcrpy = suite.runpytest_subprocess()  # without the opt-in, pytest-recording plays its cassette
    vcrpy.assert_outcomes(failed=1)
    assert not any("attest replay:" in line for line in vcrpy.outlines)


def test_with_pytest_recording_serving_the_marker_a_failing_test_with_an_attest_fixture_says_to_opt_in(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(**{"tests/test_chat": INSIDE})
    cassette(suite.path / "elsewhere/test_hello.yaml", "Say hello", "Hello!")
    import_cassette(suite, "tests.test_chat.test_hello", "elsewhere/test_hello.yaml")
    monkeypatch.setenv("CI", "true")  # and no key: the SDK refuses before pytest-recording sees a call
    result = suite.runpytest_subprocess("-q")
    result.assert_outcomes(failed=1)
    advice = (
        f"attest: this test's recordings are the attest fixture {FIXTURES.as_posix()}/"
        "tests.test_chat.test_hello.attest.json, but pytest-recording serves the vcr marker in this run, "
        "so attest did not replay it: pass --attest-vcr (or set attest_vcr = true in the pytest ini) to "
        "replay it with attest (tests/test_chat.py::test_hello)"
    )
    assert advice in result.outlines
    followed = suite.runpytest_subprocess("-q", "--attest-vcr")
    followed.assert_outcomes(passed=1)


@pytest.mark.parametrize("blocking", [["--block-network"], ["-m", "block_network"]])
def test_the_opt_in_turns_pytest_recordings_network_blocking_off_too_and_a_miss_is_attests(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, blocking: list[str]
) -> None:
    marked = "@pytest.mark.block_network\n@pytest.mark.vcr" if "-m" in blocking else "@pytest.mark.vcr"
    changed = INSIDE.replace("Say hello", "Say hello again").replace("@pytest.mark.vcr", marked)
    suite.makepyfile(**{"tests/test_chat": changed})
    cassette(suite.path / "tests/cassettes/test_chat/test_hello.yaml", "Say hello", "Hello!")
    import_cassette(suite, "tests.test_chat.test_hello", "tests/cassettes/test_chat/test_hello.yaml")
    monkeypatch.setenv("CI", "1")
    args = ["--block-network"] if "-m" not in blocking else []
    result = suite.runpytest_subprocess("--attest-vcr", *args, "-q")  # pytest-recording is installed
    result.assert_outcomes(failed=1)
    (failed,) = [line for line in result.outlines if line.startswith("FAILED ")]
    assert failed.startswith("FAILED tests/test_chat.py::test_hello - replay miss: messages changed: ")
    assert "Network is disabled" not in result.stdout.str()
    assert "attest replay: 0 replayed · 0 live model calls · $0.00 · 1 missed · 1 failed" in result.outlines


@contextmanager
def keyed_ci_run(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeUpstream]:
    """The suite with a test that calls, a key, CI set, and a provider on loopback that would answer."""
    suite.makepyfile(**{"tests/test_chat": INSIDE})
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("CI", "1")
    with FakeUpstream([answer("Hello!")]) as upstream:
        monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", upstream.url)
        yield upstream


def test_a_marked_test_without_a_fixture_that_calls_fails_with_a_miss_never_live(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with keyed_ci_run(suite, monkeypatch) as upstream:
        result = suite.runpytest_subprocess("-p", "no:recording", "-q")
        result.assert_outcomes(failed=1)
        assert upstream.requests == []
    (failed,) = [line for line in result.outlines if line.startswith("FAILED ")]
    assert failed.startswith("FAILED tests/test_chat.py::test_hello - replay miss: ")
    assert failed.endswith("re-record with `pytest --attest-record=all tests/test_chat.py::test_hello`")


def test_marker_cassette_names_join_the_replay(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(
        **{"tests/test_chat": INSIDE.replace("@pytest.mark.vcr", '@pytest.mark.vcr("shared.yaml")')}
    )
    cassette(suite.path / "tests/cassettes/test_chat/shared.yaml", "Say hello", "Hello!")
    import_cassette(suite, "tests.test_chat.shared", "tests/cassettes/test_chat/shared.yaml")
    monkeypatch.setenv("CI", "1")
    result = suite.runpytest_subprocess("-p", "no:recording")
    result.assert_outcomes(passed=1)
    assert "attest replay: 1 replayed · 0 live model calls · $0.00" in result.outlines


def test_each_vcr_config_key_not_honoured_is_named_once(suite: pytest.Pytester) -> None:
    suite.makeconftest(
        """
import pytest

@pytest.fixture
def vcr_config():
    return {
        "filter_headers": ["authorization"],
        "ignore_localhost": True,
        "decode_compressed_response": True,
        "match_on": ["method", "uri"],
        "before_record_request": lambda request: request,
    }

def pytest_recording_configure(config, vcr):
    raise AssertionError("attest does not build a VCR")
"""
    )
    suite.makepyfile(
        **{
            "tests/test_two": "import pytest\n\n@pytest.mark.vcr\ndef test_a():\n    pass\n\n"
            "@pytest.mark.vcr\ndef test_b():\n    pass\n"
        }
    )
    result = suite.runpytest_subprocess("-p", "no:recording")
    result.assert_outcomes(passed=2)
    named = [line for line in result.outlines if line.startswith("attest vcr: vcr_config key")]
    assert len(named) == 2
    assert named[0].startswith(
        "attest vcr: vcr_config key 'match_on' not honoured: attest matches the request body"
    )
    assert (
        named[1] == "attest vcr: vcr_config key 'before_record_request' not honoured: not supported by attest"
    )


def test_block_network_refuses_all_but_loopback_while_a_test_replays(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        **{
            "tests/test_net": """
import socket
import pytest

def test_outside():
    with pytest.raises(OSError, match="attest vcr: --block-network: connection to 192.0.2.1 blocked"):
        socket.create_connection(("192.0.2.1", 9), timeout=1)

def test_loopback():
    server = socket.create_server(("127.0.0.1", 0))
    with socket.create_connection(server.getsockname(), timeout=5):
        pass
    server.close()
"""
        }
    )
    result = suite.runpytest_subprocess("-p", "no:recording", "--block-network")
    result.assert_outcomes(passed=2)


def test_record_mode_on_the_command_line_records_in_ci_and_from_addopts_does_not(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with keyed_ci_run(suite, monkeypatch) as upstream:
        monkeypatch.setenv("PYTEST_ADDOPTS", "--record-mode=once")
        refused = suite.runpytest_subprocess("-p", "no:recording")
        refused.assert_outcomes(failed=1)
        assert len(upstream.requests) == 0
        monkeypatch.delenv("PYTEST_ADDOPTS")
        recorded = suite.runpytest_subprocess("-p", "no:recording", "--record-mode=new_episodes")
        recorded.assert_outcomes(passed=1)
        assert len(upstream.requests) == 1
    assert fixture_file(suite, "tests.test_chat.test_hello").exists()


def test_help_lists_pytest_recordings_options_only_when_it_is_not_loaded(tmp_path: Path) -> None:
    def options(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", *args, "--help"],
            cwd=tmp_path,
            env=clean_env(),
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    assert "--attest-vcr" in options()
    assert "As --attest-record." in options("-p", "no:recording")
    assert "As --attest-record." not in options()


def attest_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "attest_toolkit.cli", *args]
    return subprocess.run(argv, cwd=cwd, env=clean_env(CI="1"), capture_output=True, text=True, timeout=300)


def test_a_tree_of_cassettes_imports_in_one_go_and_the_unedited_suite_replays_it(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    tests = suite.path / "tests"
    suite.makepyfile(
        **{
            "tests/models/test_chat": INSIDE.replace(
                "@pytest.mark.vcr", "@pytest.mark.vcr\n@pytest.mark.parametrize('n', [1])"
            ).replace("def test_hello():", "def test_hello(n):")
        }
    )
    cassette(tests / "models/cassettes/test_chat/test_hello[1].yaml", "Say hello", "Hello!", IMAGE)
    cassette(tests / "models/cassettes/test_chat/test_other.yaml", "Say other", "Other!")
    only_image = tests / "cassettes/test_img/test_fetch.yaml"
    only_image.parent.mkdir(parents=True)
    only_image.write_text(yaml.safe_dump({"interactions": [IMAGE], "version": 1}), encoding="utf-8")
    (tests / "cassettes/test_img/broken.yaml").write_text("interactions:\n- request: [\n", encoding="utf-8")
    (tests / "data").mkdir()
    (tests / "data/config.json").write_text("{}", encoding="utf-8")  # not in a cassettes directory

    done = attest_cli(suite.path, "fixture", "import", "--tree", "tests")
    assert done.returncode == 0, done.stderr
    assert (
        done.stderr.splitlines()[-1]
        == "attest fixture import: 3 imported, 1 skipped, of 4 cassettes under tests"
    )
    broken, *rest = done.stdout.splitlines()
    assert broken.startswith(
        "skipped   tests/cassettes/test_img/broken.yaml: not valid YAML (line 3, column 1: "
    )
    assert rest == [
        "imported  tests/cassettes/test_img/test_fetch.yaml → tests.test_img.test_fetch "
        "(0 interactions; not a model provider, kept as plain HTTP: example.com (1))",
        "imported  tests/models/cassettes/test_chat/test_hello[1].yaml → tests.models.test_chat.test_hello-1 "
        "(1 interaction; not a model provider, kept as plain HTTP: example.com (1))",
        "imported  tests/models/cassettes/test_chat/test_other.yaml → tests.models.test_chat.test_other "
        "(1 interaction)",
    ]
    hello = fx.read_fixture(fixture_file(suite, "tests.models.test_chat.test_hello-1"))
    assert [i["provider"] for i in fx.model_interactions(hello)] == ["openai"]
    assert [i["url"] for i in fx.plain_interactions(hello)] == ["https://example.com/cat.png"]

    again = attest_cli(suite.path, "fixture", "import", "--tree", "tests")
    assert "fixture exists; pass --force to overwrite it" in again.stdout
    one_module = attest_cli(
        suite.path, "fixture", "import", "--tree", "tests/models/cassettes/test_chat", "--force"
    )
    assert one_module.stderr.splitlines()[-1] == (
        "attest fixture import: 2 imported, 0 skipped, of 2 cassettes under tests/models/cassettes/test_chat"
    )

    monkeypatch.setenv("CI", "1")
    result = suite.runpytest_subprocess("-p", "no:recording")
    result.assert_outcomes(passed=1)
    assert "attest replay: 1 replayed · 0 live model calls · $0.00" in result.outlines


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--tree", "tests", "--name", "x"], "--tree names each fixture after its cassette: drop --name"),
        (
            ["--name", "x"],
            "name the fixture (--name) and its cassettes, or import a directory with --tree DIR",
        ),
        (["--tree", "nowhere"], "nowhere: not a directory of cassettes"),
    ],
)
def test_tree_usage_errors_are_one_line_exit_3(tmp_path: Path, args: list[str], problem: str) -> None:
    (tmp_path / "tests").mkdir()
    done = attest_cli(tmp_path, "fixture", "import", *args)
    assert done.returncode == 3
    assert done.stderr.strip() == f"attest: {problem}" or done.stderr.strip().startswith(f"attest: {problem}")
    assert "Traceback" not in done.stderr


# As most suites build clients: the SDK's default base URL, which the test (or a snapshot) checks.
DEFAULT_URLS = """
import asyncio
import anthropic
import openai
import pytest

@pytest.mark.vcr
def test_openai():
    client = openai.OpenAI(max_retries=0)
    assert client.base_url == "https://api.openai.com/v1/"
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Say hello"}])
    assert reply.choices[0].message.content == "Hello!"

@pytest.mark.vcr
def test_async_openai():
    async def ask():
        client = openai.AsyncOpenAI(max_retries=0)
        assert client.base_url == "https://api.openai.com/v1/"
        return await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Say hello"}]
        )
    assert asyncio.run(ask()).choices[0].message.content == "Hello!"

@pytest.mark.vcr
def test_anthropic():
    client = anthropic.Anthropic(max_retries=0)
    assert str(client.base_url) == "https://api.anthropic.com"
    reply = client.messages.create(
        model="claude-haiku-4-5", max_tokens=64, messages=[{"role": "user", "content": "Say hi"}]
    )
    assert reply.content[0].text == "Hi!"
"""


def messages_call(content: str, reply: str) -> dict:
    """One Anthropic messages call as vcrpy records it."""
    request = {
        "max_tokens": 64,
        "messages": [{"role": "user", "content": content}],
        "model": "claude-haiku-4-5",
    }
    return {
        "request": {
            "body": json.dumps(request),
            "headers": {"x-api-key": [KEY]},
            "method": "POST",
            "uri": "https://api.anthropic.com/v1/messages",
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": ["application/json"]},
            "body": {"string": json.dumps(message_response(reply))},
        },
    }


def default_url_suite(suite: pytest.Pytester) -> None:
    """The suite above and its three cassettes, imported as the README says."""
    suite.makepyfile(**{"tests/test_urls": DEFAULT_URLS})
    where = suite.path / "tests/cassettes/test_urls"
    cassette(where / "test_openai.yaml", "Say hello", "Hello!")
    cassette(where / "test_async_openai.yaml", "Say hello", "Hello!")
    where.joinpath("test_anthropic.yaml").write_text(
        yaml.safe_dump({"interactions": [messages_call("Say hi", "Hi!")], "version": 1}), encoding="utf-8"
    )
    done = attest_cli(suite.path, "fixture", "import", "--tree", "tests")
    assert done.returncode == 0, done.stderr


def test_clients_keep_the_providers_urls_and_replay_strict_without_a_key(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    default_url_suite(suite)
    monkeypatch.setenv("CI", "1")
    result = suite.runpytest_subprocess("-p", "no:recording")
    result.assert_outcomes(passed=3)
    assert "attest replay: 3 replayed · 0 live model calls · $0.00" in result.outlines


def test_a_changed_request_to_the_providers_url_fails_with_the_one_line_miss(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    default_url_suite(suite)
    (suite.path / "tests/test_urls.py").write_text(DEFAULT_URLS.replace('"Say hi"', '"Say hi again"'))
    monkeypatch.setenv("CI", "1")
    result = suite.runpytest_subprocess("-p", "no:recording", "-q", "-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=1)
    (failed,) = [line for line in result.outlines if line.startswith("FAILED ")]
    assert failed.startswith(
        "FAILED tests/test_urls.py::test_anthropic - replay miss: messages changed: messages[0].content (hash "
    )
    assert failed.endswith("re-record with `pytest --attest-record=all tests/test_urls.py::test_anthropic`")


def test_record_mode_records_calls_to_the_providers_urls(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(
        **{
            "tests/test_chat": INSIDE.replace(
                "max_retries=0)", 'max_retries=0)\n    assert client.base_url == "https://api.openai.com/v1/"'
            )
        }
    )
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeUpstream([answer("Hello!")]) as upstream:
        monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", upstream.url)
        result = suite.runpytest_subprocess("-p", "no:recording", "--record-mode=once")
        result.assert_outcomes(passed=1)
        assert len(upstream.requests) == 1
    written = fixture_file(suite, "tests.test_chat.test_hello")
    assert f"attest record: 1 call recorded; wrote {written}" in result.outlines
    assert KEY not in written.read_text()

    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ATTEST_OPENAI_UPSTREAM")
    monkeypatch.setenv("CI", "1")
    suite.runpytest_subprocess("-p", "no:recording").assert_outcomes(passed=1)


# boto3 sends over urllib3 and google-genai's async client over aiohttp: the lane sees neither, so a
# vcr test's SDK of these providers must stay pointed at attest, never at the real host.
POINTED = """
import os
import pytest

@pytest.mark.vcr
def test_variables():
    for var in ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL"):
        assert os.environ[var].startswith("http://127.0.0.1:"), var
    assert "OPENAI_BASE_URL" not in os.environ
    assert os.environ["ANTHROPIC_BASE_URL"] == "https://anthropic.example"
"""


@pytest.mark.parametrize("mode", ["none", "once"])
def test_sdks_the_lane_does_not_see_stay_pointed_at_attest(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    suite.makepyfile(**{"tests/test_pointed": POINTED})
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://anthropic.example")
    for var in ("OPENAI_BASE_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    result = suite.runpytest_subprocess("-p", "no:recording", f"--record-mode={mode}")
    result.assert_outcomes(passed=1)
