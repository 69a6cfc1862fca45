"""`attest replay --image` and `attest capture --image`: an agent's own container image under podman,
both channels mocked (the image and its fixture: image_helpers). Every test runs the real CLI, which
runs the real podman.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import run_cli
from image_helpers import AGENT, CALLER_KEY, IMAGE, NEEDS_PODMAN, PROXY_WITH_SECRET, Capture

pytest_plugins = ["image_helpers"]  # the agent image and its fixture, made once per session
pytestmark = NEEDS_PODMAN
# What a CI job's environment holds: none of it may reach the agent's container.
CALLER_SECRETS = {
    "OPENAI_API_KEY": CALLER_KEY,
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
    "OBJECT_STORE_SECRET_KEY": "store-secret-0123456789abcdef",
    "GITHUB_TOKEN": "ghs_" + "T0k3n" * 7,
}


@pytest.fixture
def replay(
    agent_image: str, recorded: Path, podman_env: dict[str, str], tmp_path: Path
) -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    def run(*args: str, engine: str = "attest") -> subprocess.CompletedProcess[str]:
        env = {**podman_env, **CALLER_SECRETS, "HTTPS_PROXY": PROXY_WITH_SECRET, "CI": ""}
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


def test_a_fault_reaches_the_images_agent_and_its_retry_gets_the_recording(replay, tmp_path: Path) -> None:
    done = replay("--fault", "status=429,retry-after=0", "--report", "report.json", "--", *AGENT, "--retry")
    assert done.returncode == 0, done.stderr
    assert "model answered 429; asking again" in done.stdout
    assert "Order 17 can be refunded: 42.00." in done.stdout
    assert "attest replay: 2 replayed · 0 live model calls · $0.00" in done.stdout
    assert "· 1 fault injected" in done.stdout
    [row] = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["tests"]
    assert row["outcome"] == "passed" and row["replay"]["misses"] == 0
    assert row["replay"]["fault_list"] == [{"call": 1, "fault": "status=429,retry-after=0", "kind": "status"}]


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
    assert not [value for value in CALLER_SECRETS.values() if value in done.stdout]
    assert "Pr0xyPassw0rd" not in done.stdout
    # What the engine hands out (Bedrock's endpoint and placeholder credentials) is not the caller's.
    ours = {
        name for name, value in seen.items() if value in ("attest-replay-no-key",) or "127.0.0.1:" in value
    }
    assert not {name for name in seen.keys() - ours if name.startswith(("AWS_", "OBJECT_STORE_", "GITHUB_"))}
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


def test_more_model_calls_than_recorded_diverge_exit_2(replay) -> None:
    done = replay("--", *AGENT, "--ask-again")
    assert done.returncode == 2, done.stderr
    assert "the agent made more model calls than the 2 recorded" in done.stderr


def test_lenient_matching_serves_a_changed_prompt_and_warns_exit_0(replay, tmp_path: Path) -> None:
    done = replay("--match", "lenient", "--report", "report.json", "--", *AGENT, "--prompt", "Order 18?")
    assert done.returncode == 0, done.stderr
    assert "replay drift: model call 1: messages changed" in done.stderr
    [row] = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["tests"]
    assert row["outcome"] == "passed" and row["replay"]["drift"] == 2


def test_a_namespace_whose_isolation_does_not_hold_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from attest_toolkit.image import netns
    from attest_toolkit.sandbox import run_probe

    if os.geteuid() != 0 or run_probe(confinement=False).network_isolated:
        pytest.skip("needs root on a machine with a network to leave")
    monkeypatch.setattr(netns, "privileged", lambda argv: ["env", "--"])  # the holder stays out here
    refused = pytest.raises(netns.NamespaceError, match="network namespace is not isolated: interfaces up: ")
    with refused, netns.LoopbackNamespace():
        pass


def test_capture_of_an_image_takes_no_refresh_options(recorded: Path) -> None:
    args = ["capture", "--image", IMAGE, "--name", "refund", "--fixtures-dir", str(recorded), "--only-misses"]
    done = run_cli(args)
    assert done.returncode == 3
    assert done.stderr.strip() == (
        "attest: --image records a new run: give --name N, without --refresh, --only-misses or --yes"
    )
