"""`attest replay --image`: an agent's own container image replayed with podman, both channels mocked.

The agent image is built once per session from a local base image (nothing is pulled), and its
fixture is recorded once by `attest capture` from the same agent script run on the host against a
scripted provider and a tool API. Every test then runs the real CLI, which runs the real podman.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import AGENTS, REPO, chat_response, clean_env, run_cli
from tool_helpers import OrdersApi
from upstream import FakeUpstream, Reply

AGENT_DIR = AGENTS / "image"
IMAGE = "localhost/attest-test-image-agent:session"
BASE_IMAGE = os.environ.get("ATTEST_BASE_IMAGE", "localhost/attest-base:bookworm")
MAKE_BASE = REPO.parent / "shared" / "tools" / "make-base-image"
CALLER_KEY = "sk-proj-" + "Q7x" * 15
PROXY_WITH_SECRET = "http://ci-user:Pr0xyPassw0rd-Very-Secret@proxy.invalid:3128"
# This machine's podman needs runc and low rlimits (see .ci/container-smoke); a containers.conf says so.
CONTAINERS_CONF = """[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
"""
AGENT = ["python3", "/agent/agent.py"]


def podman_missing() -> str | None:
    """Why these tests cannot run here, or None: podman, root (or sudo) and a base image are needed."""
    if shutil.which("podman") is None or shutil.which("unshare") is None:
        return "podman is not installed (.ci/run installs it)"
    if os.geteuid() != 0 and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode != 0:
        return "podman image replay needs root or passwordless sudo"
    return None


pytestmark = pytest.mark.skipif(podman_missing() is not None, reason=str(podman_missing()))


@pytest.fixture(scope="session")
def podman_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    conf.write_text(CONTAINERS_CONF, encoding="utf-8")
    return clean_env(CONTAINERS_CONF=str(conf))


def podman(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="session")
def agent_image(podman_env: dict[str, str]) -> str:
    """The agent's image, from cached layers after the first build."""
    if podman(podman_env, "image", "exists", BASE_IMAGE).returncode != 0:
        assert MAKE_BASE.exists(), f"no base image {BASE_IMAGE} and no {MAKE_BASE} to build one"
        subprocess.run([str(MAKE_BASE), BASE_IMAGE], check=True, timeout=1800)
    build = podman(
        podman_env,
        "build",
        "--isolation",
        "chroot",
        "--build-arg",
        f"BASE_IMAGE={BASE_IMAGE}",
        "-t",
        IMAGE,
        str(AGENT_DIR),
    )
    assert build.returncode == 0, build.stderr
    return IMAGE


@dataclass(frozen=True)
class Capture:
    fixtures: Path
    done: subprocess.CompletedProcess[str]
    sent_keys: list[str | None]  # the Authorization each model call reached the provider with
    tool_paths: list[str]


@pytest.fixture(scope="session")
def captured(
    agent_image: str, podman_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Capture:
    """The fixture `refund`, recorded by `attest capture --image` from the agent image against a
    scripted provider and a tool API: two model calls, one tool call."""
    fixtures = tmp_path_factory.mktemp("fixtures")
    replies = [
        Reply(body=json.dumps(chat_response("I will look order 17 up.")).encode()),
        Reply(body=json.dumps(chat_response("Order 17 can be refunded: 42.00.")).encode()),
    ]
    with FakeUpstream(replies) as upstream, OrdersApi() as orders:
        env = {
            **podman_env,
            "ATTEST_OPENAI_UPSTREAM": upstream.url,
            "OPENAI_API_KEY": CALLER_KEY,
            "ORDERS_API_URL": orders.url,
        }
        args = ["capture", "--image", agent_image, "--name", "refund", "--fixtures-dir", str(fixtures)]
        done = run_cli([*args, "--tool", "ORDERS_API_URL", "--", *AGENT, "--show-env"], env=env)
    sent = [seen.headers.get("Authorization") for seen in upstream.requests]
    return Capture(fixtures, done, sent, list(orders.seen))


@pytest.fixture(scope="session")
def recorded(captured: Capture) -> Path:
    assert captured.done.returncode == 0, captured.done.stderr
    return captured.fixtures


@pytest.fixture
def replay(
    agent_image: str, recorded: Path, podman_env: dict[str, str], tmp_path: Path
) -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    def run(*args: str, engine: str = "attest") -> subprocess.CompletedProcess[str]:
        env = {**podman_env, "OPENAI_API_KEY": CALLER_KEY, "HTTPS_PROXY": PROXY_WITH_SECRET, "CI": ""}
        cli = ["replay", "--image", agent_image, "--name", "refund", "--fixtures-dir", str(recorded), *args]
        return run_cli(cli, env=env, cwd=tmp_path, program=engine)

    yield run


def test_a_clean_run_passes_with_both_channels_served_and_the_network_verified_off(
    replay, tmp_path: Path
) -> None:
    done = replay("--report", "report.json")
    assert done.returncode == 0, done.stderr
    assert "Order 17 can be refunded: 42.00." in done.stdout
    assert "2 replayed" in done.stdout and "1 tool calls replayed" in done.stdout
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    [row] = report["tests"]
    assert (
        row["outcome"] == "passed" and row["replay"]["replayed"] == 2 and row["replay"]["tool_replayed"] == 1
    )
    egress = report["summary"]["egress"]
    assert egress["mode"] == "none" and egress["isolation_verified"] is True
    assert "interfaces up: lo;" in egress["probe"]


def test_attest_engine_replays_an_image_too(replay) -> None:
    done = replay(engine="attest-engine")
    assert done.returncode == 0, done.stderr
    assert "2 replayed" in done.stdout


def test_a_changed_prompt_diverges_exit_2_naming_the_component(replay, tmp_path: Path) -> None:
    done = replay("--report", "report.json", "--", *AGENT, "--prompt", "Can order 18 be refunded?")
    assert done.returncode == 2, done.stderr
    assert "replay miss: messages changed" in done.stderr
    [row] = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["tests"]
    assert row["outcome"] == "failed" and row["replay"]["miss"]["component"] == "messages"


def test_the_agent_crashing_exits_1(replay) -> None:
    done = replay("--", *AGENT, "--crash")
    assert done.returncode == 1, done.stderr
    assert "2 replayed" in done.stdout


def test_an_unrecorded_tool_call_exits_2(replay) -> None:
    done = replay("--", *AGENT, "--extra-tool")
    assert done.returncode == 2, done.stderr
    assert "tool call unrecorded: orders.GET /orders/99" in done.stderr


def test_an_image_reaching_outside_fails_to_and_the_run_is_still_verified(replay, tmp_path: Path) -> None:
    done = replay("--report", "report.json", "--", *AGENT, "--reach-out")
    assert done.returncode == 0, done.stderr
    assert "outside address unreachable: [Errno 101] Network is unreachable" in done.stdout
    egress = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["summary"]["egress"]
    assert egress["isolation_verified"] is True


def test_the_callers_key_and_proxy_never_enter_the_container(replay) -> None:
    done = replay("--", *AGENT, "--show-env")
    assert done.returncode == 0, done.stderr
    seen = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line and line[0].isupper())
    assert CALLER_KEY not in done.stdout and "Pr0xyPassw0rd" not in done.stdout
    assert seen["OPENAI_API_KEY"] == "attest-replay-no-key"
    assert not {name for name in seen if "PROXY" in name.upper()}
    assert seen["ORDERS_API_URL"].startswith("http://127.0.0.1:")


def test_live_modes_are_refused_with_an_image(replay) -> None:
    done = replay("--mode", "auto")
    assert done.returncode == 3
    assert done.stderr.strip().splitlines() == [
        "attest: --image replays strictly (both channels from the fixture): --mode auto is refused"
    ]


def test_an_image_that_is_not_there_cannot_run_exit_3(recorded: Path, podman_env: dict[str, str]) -> None:
    cli = [
        "replay",
        "--image",
        "localhost/attest-no-such-image:none",
        "--name",
        "refund",
        "--fixtures-dir",
        str(recorded),
    ]
    done = run_cli(cli, env=podman_env)
    assert done.returncode == 3
    assert "image 'localhost/attest-no-such-image:none' not found by podman" in done.stderr
    assert "Traceback" not in done.stderr


def test_capture_records_an_image_run_with_the_callers_key_attached_outside_the_container(
    captured: Capture,
) -> None:
    assert captured.done.returncode == 0, captured.done.stderr
    assert "2 calls recorded, 1 tool message" in captured.done.stderr
    assert captured.sent_keys == [f"Bearer {CALLER_KEY}"] * 2  # the recorder attached it as it forwarded
    assert captured.tool_paths == ["/api/orders/17"]
    assert "OPENAI_API_KEY=attest-replay-no-key" in captured.done.stdout
    assert CALLER_KEY not in captured.done.stdout
    fixture = (captured.fixtures / "refund.attest.json").read_text(encoding="utf-8")
    assert CALLER_KEY not in fixture
    assert json.loads(fixture)["source"]["image"] == IMAGE


def test_an_image_fixture_is_not_refreshed_as_a_command(recorded: Path) -> None:
    done = run_cli(["capture", "--refresh", "refund", "--fixtures-dir", str(recorded), "--yes"])
    assert done.returncode == 3
    assert (
        f"was recorded from the image {IMAGE}; re-record it with `attest capture --image {IMAGE} --name refund`"
        in done.stderr
    )
