"""What starting costs: every pytest run in an environment holding attest loads its plugin, so a run in
which no test replays must not import the engine client, the SDK patches, fixtures or the report's
schema, and a run that does loads them as Python does, not through pytest's assertion rewriter;
`attest --version` and `attest --help` must not import the commands' implementations. Each case runs
in a fresh interpreter and lists what it imported (bench/startup.py times them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from attest_toolkit import cli
from conftest import clean_env

# Libraries a run must not pay for before it needs them.
HEAVY = {"aiohttp", "jsonschema", "jsonschema_rs", "github", "orjson", "yaml", "openai", "httpx", "minio"}
# The package's modules that load with a replay, a recording or a report, and not before.
REPLAYING = {
    "attest_toolkit.pytest_plugin.client",
    "attest_toolkit.replay.session",
    "attest_toolkit.pytest_plugin.handle",
    "attest_toolkit.pytest_plugin.lane",
    "attest_toolkit.pytest_plugin.plain_clients",
    "attest_toolkit.fixtures.document",
    "attest_toolkit.report.build",
    "attest_toolkit.providers",
    "attest_toolkit.guard",
}

PYTEST_RUN = """
import json, sys
import pytest
code = pytest.main(["-q", "-p", "attest_toolkit.pytest_plugin", "-p", "no:cacheprovider", *sys.argv[1:]])
print(json.dumps({"code": int(code), "modules": sorted(sys.modules)}))
"""

# Plugins autoload, attest's from its entry point as in a user's environment; lists the modules pytest's
# assertion rewriter loaded.
REWRITTEN_RUN = """
import json, sys
import pytest
code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", *sys.argv[1:]])
loaders = {name: type(getattr(module, "__loader__", None)).__name__ for name, module in sys.modules.items()}
rewritten = [name for name, loader in loaders.items() if loader == "AssertionRewritingHook"]
print(json.dumps({"code": int(code), "modules": sorted(sys.modules), "rewritten": sorted(rewritten)}))
"""

CLI_RUN = """
import json, sys
from attest_toolkit.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def run(script: str, *args: str, cwd: Path, autoload: bool = False) -> dict:
    """What `script` printed last, run in a fresh interpreter; plugin autoloading is off unless asked
    for, so only attest's plugin loads beside pytest's own."""
    env = clean_env() if autoload else clean_env(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    done = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def loaded(script: str, *args: str, cwd: Path) -> tuple[int, set[str]]:
    """The exit code and the modules a fresh interpreter imported running `script`."""
    result = run(script, *args, cwd=cwd)
    return result["code"], set(result["modules"])


def tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project as `attest init` leaves it (a fixtures directory), with one test that does not replay."""
    (tmp_path / "tests" / "attest" / "fixtures").mkdir(parents=True)
    (tmp_path / "tests" / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    return tmp_path


def test_a_pytest_run_in_which_no_test_replays_imports_nothing_heavy(project: Path) -> None:
    code, modules = loaded(PYTEST_RUN, "tests", cwd=project)
    assert code == 0
    assert "attest_toolkit.pytest_plugin" in modules
    assert not tops(modules) & HEAVY
    assert not modules & REPLAYING


def test_a_test_that_asks_for_a_replay_loads_them(project: Path) -> None:
    """The check above can see them: a collected test that takes `attest_replay` starts the engine."""
    (project / "tests" / "test_replays.py").write_text("def test_replays(attest_replay):\n    pass\n")
    code, modules = loaded(PYTEST_RUN, "tests", cwd=project)
    assert code == 0
    assert "attest_toolkit.pytest_plugin.client" in modules


def test_the_modules_a_replay_loads_are_not_rewritten_by_pytest(project: Path) -> None:
    """pytest rewrites every module of an installed plugin's distribution, and a fresh CI machine has
    none of its rewritten bytecode: each run would parse and compile the replay's modules again."""
    (project / "tests" / "test_replays.py").write_text("def test_replays(attest_replay):\n    pass\n")
    result = run(REWRITTEN_RUN, "tests", cwd=project, autoload=True)
    assert result["code"] == 0
    assert "test_replays" in result["rewritten"]  # the rewriter is on: the test's own module
    starting = {f"attest_toolkit.{name}" for name in ("pytest_plugin.client", "providers", "normalize")}
    assert starting <= set(result["modules"])  # what starting the engine for the test loaded
    assert not starting & set(result["rewritten"])


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_attest_version_and_help_import_no_command(tmp_path: Path, flag: str) -> None:
    code, modules = loaded(CLI_RUN, flag, cwd=tmp_path)
    assert code == 0
    ours = {m for m in modules if m.startswith("attest_toolkit.")}
    assert ours <= {"attest_toolkit.cli", "attest_toolkit.cli.command", "attest_toolkit.errors"} | (
        {"attest_toolkit.pricing", "attest_toolkit.pricing.table"} if flag == "--version" else set()
    )
    assert not tops(modules) & HEAVY


def test_the_listing_is_each_commands_own_first_sentence() -> None:
    """`attest --help` lists the commands without importing them; each line is the command's own."""
    for name, (_, line) in cli.COMMANDS.items():
        assert cli.load(name).get_short_help_str(1000) == line, name


def test_a_command_runs_when_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.run(cli.app, ["policy", "--help"]) == 0
    assert "evaluate" in capsys.readouterr().out
