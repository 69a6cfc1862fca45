"""A newcomer's first steps, as the README's quickstart writes them: the wheel built from this checkout
in a fresh virtualenv (with only what the quickstart installs), the packed Vitest package in a fresh npm
project, then every command of the quickstart in one shell, against the scripted provider on loopback.

The commands are read from README.md between `<!-- quickstart:start -->` and `<!-- quickstart:end -->`
(its `sh` blocks, in order), so a step the README changes is the step this test runs, and a step that
fails fails the test. Only what stands for this machine is substituted: the checkout path the install
lines name becomes the wheel and the tarball built here, and the provider's URL and key are set in the
environment, as a user sets their own. Everything runs in a temporary directory outside the repository,
so no `shared/` directory beside the clone is visible.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from conftest import REPO, chat_response, clean_env
from upstream import FakeUpstream, Reply

README = REPO / "README.md"
QUICKSTART = re.compile(r"<!-- quickstart:start -->(.*?)<!-- quickstart:end -->", re.S)
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
CHECKOUT = "./attest-toolkit"  # where the install lines expect the clone
KEY = "sk-newcomer-" + "n" * 32
ANSWER = "Hello from the scripted provider!"

# The newcomer's own agent: one chat completion, sent where OPENAI_BASE_URL points (the standard library
# only, so the virtualenv holds nothing but what the quickstart installs).
AGENT = """
import json, os, urllib.request

body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello"}]}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
    data=json.dumps(body).encode(),
    headers={"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
)
with urllib.request.urlopen(request) as response:
    print(json.load(response)["choices"][0]["message"]["content"])
"""

needs_npm = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")


def quickstart_commands(text: str) -> list[str]:
    """The quickstart's shell lines, in order, comments dropped."""
    found = QUICKSTART.search(text)
    assert found is not None, "README.md has no quickstart markers"
    lines = [line for block in SH_BLOCK.findall(found.group(1)) for line in block.splitlines()]
    return [line.split("  #")[0].strip() for line in lines if line.strip() and not line.startswith("#")]


def test_the_quickstart_is_found_and_names_the_first_steps() -> None:
    commands = quickstart_commands(README.read_text(encoding="utf-8"))
    assert any(re.match(rf"pip install '?{re.escape(CHECKOUT)}", c) for c in commands)
    assert any("attest init" in c for c in commands)
    assert any(c.startswith("attest capture") for c in commands)


def build_wheel(out: Path) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [wheel] = out.glob("attest_toolkit-*.whl")
    return wheel


def pack_vitest(out: Path) -> Path:
    done = subprocess.run(
        ["npm", "pack", "--silent", "--pack-destination", str(out)],
        cwd=REPO / "sdks" / "vitest",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out / done.stdout.strip().splitlines()[-1]


def as_here(command: str, wheel: Path, tarball: Path) -> str:
    """The command with the checkout path of an install line pointing at what was built here."""
    vitest = re.compile(rf"\.?{re.escape(CHECKOUT)}/sdks/vitest")  # ./ before `cd your-project`, ../ after
    return vitest.sub(str(tarball), command).replace(CHECKOUT, str(wheel))


def newcomer_env(bin_dir: Path, upstream: str) -> dict[str, str]:
    """A shell whose python, pip, attest and pytest are the fresh virtualenv's, and whose provider is the
    scripted one; nothing of this checkout's environment (its virtualenv, CI, attest's variables)."""
    env = {k: v for k, v in clean_env().items() if not k.startswith(("ATTEST_", "PYTEST_", "VIRTUAL_ENV"))}
    env.pop("CI", None)
    env.pop("PYTHONPATH", None)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(REPO))]
    env.update(
        PATH=os.pathsep.join([str(bin_dir), *path]),
        VIRTUAL_ENV=str(bin_dir.parent),
        OPENAI_BASE_URL=upstream + "/v1",
        OPENAI_API_KEY=KEY,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    return env


@needs_npm
def test_a_newcomer_follows_the_quickstart_as_written(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "dist")
    tarball = pack_vitest(tmp_path / "dist")
    home = tmp_path / "home"  # where the newcomer's shell starts; your-project is a fresh npm project
    (home / "your-project").mkdir(parents=True)
    (home / "your-project" / "package.json").write_text(
        '{"name": "newcomer", "private": true, "type": "module"}\n'
    )
    (home / "your-project" / "agent.py").write_text(AGENT)
    venv.EnvBuilder(with_pip=True).create(tmp_path / "venv")
    commands = [as_here(c, wheel, tarball) for c in quickstart_commands(README.read_text(encoding="utf-8"))]
    script = "set -euo pipefail\n" + "\n".join(f"echo '$ {c}'\n{c}" for c in commands) + "\n"
    reply = Reply(body=json.dumps(chat_response(ANSWER)).encode())
    with FakeUpstream([reply]) as provider:
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=home,
            env=newcomer_env(tmp_path / "venv" / "bin", provider.url),
            capture_output=True,
            text=True,
            timeout=600,
        )
        seen = list(provider.requests)
    transcript = done.stdout + done.stderr
    assert done.returncode == 0, transcript[-6000:]
    assert "attest replay: 1 replayed · 0 live model calls · $0.00" in done.stdout  # the first test
    assert [r.path for r in seen] == ["/v1/chat/completions"]  # the capture reached the provider
    fixture = json.loads(
        (home / "your-project" / "tests" / "attest" / "fixtures" / "hello.attest.json").read_text()
    )
    assert ANSWER in json.dumps(fixture) and KEY not in json.dumps(fixture)
    assert (home / "your-project" / "node_modules" / "@attest-ai" / "vitest" / "package.json").is_file()
