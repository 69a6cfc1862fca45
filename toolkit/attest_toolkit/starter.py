"""`attest init`: what a project needs to start, written once and never over the user's files.

The fixtures directory, a first test that replays a bundled fixture (so `pytest` passes before
anything was captured), `.attest/policy.yml` with every default written out and explained (from
the policy schema, so it cannot drift from what the gate does), and the pull-request gate and its
fork-safe publish workflow, pinned to this version of the action.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import yaml

from . import __version__
from .errors import UsageError
from .fixtures.document import DEFAULT_DIR, atomic_write
from .fixtures.validation import load_schema
from .providers import DEFAULT, PROVIDERS, RECORDED
from .report.policy import DEFAULTS

DATA = Path(__file__).resolve().parent / "data" / "starter"
FIXTURE = "attest-hello"
TEST_FILE = Path("tests") / "test_attest_hello.py"
POLICY_FILE = Path(".attest") / "policy.yml"
WORKFLOWS = {"pr-gate.yml": "attest-pr-gate.yml", "publish.yml": "attest-publish.yml"}
# Each forge's job files: where `attest init --forge F` writes them, from which file of `workflows/`.
FORGE_FILES = {
    "github": {Path(".github") / "workflows" / target: source for source, target in WORKFLOWS.items()},
    "gitlab": {Path(".gitlab-ci.yml"): "gitlab/gitlab-ci.yml"},  # apart: workflows/*.yml are GitHub's
}
ACTION = "attest-toolkit/attest-toolkit"

# The base-URL variables the first test names: its stand-in agent's (the default provider's), and the
# first recorded providers' as the examples of what SDKs read.
_BASE_VAR = DEFAULT.base_url_vars[0]
_SDK_VARS = " and ".join(PROVIDERS[name].base_url_vars[0] for name in RECORDED[:2])

FIRST_TEST = f'''"""Your first attest test: it replays {DEFAULT_DIR.as_posix()}/{FIXTURE}.attest.json, offline.

Replace `ask` with your agent, capture a real run with `attest capture --name NAME -- python agent.py`,
and replay it the same way. Build model clients inside the `with` block: the official SDKs read
{_SDK_VARS} when a client is built.
"""

import json
import os
import urllib.request


def ask(content: str) -> str:
    """Stands in for your agent: one chat completion, sent where {_BASE_VAR} points."""
    body = {{
        "model": "gpt-4o-mini",
        "messages": [{{"role": "system", "content": "You are terse."}}, {{"role": "user", "content": content}}],
    }}
    request = urllib.request.Request(
        os.environ["{_BASE_VAR}"].rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={{"content-type": "application/json", "authorization": "Bearer replayed"}},
    )
    with urllib.request.urlopen(request) as response:
        return json.load(response)["choices"][0]["message"]["content"]


def test_hello_is_replayed(attest_replay):
    with attest_replay("{FIXTURE}"):
        assert ask("Say hello") == "Hello!"
'''


@dataclass(frozen=True)
class Written:
    path: Path
    wrote: bool  # False: it existed and was left as it was


def init(root: Path, forge: str = "github") -> list[Written]:
    """Write every starter file under `root` that does not exist yet, with the job files of `forge`
    (github or gitlab); never overwrite one."""
    files = {
        Path(DEFAULT_DIR) / f"{FIXTURE}.attest.json": (DATA / f"{FIXTURE}.attest.json").read_text("utf-8"),
        TEST_FILE: FIRST_TEST,
        POLICY_FILE: policy_text(),
    }
    ref = release_ref()
    for target, source in FORGE_FILES[forge].items():
        files[target] = pinned(read_workflow(source), ref)
    for path in files:  # all checked before any is written
        _refuse_leaving(root, path)
    return [_write_new(root, path, text) for path, text in files.items()]


def _write_new(root: Path, path: Path, text: str) -> Written:
    target = root / path
    if target.exists() or target.is_symlink():
        return Written(path, False)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, text, mode=0o644)
    return Written(path, True)


def _refuse_leaving(root: Path, path: Path) -> None:
    """A directory on the way that is a symlink out of the project (a shared `.github/workflows`)
    would have the file written somewhere else; the directories still to make are made inside."""
    existing = (root / path).parent
    while not existing.exists():
        existing = existing.parent
    if not existing.resolve().is_relative_to(root.resolve()):
        raise UsageError(f"{root / path}: {existing} leads out of the project; not writing through a symlink")


def read_workflow(name: str) -> str:
    return (DATA / "workflows" / name).read_text("utf-8")


def installed_commit() -> str | None:
    """The commit this package was installed from, when pip installed it from its git repository (pip
    records the commit a tag resolved to in the distribution's direct_url.json); else None: a wheel
    or a directory does not say which commit it was built from."""
    try:
        text = metadata.distribution("attest-toolkit").read_text("direct_url.json")
        commit = json.loads(text or "{}").get("vcs_info", {}).get("commit_id")
    except (metadata.PackageNotFoundError, ValueError, AttributeError):
        return None
    return commit if isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{40}", commit) else None


def release_ref() -> str:
    """What the workflows pin the action and the package to: the commit this package came from (a
    tag can be moved to other code), else this version's tag."""
    return installed_commit() or f"v{__version__}"


def pinned(workflow: str, ref: str) -> str:
    """The workflow with the action and the package at `ref`, not the moving `v0`."""
    return workflow.replace(f"{ACTION}@v0", f"{ACTION}@{ref}")


def policy_text() -> str:
    """Every policy setting at its default, each under the schema's own explanation."""
    schema = load_schema("policy.schema.json")
    lines = [
        "# attest policy: what a replayed test run must satisfy (`attest policy evaluate`, the action).",
        "# Every setting is written out at its default; change what your project needs.",
        "version: 1",
    ]
    for key, default in DEFAULTS.items():
        lines += ["", f"# {schema['$defs'][key]['description']}", _yaml_line(key, default)]
    overrides = schema["properties"]["overrides"]["description"]
    lines += ["", f"# {overrides}", "# overrides:", "#   - paths: [tests/live/**]", "#     max_live_calls: 5"]
    return "\n".join(lines) + "\n"


def _yaml_line(key: str, value: object) -> str:
    return yaml.safe_dump({key: value}, default_flow_style=False).strip()


def report_lines(written: list[Written]) -> list[str]:
    """What `attest init` prints: each file, written or kept, how the workflows are pinned when that
    is by a tag, then the command to run next."""
    lines = [f"{'wrote' if w.wrote else 'exists, left as it is'}: {w.path.as_posix()}" for w in written]
    ref = release_ref()
    if any(w.wrote and w.path.suffix == ".yml" for w in written) and ref.startswith("v"):
        lines.append(
            f"pin: the workflows name {ACTION}@{ref}, a tag that can be moved; replace it with the "
            "release's full commit SHA (attest-toolkit was not installed from git, so it cannot tell)"
        )
    return [*lines, f"next: {next_step()}"]


def next_step(python: str = sys.executable) -> str:
    """The command that runs the first test with the pytest of this interpreter, whose plugin replays
    it: `pytest` when that is the one on PATH, else through the interpreter; installing pytest first
    when it is missing (the wheel does not depend on it)."""
    test = TEST_FILE.as_posix()
    interpreter = shlex.quote(python)
    if importlib.util.find_spec("pytest") is None:
        return f"{interpreter} -m pip install pytest && {interpreter} -m pytest {test}"
    on_path = shutil.which("pytest")
    if on_path is not None and Path(on_path).parent == Path(python).parent:
        return f"pytest {test}"
    return f"{interpreter} -m pytest {test}"


__all__ = ["init", "report_lines"]
