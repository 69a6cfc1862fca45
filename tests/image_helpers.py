"""The agent image the image-replay tests share: built once per session from a local base image
(nothing is pulled), and its fixture recorded once with `attest capture --image` against a scripted
provider and a tool API. Import the fixtures into a test module to use them."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
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


NEEDS_PODMAN = pytest.mark.skipif(podman_missing() is not None, reason=str(podman_missing()))


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
def agent_image(podman_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> str:
    """The agent's image, from cached layers after the first build. xdist workers take turns (a lock
    in the run's shared temporary directory), so the base image is made once, not once per worker."""
    lock = tmp_path_factory.getbasetemp().parent / "attest-image-build.lock"
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        return _build_agent_image(podman_env)


def _build_agent_image(podman_env: dict[str, str]) -> str:
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
