"""Fixtures in an object store, against a real S3-compatible server with real SigV4 keys
(tests/s3_server.py): `attest fixture download` of a ctxmesh run, written as ctxmesh's recorders write
it, and `attest fixture push|pull` with the lock file."""

from __future__ import annotations

import base64
import hashlib
import json
import stat
from pathlib import Path

import pytest
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.fixtures import document as fx
from attest_toolkit.fixtures.remote.backend import Backend, StoreError
from attest_toolkit.fixtures.remote.pinned import fetch, object_key
from conftest import chat_request, chat_response, exchange, git, write_fixture
from report_factory import make_report
from s3_server import S3
from test_ctxmesh import recorded_run
from test_tools import FORECAST_LINE, REPLAYED, replay
from tool_helpers import ANSWER, agent

pytest_plugins = ["s3_server"]  # the s3 and bucket fixtures

RUN = {"schemaVersion": 1, "agent": "team/weather", "recordedAt": "2026-05-01T10:00:00Z"}


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def model_item(index: int, prompt: str, answer: str) -> dict:
    request = chat_request(prompt)
    return {
        "index": index,
        "requestHash": hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest(),
        "request": request,
        "responseBytes": b64(json.dumps(chat_response(answer)).encode()),
        "contentType": "application/json",
        "statusCode": 200,
    }


def tool_item(call: int, city: str) -> dict:
    message = {
        "jsonrpc": "2.0",
        "id": call,
        "method": "tools/call",
        "params": {"name": "get_weather", "arguments": {"city": city}},
    }
    reply = {
        "jsonrpc": "2.0",
        "id": call,
        "result": {"content": [{"type": "text", "text": f"{city}: sunny"}]},
    }
    return {
        "callId": str(call),
        "toolName": "get_weather",
        "argsHash": hashlib.sha256(json.dumps(message, sort_keys=True).encode()).hexdigest(),
        "request": message,
        "responseBytes": b64(json.dumps(reply).encode()),
        "contentType": "application/json",
    }


def put_blob(s3: S3, bucket: str, run_id: str, blob: dict) -> str:
    """As ctxmesh's FixtureStore.Put: the compact fixture under fixtures/<run id>/<sha256>.json."""
    raw = json.dumps({**RUN, "runId": run_id, **blob}, separators=(",", ":")).encode()
    key = f"fixtures/{run_id}/{hashlib.sha256(raw).hexdigest()}.json"
    s3.client().put_object(Bucket=bucket, Key=key, Body=raw)
    return key


def record_run(s3: S3, bucket: str, run_id: str, model: list[dict], tools: list[dict]) -> None:
    """The gateway and the sidecar each re-put the whole growing run after every call."""
    for n in range(len(model)):
        put_blob(s3, bucket, run_id, {"model": model[: n + 1], "tools": []})
    for n in range(len(tools)):
        put_blob(s3, bucket, run_id, {"model": [], "tools": tools[: n + 1]})


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def answers(doc: dict) -> list[str]:
    return [
        i["response"]["body"]["json"]["choices"][0]["message"]["content"] for i in doc["channels"]["model"]
    ]


def cities(doc: dict) -> list[str]:
    return [i["request"]["json"]["params"]["arguments"]["city"] for i in doc["channels"]["tool"]]


MODEL = [
    model_item(0, "Weather in Oslo?", "Checking."),
    model_item(1, "And now?", "Sunny."),
    model_item(2, "Tomorrow?", "Rain."),
]
TOOLS = [tool_item(1, "Oslo"), tool_item(2, "Bergen")]


# --- attest fixture download ------------------------------------------------------------------------


def test_a_run_downloads_as_one_fixture_with_both_channels_in_recorded_order(tmp_path, s3, bucket, attest):
    record_run(s3, bucket, "run-42", MODEL, TOOLS)  # 5 snapshots, listed in digest order

    done = attest(s3.variables(bucket), "fixture", "download", "run-42", "--mcp-env", "WEATHER_MCP_URL")

    assert done.returncode == 0, done.stderr
    path = tmp_path / "tests" / "attest" / "fixtures" / "run-42.attest.json"
    assert done.stdout.splitlines() == [
        "attest fixture download: run run-42: 3 model call(s), 2 tool message(s) from 5 blob(s)",
        f"wrote {path.relative_to(tmp_path)} (mode 0600; it holds full prompts and tool results: do not commit it)",
        "replay: attest replay --name run-42 -- <your agent command>",
    ]
    doc = load(path)
    # The growing snapshots are not concatenated: each call once, in the order it was made.
    assert answers(doc) == ["Checking.", "Sunny.", "Rain."]
    assert cities(doc) == ["Oslo", "Bergen"]
    assert doc["tools"] == {"weather": {"transport": "http", "env": "WEATHER_MCP_URL"}}
    assert doc["source"]["imported_from"] == "ctxmesh run run-42"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    verified = attest({}, "fixture", "verify", str(path))
    assert verified.returncode == 0, verified.stderr


def test_concurrent_snapshots_that_are_no_prefix_of_each_other_keep_every_call_once(
    tmp_path, s3, bucket, attest
):
    put_blob(s3, bucket, "run-7", {"model": MODEL[:2], "tools": TOOLS[:1]})
    put_blob(s3, bucket, "run-7", {"model": MODEL[:1], "tools": TOOLS})
    put_blob(s3, bucket, "run-7", {"model": MODEL, "tools": []})

    done = attest(s3.variables(bucket), "fixture", "download", "run-7", "-o", "run.attest.json")

    assert done.returncode == 0, done.stderr
    doc = load(tmp_path / "run.attest.json")
    assert answers(doc) == ["Checking.", "Sunny.", "Rain."] and cities(doc) == ["Oslo", "Bergen"]
    assert doc["name"] == "run"
    assert (
        done.stdout.splitlines()[-1]
        == "replay: attest replay --fixture run.attest.json -- <your agent command>"
    )


def test_the_run_prefix_is_exact_run_1_never_picks_up_run_12(tmp_path, s3, bucket, attest):
    record_run(s3, bucket, "run-1", MODEL[:1], [])
    record_run(s3, bucket, "run-12", MODEL[1:], TOOLS)

    done = attest(s3.variables(bucket), "fixture", "download", "run-1", "--fixtures-dir", "fx")

    assert done.returncode == 0, done.stderr
    doc = load(tmp_path / "fx" / "run-1.attest.json")
    assert answers(doc) == ["Checking."] and doc["channels"].get("tool", []) == []
    assert "from 1 blob(s)" in done.stdout


def test_a_credential_in_any_blob_refuses_the_run_and_writes_nothing(tmp_path, s3, bucket, attest):
    record_run(s3, bucket, "run-9", MODEL[:1], [])
    leak = {
        **MODEL[1],
        "responseBytes": b64(b"HTTP/1.1 200 OK\r\nAuthorization: Bearer s3cr3tT0ken99\r\n\r\n{}"),
    }
    key = put_blob(s3, bucket, "run-9", {"model": [MODEL[0], leak], "tools": []})

    done = attest(s3.variables(bucket), "fixture", "download", "run-9")

    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert key in line and "credential found at model[1].responseBytes (Authorization header)" in line
    assert "s3cr3tT0ken99" not in done.stderr + done.stdout
    assert not (tmp_path / "tests").exists()


def test_a_run_with_no_blobs_exits_2_and_writes_nothing(tmp_path, s3, bucket, attest):
    record_run(s3, bucket, "run-10", MODEL, [])

    done = attest(s3.variables(bucket), "fixture", "download", "run-1")

    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert "no fixture recorded for run run-1" in line
    assert not (tmp_path / "tests").exists()


def test_an_invalid_blob_exits_2(tmp_path, s3, bucket, attest):
    put_blob(s3, bucket, "run-3", {"schemaVersion": 9, "model": MODEL, "tools": []})

    done = attest(s3.variables(bucket), "fixture", "download", "run-3")

    assert done.returncode == 2 and "schemaVersion 9 is newer than this importer reads (1)" in done.stderr
    assert not (tmp_path / "tests").exists()


@pytest.mark.parametrize(
    ("args", "unset", "said"),
    [
        (["run-1"], "OBJECT_STORE_ADDR", "no object store configured: set OBJECT_STORE_ADDR"),
        (["  "], None, "the run id is blank"),
        ([], None, "the run id is blank"),
    ],
)
def test_usage_problems_exit_1(tmp_path, s3, bucket, attest, args, unset, said):
    env = s3.variables(bucket)
    if unset:
        del env[unset]

    done = attest(env, "fixture", "download", *args)

    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert said in line


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            {"OBJECT_STORE_SECRET_KEY": "w" * 40},
            "the store refused the signature: check OBJECT_STORE_SECRET_KEY",
        ),
        (
            {"OBJECT_STORE_ACCESS_KEY": "AKIAIOSFODNN7NOTREAL"},
            "the store does not know OBJECT_STORE_ACCESS_KEY",
        ),
    ],
)
def test_wrong_keys_exit_2_with_one_line_that_shows_no_key(tmp_path, s3, bucket, attest, change, said):
    record_run(s3, bucket, "run-5", MODEL, [])

    done = attest({**s3.variables(bucket), **change}, "fixture", "download", "run-5")

    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert said in line and f"{s3.addr}/{bucket}" in line
    assert s3.secret_key not in line and "w" * 40 not in line
    assert not (tmp_path / "tests").exists()


def test_an_existing_file_is_replaced_at_mode_0600(tmp_path, s3, bucket, attest):
    record_run(s3, bucket, "run-6", MODEL[:1], [])
    target = tmp_path / "run-6.attest.json"
    target.write_text("old")
    target.chmod(0o644)

    done = attest(s3.variables(bucket), "fixture", "download", "run-6", "-o", str(target))

    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and answers(load(target)) == ["Checking."]


# --- attest fixture push / pull --------------------------------------------------------------------

FIXTURES = Path("tests/attest/fixtures")


def pinned_fixture(tmp_path: Path, name: str, answer: str) -> dict:
    write_fixture(tmp_path / FIXTURES, name, [exchange(chat_request(f"Say {name}"), chat_response(answer))])
    return load(tmp_path / FIXTURES / f"{name}.attest.json")


def object_keys(s3: S3, bucket: str) -> list[str]:
    return sorted(o["Key"] for o in s3.client().list_objects_v2(Bucket=bucket).get("Contents", []))


def test_push_pins_by_digest_and_pull_brings_the_same_fixtures_back(tmp_path, s3, bucket, attest):
    alpha, beta = pinned_fixture(tmp_path, "alpha", "A!"), pinned_fixture(tmp_path, "beta", "B!")

    done = attest(s3.variables(bucket), "fixture", "push", "beta", "alpha")

    assert done.returncode == 0, done.stderr
    lock = tmp_path / "tests" / "attest" / "fixtures.lock"
    assert lock.read_text().splitlines()[1:] == [f"alpha {alpha['digest']}", f"beta {beta['digest']}"]
    assert object_keys(s3, bucket) == [
        f"attest/{doc['name']}/{doc['digest'].removeprefix('sha256:')}.attest.json" for doc in (alpha, beta)
    ]
    again = attest(s3.variables(bucket), "fixture", "push", "alpha")
    assert again.stdout.splitlines()[0] == f"pushed alpha {alpha['digest']} (already in the store)"

    for path in (tmp_path / FIXTURES).iterdir():
        path.unlink()
    done = attest(s3.variables(bucket), "fixture", "pull")

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("attest fixture pull: 2 fetched, 0 up to date")
    for doc in (alpha, beta):
        path = tmp_path / FIXTURES / f"{doc['name']}.attest.json"
        assert load(path) == doc and stat.S_IMODE(path.stat().st_mode) == 0o600

    # Present and matching: not downloaded again, so an emptied bucket does not matter.
    s3.client().delete_objects(
        Bucket=bucket, Delete={"Objects": [{"Key": k} for k in object_keys(s3, bucket)]}
    )
    done = attest(s3.variables(bucket), "fixture", "pull")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("attest fixture pull: 0 fetched, 2 up to date")


def test_a_tampered_object_is_refused_by_its_digest_and_nothing_is_written(tmp_path, s3, bucket, attest):
    pinned_fixture(tmp_path, "alpha", "The refund is approved.")
    assert attest(s3.variables(bucket), "fixture", "push", "alpha").returncode == 0
    [key] = object_keys(s3, bucket)
    stored = s3.client().get_object(Bucket=bucket, Key=key)["Body"].read().decode()
    s3.client().put_object(Bucket=bucket, Key=key, Body=stored.replace("approved", "denied").encode())
    (tmp_path / FIXTURES / "alpha.attest.json").unlink()

    done = attest(s3.variables(bucket), "fixture", "pull", "alpha")

    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert key in line and "digest mismatch" in line
    assert not (tmp_path / FIXTURES / "alpha.attest.json").exists()


def test_a_local_fixture_that_differs_from_its_pin_is_replaced(tmp_path, s3, bucket, attest):
    pinned = pinned_fixture(tmp_path, "alpha", "Pinned.")
    assert attest(s3.variables(bucket), "fixture", "push", "alpha").returncode == 0
    pinned_fixture(tmp_path, "alpha", "Edited here.")

    done = attest(s3.variables(bucket), "fixture", "pull")

    assert done.returncode == 0, done.stderr
    assert load(tmp_path / FIXTURES / "alpha.attest.json") == pinned


@pytest.mark.parametrize(
    ("argv", "store", "said"),
    [
        (["pull", "gamma"], True, "not pinned: gamma (push it first)"),
        (["pull"], False, "no object store configured"),
        (["push", "missing"], True, "no such fixture"),
        (["push", "../x"], True, "fixture name '../x' must be"),
    ],
)
def test_push_and_pull_problems_are_one_line(tmp_path, s3, bucket, attest, argv, store, said):
    pinned_fixture(tmp_path, "alpha", "A!")
    assert attest(s3.variables(bucket), "fixture", "push", "alpha").returncode == 0

    done = attest(s3.variables(bucket) if store else {}, "fixture", *argv)

    assert done.returncode == (2 if "no such fixture" in said else 1)
    [line] = done.stderr.splitlines()
    assert said in line


# --- a pull request that re-pins a fixture ---------------------------------------------------------

TEST_FOR = 'def test_{name}(attest_replay):\n    with attest_replay("{name}"):\n        pass\n'


def repinned_repo(tmp_path: Path, s3: S3, bucket: str, attest) -> None:
    """main pins alpha and beta (the fixtures git-ignored); the branch re-records and re-pins alpha."""
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / ".gitignore").write_text("tests/attest/fixtures/\n")
    for name in ("alpha", "beta"):
        (tmp_path / "tests").mkdir(exist_ok=True)
        (tmp_path / "tests" / f"test_{name}.py").write_text(TEST_FOR.format(name=name))
        pinned_fixture(tmp_path, name, f"{name} v1")
    assert attest(s3.variables(bucket), "fixture", "push", "alpha", "beta").returncode == 0
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "pin alpha and beta")
    git(tmp_path, "checkout", "-q", "-b", "re-record")
    pinned_fixture(tmp_path, "alpha", "alpha v2")
    assert attest(s3.variables(bucket), "fixture", "push", "alpha").returncode == 0
    git(tmp_path, "commit", "-q", "-am", "re-pin alpha")
    assert git(tmp_path, "diff", "--name-only", "main").split() == ["tests/attest/fixtures.lock"]


def test_a_changed_lock_line_selects_the_tests_of_that_fixture(tmp_path, s3, bucket, attest):
    repinned_repo(tmp_path, s3, bucket, attest)

    done = attest({}, "select", "--base", "main", "--head", "HEAD", "--format", "json")

    assert done.returncode == 0, done.stderr
    selection = json.loads(done.stdout)
    assert selection["tests"] == ["tests/test_alpha.py::test_alpha"]
    assert selection["fixtures"] == ["tests/attest/fixtures/alpha.attest.json"]


def test_the_re_recorded_table_compares_pinned_fixtures_through_the_store(tmp_path, s3, bucket, attest):
    repinned_repo(tmp_path, s3, bucket, attest)
    (tmp_path / "report.json").write_text(json.dumps(make_report()))
    args = ["report", "summary", "--report", "report.json", "--base-ref", "main", "--format", "text"]

    done = attest(s3.variables(bucket), *args)

    assert done.returncode == 0, done.stderr
    table = done.stdout[done.stdout.index("re-recorded fixtures (1):") :].splitlines()
    assert table[1].split() == ["alpha", "#1", "POST", "/v1/chat/completions", "changed", "—", "changed"]

    done = attest({}, *args)  # no store: the pin moved, the calls cannot be compared

    assert done.returncode == 0, done.stderr
    [row] = done.stdout[done.stdout.index("re-recorded fixtures (1):") :].splitlines()[1:]
    assert row.split()[:3] == ["alpha", "—", "pin"] and "calls not compared: no object store" in row


def test_a_downloaded_run_replays_both_channels_end_to_end(tmp_path, s3, bucket, attest):
    model, tools = recorded_run(tmp_path)  # a real run of the MCP agent, as ctxmesh's recorders store it
    record_run(s3, bucket, "run-42", model, tools)

    done = attest(
        s3.variables(bucket),
        *("fixture", "download", "run-42", "--name", "weather", "--fixtures-dir", "fixtures"),
        *("--mcp-env", "WEATHER_MCP_URL"),
    )

    assert done.returncode == 0, done.stderr
    hint = done.stdout.splitlines()[-1]
    assert hint == "replay: attest replay --name weather --fixtures-dir fixtures -- <your agent command>"
    replayed = replay(tmp_path, "weather", agent("--mcp-mode", "legacy"), CI="true")  # no store, no server
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.splitlines() == [FORECAST_LINE, ANSWER, REPLAYED]


class MemoryStore:
    """Another object store: one class with the `Backend` methods, nothing of the S3 client."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def keys(self, prefix: str) -> list[str]:
        return sorted(k for k in self.objects if k.startswith(prefix))

    def get(self, key: str, limit: int) -> bytes:
        if key not in self.objects:
            raise StoreError("no such object", self.url(key))
        return self.objects[key][: limit + 1]

    def exists(self, key: str) -> bool:
        return key in self.objects

    def put(self, key: str, data: bytes, content_type: str = "application/json") -> None:
        self.objects[key] = data

    def url(self, key: str) -> str:
        return f"memory://{key}"


def test_a_pinned_fixture_is_fetched_from_any_backend_and_checked_by_its_digest(tmp_path: Path) -> None:
    doc = pinned_fixture(tmp_path, "alpha", "The refund is approved.")
    store: Backend = MemoryStore()
    key = object_key("attest", "alpha", doc["digest"])
    store.put(key, fx.dumps(doc).encode("utf-8"))

    assert fetch(store, "attest", "alpha", doc["digest"], Secrets.of([])) == doc

    store.put(key, fx.dumps(doc).replace("approved", "denied").encode("utf-8"))
    with pytest.raises(StoreError, match="digest mismatch") as refused:
        fetch(store, "attest", "alpha", doc["digest"], Secrets.of([]))
    assert f"memory://{key}" in str(refused.value)
