"""`attest ci select|run|policy|gate` as a CI step runs them: inputs from ATTEST_CI_* variables, outputs
in GITHUB_OUTPUT, messages as workflow commands, usage errors on one line with exit 3. The whole action
over them: tests/system/test_action.py; their decisions: tests/integration/test_forge.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from attest_toolkit.forge.verdict_file import GateVerdict, write_verdict
from attest_toolkit.github.commands import ActionsStep, read_env_file, read_path_file
from conftest import chat_request, chat_response, clean_env, exchange, git, run_cli, write_fixture
from fake_runner import parse_command, parse_outputs
from report_factory import make_report, make_test, replay_facts


class Runner:
    """One step's runner files, and `attest ci` run with them."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.files = {
            name: tmp / name.lower()
            for name in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")
        }
        for path in self.files.values():
            path.write_text("", encoding="utf-8")

    def __call__(
        self, *args: str, cwd: Path | None = None, **variables: str
    ) -> subprocess.CompletedProcess[str]:
        env = clean_env(**{k: str(v) for k, v in self.files.items()})
        env = {k: v for k, v in env.items() if not k.startswith(("ATTEST_CI_", "PYTEST_"))}
        env.update({f"ATTEST_CI_{k}": v for k, v in variables.items()}, RUNNER_TEMP=str(self.tmp))
        return run_cli(["ci", *args], cwd=cwd or self.tmp, env=env)

    def judge(self, cwd: Path | None = None, **variables: str) -> None:
        """The policy step before the step under test: its verdict file, and runner files left empty."""
        self("policy", cwd=cwd, **variables)
        for path in self.files.values():
            path.write_text("", encoding="utf-8")

    def verdict_file(self, verdict: str, exit_code: int) -> str:
        """A verdict file as the policy step writes it for a run it judged `verdict`."""
        found = GateVerdict(verdict, exit_code, "built-in defaults", (), None, "", "report.json")
        write_verdict(self.tmp / "attest-verdict.json", found)
        return str(self.tmp / "attest-verdict.json")

    def outputs(self) -> dict[str, str]:
        return parse_outputs(self.files["GITHUB_OUTPUT"].read_text(encoding="utf-8"))

    def summary(self) -> str:
        return self.files["GITHUB_STEP_SUMMARY"].read_text(encoding="utf-8")


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    return Runner(tmp_path)


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["run", "--mode", "sometimes"], "'sometimes' is not one of 'strict', 'auto', 'off'"),
        (["run", "--network", "host"], "'host' is not one of 'none', 'guard'"),
        (["run", "--isolation", "vm"], "'vm' is not one of 'host', 'container', 'image'"),
        (["select", "--select"], "Missing option '--ids-file'"),
        (["gate", "--ran", "--frobnicate"], "No such option: --frobnicate"),
    ],
)
def test_bad_input_is_one_line_and_exit_3(runner: Runner, args: list[str], problem: str) -> None:
    done = runner(*args)

    assert done.returncode == 3
    [line] = done.stderr.splitlines()
    assert line.startswith("attest: ") and problem in line
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_variable_takes_the_place_of_an_option(runner: Runner) -> None:
    done = runner("run", MODE="sometimes")

    assert done.returncode == 3
    assert "'sometimes' is not one of" in done.stderr


def test_select_off_runs_the_whole_command(runner: Runner) -> None:
    ids = runner.tmp / "ids.txt"

    done = runner("select", IDS_FILE=str(ids), SELECT="false")

    assert done.returncode == 0, done.stderr
    assert done.stdout == "attest select: all: selection is off: running the whole command\n"
    assert runner.outputs() == {
        "run": "true",
        "kind": "all",
        "reason": "selection is off: running the whole command",
        "ids": str(ids),
    }
    assert ids.read_text(encoding="utf-8") == ""


def test_a_fork_without_its_fixtures_runs_nothing(runner: Runner) -> None:
    done = runner("select", "--ids-file", str(runner.tmp / "ids.txt"), "--select", FIXTURES="false")

    assert done.returncode == 0, done.stderr
    assert (runner.outputs()["run"], runner.outputs()["reason"]) == (
        "false",
        "fixtures not available to forks",
    )


def test_a_missing_base_is_the_steps_one_error_line(runner: Runner, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "first")

    done = runner("select", cwd=repo, IDS_FILE=str(tmp_path / "ids.txt"), SELECT="true", BASE="1" * 40)

    assert done.returncode == 3
    [line] = done.stdout.splitlines()
    name, properties, message = parse_command(line)
    assert (name, properties) == ("error", {"title": "attest"})
    assert message.startswith("attest select failed: ") and message.endswith("check out with fetch-depth: 0")
    assert runner.outputs() == {}


def test_a_command_that_writes_no_report_fails_closed_with_its_own_exit_code(runner: Runner) -> None:
    done = runner("run", COMMAND="exit 5", NETWORK="guard")

    assert done.returncode == 5
    lines = done.stdout.splitlines()
    assert lines[0] == "attest: the test command exited 5"
    name, _, message = parse_command(lines[1])
    assert name == "error" and message.startswith("no report was written to attest-report.json (exit 5)")
    assert runner.outputs() == {}


def test_the_command_gets_the_setup_and_the_ids_and_its_writes_to_the_runner_files_are_dropped(
    runner: Runner,
) -> None:
    (runner.tmp / "setup.env").write_text("GREETING<<END\nhello\nworld\nEND\nPLAIN=a=b\n", encoding="utf-8")
    tool = runner.tmp / "tool"
    tool.mkdir()
    (tool / "setup-tool").write_text("#!/bin/sh\necho from-setup\n", encoding="utf-8")
    (tool / "setup-tool").chmod(0o755)
    (runner.tmp / "setup.path").write_text(f"{tool}\n", encoding="utf-8")
    (runner.tmp / "ids.txt").write_text("tests/test_a.py::test_x[$(touch pwned)]\n", encoding="utf-8")
    # What the command sees, written as the report; then a try at the step's files.
    script = (
        "import json, os, subprocess, sys\n"
        "seen = {'argv': sys.argv[1:], 'greeting': os.environ['GREETING'], 'plain': os.environ['PLAIN'],"
        " 'tool': subprocess.run(['setup-tool'], capture_output=True, text=True).stdout,"
        " 'report': os.environ['ATTEST_REPORT'], 'addopts': os.environ['PYTEST_ADDOPTS'],"
        " 'mode': os.environ['ATTEST_REPLAY']}\n"
        "open(os.environ['ATTEST_REPORT'], 'w').write(json.dumps(seen))\n"
        "for name in ('GITHUB_ENV', 'GITHUB_OUTPUT', 'GITHUB_PATH', 'GITHUB_STEP_SUMMARY'):\n"
        "    open(os.environ[name], 'a').write('BASH_ENV=/tmp/evil\\n')\n"
    )
    (runner.tmp / "seen.py").write_text(script, encoding="utf-8")

    done = runner(
        "run",
        COMMAND=f"{sys.executable} seen.py",
        NETWORK="guard",
        MODE="auto",
        IDS_FILE=str(runner.tmp / "ids.txt"),
        SETUP_ENV=str(runner.tmp / "setup.env"),
        SETUP_PATH=str(runner.tmp / "setup.path"),
    )

    assert done.returncode == 0, done.stdout + done.stderr
    report = runner.tmp / "attest-report.json"
    seen = json.loads(report.read_text(encoding="utf-8"))
    assert seen == {
        "argv": ["tests/test_a.py::test_x[$(touch pwned)]"],
        "greeting": "hello\nworld",
        "plain": "a=b",
        "tool": "from-setup\n",
        "report": str(report),
        "addopts": f"--attest-report={report}",
        "mode": "auto",
    }
    assert not (runner.tmp / "pwned").exists()
    assert runner.outputs() == {"report": str(report), "exit-code": "0"}
    for name in ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY"):
        assert runner.files[name].read_text(encoding="utf-8") == ""


def test_a_stale_report_does_not_pass_for_this_runs(runner: Runner) -> None:
    (runner.tmp / "attest-report.json").write_text("{}", encoding="utf-8")

    done = runner("run", COMMAND="true", NETWORK="guard")

    assert done.returncode == 3
    assert "no report was written" in done.stdout


def test_policy_outputs_the_verdict_and_the_step_itself_passes(runner: Runner) -> None:
    miss = make_test("tests/test_a.py::test_miss", "failed", replay=replay_facts(0, misses=1))
    (runner.tmp / "report.json").write_text(json.dumps(make_report([miss])), encoding="utf-8")

    done = runner("policy", REPORT="report.json", POLICY=".attest/policy.yml")

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("attest policy: blocked (failures, misses)")
    assert runner.outputs() == {"verdict": "blocked", "exit-code": "1", "policy": ""}


def test_a_report_the_policy_cannot_read_is_verdict_error_exit_3(runner: Runner) -> None:
    (runner.tmp / "report.json").write_text("{not json", encoding="utf-8")

    done = runner("policy", REPORT="report.json")

    assert done.returncode == 0
    [line] = done.stderr.splitlines()
    assert line.startswith("attest: ") and "report.json" in line
    assert runner.outputs() == {"verdict": "error", "exit-code": "3", "policy": ""}


def test_a_named_policy_that_is_missing_is_an_error(runner: Runner) -> None:
    (runner.tmp / "report.json").write_text(json.dumps(make_report()), encoding="utf-8")

    done = runner("policy", REPORT="report.json", POLICY="policies/strict.yml")

    assert "policies/strict.yml" in done.stderr
    assert runner.outputs()["verdict"] == "error" and runner.outputs()["policy"] == "policies/strict.yml"


@pytest.mark.parametrize(
    ("variables", "code", "verdict"),
    [
        ({"RAN": "true", "VERDICT": "pass", "EXIT_CODE": "0"}, 0, "pass"),
        ({"RAN": "true", "VERDICT": "blocked", "EXIT_CODE": "1"}, 1, "blocked"),
        ({"RAN": "true", "VERDICT": "error", "EXIT_CODE": "3"}, 3, "error"),
        ({"RAN": "false", "REASON": "nothing changed"}, 0, "pass"),
        (
            {"RAN": "false", "REASON": "fixtures not available to forks", "FIXTURES": "false"},
            2,
            "not_evaluated",
        ),
    ],
)
def test_the_gate_ends_with_the_verdicts_exit_code(
    runner: Runner, variables: dict[str, str], code: int, verdict: str
) -> None:
    if "VERDICT" in variables:  # what the policy step said, in the file it writes
        given = int(variables.pop("EXIT_CODE"))
        variables["VERDICT"] = runner.verdict_file(variables["VERDICT"], given)
    done = runner("gate", **variables)

    assert done.returncode == code, done.stderr
    assert done.stdout.splitlines()[-1] == f"attest: verdict {verdict} (exit {code})"
    assert runner.outputs()["verdict"] == verdict


def test_nothing_to_run_is_told_in_the_job_summary_unless_it_is_off(runner: Runner) -> None:
    runner("gate", RAN="false", REASON="no test uses the changed fixtures", SUMMARY="false")
    assert runner.summary() == ""

    runner("gate", RAN="false", REASON="no test uses the changed fixtures")
    assert runner.summary() == "attest: nothing to run: no test uses the changed fixtures\n"


def test_an_error_line_cannot_start_a_workflow_command_of_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    ActionsStep({}).error("bad base 'x\n::warning::0 live model calls'")

    [line] = capsys.readouterr().out.splitlines()
    assert line == "::error title=attest::bad base 'x%0A::warning::0 live model calls'"


def test_the_runner_files_read_as_github_writes_them(tmp_path: Path) -> None:
    env = tmp_path / "env"
    env.write_text("A<<EOF\none\n\nthree\nEOF\nB=c<<d\nC<<X=Y\nv\nX=Y\n\n", encoding="utf-8")
    path = tmp_path / "path"
    path.write_text("/first\n\n/second\n", encoding="utf-8")

    assert read_env_file(env) == {"A": "one\n\nthree", "B": "c<<d", "C": "v"}
    assert read_path_file(path) == ["/second", "/first"]  # the last written comes first on PATH
    assert read_env_file(tmp_path / "none") == {} and read_path_file(tmp_path / "none") == []


# The command shares the step's files with the gate: a module the step imported only after it would be
# the command's to rewrite. This driver notes every module looked up once the command has started.
LATE_IMPORTS = """\
import sys
from pathlib import Path

started = Path(sys.argv[1])
late = []


class Watch:
    def find_spec(self, name, path=None, target=None):
        if started.exists():
            late.append(name)
        return None


sys.meta_path.insert(0, Watch())
from attest_toolkit.cli import main

try:
    main(sys.argv[2:])
finally:
    started.with_suffix(".late").write_text("\\n".join(late), encoding="utf-8")
"""


@pytest.mark.parametrize("writes_report", [True, False], ids=["report", "no report"])
def test_the_run_step_imports_nothing_after_the_command_starts(runner: Runner, writes_report: bool) -> None:
    started = runner.tmp / "started"
    write = ' && echo "{}" >"$ATTEST_REPORT"' if writes_report else ""
    env = clean_env(
        **{k: str(v) for k, v in runner.files.items()}, ATTEST_CI_COMMAND=f"touch {started}{write}"
    )
    env = {k: v for k, v in env.items() if not k.startswith("PYTEST_")}

    done = subprocess.run(
        [sys.executable, "-c", LATE_IMPORTS, str(started), "ci", "run", "--network", "guard"],
        cwd=runner.tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == (0 if writes_report else 3), done.stdout + done.stderr
    assert started.exists()
    assert started.with_suffix(".late").read_text(encoding="utf-8") == ""


def test_the_html_page_is_written_and_named_for_the_upload(runner: Runner) -> None:
    (runner.tmp / "report.json").write_text(json.dumps(make_report()), encoding="utf-8")
    page = runner.tmp / "html" / "attest-report.html"

    done = runner("html", REPORT="report.json", PAGE=str(page), BASE="0" * 40)

    assert done.returncode == 0, done.stdout + done.stderr
    assert runner.outputs() == {"page": str(page)}
    assert "<html" in page.read_text(encoding="utf-8")


@pytest.mark.parametrize("command", ["html", "publish"])
def test_a_page_or_a_publication_that_fails_is_a_warning_and_the_step_passes(
    runner: Runner, command: str
) -> None:
    (runner.tmp / "report.json").write_text("{not json", encoding="utf-8")
    page = runner.tmp / "attest-report.html"
    runner.judge(REPORT="report.json")

    done = runner(command, REPORT="report.json", PAGE=str(page), ARTIFACT_DIR=str(runner.tmp / "pr"))

    assert done.returncode == 0
    [line] = done.stdout.splitlines()
    name, properties, message = parse_command(line)
    assert (name, properties) == ("warning", {"title": "attest"})
    assert message.endswith("(exit 3); the gate's verdict is unchanged") or message.startswith(
        "publishing exited 3"
    )
    [error] = done.stderr.splitlines()
    assert error.startswith("attest: ") and "report.json" in error
    assert runner.outputs() == {} and not page.exists()


def test_publish_writes_the_job_summary_and_the_outputs_the_gate_ends_with(runner: Runner) -> None:
    (runner.tmp / "report.json").write_text(json.dumps(make_report([make_test("tests/test_a.py::test_ok")])))
    runner.judge(REPORT="report.json")

    done = runner(
        "publish",
        REPORT="report.json",
        ARTIFACT_DIR=str(runner.tmp / "pr"),
        COMMENT="false",
        CHECK_RUN="false",
    )

    assert done.returncode == 0, done.stdout + done.stderr
    outputs = runner.outputs()
    assert (outputs["verdict"], outputs["comment-url"]) == ("pass", "")
    assert outputs["summary"] in runner.summary().splitlines()[0]
    assert "pr-artifact" not in outputs


def test_publish_takes_true_false_or_on_change_for_the_comment(runner: Runner) -> None:
    done = runner("publish", "--comment", "yes", "--report", "r.json", "--artifact-dir", "pr")

    assert done.returncode == 3
    assert "'yes' is not one of 'true', 'false', 'on-change'" in done.stderr


def test_pull_without_a_store_is_an_error_for_the_repository_and_not_evaluated_for_a_fork(
    runner: Runner,
) -> None:
    own = runner("pull", HEAD_REPO="acme/agent", BASE_REPO="acme/agent")

    assert own.returncode == 3
    [line] = own.stdout.splitlines()
    assert parse_command(line)[0] == "error" and "needs OBJECT_STORE_ADDR" in line
    assert runner.outputs() == {}

    fork = runner("pull", HEAD_REPO="someone/agent", BASE_REPO="acme/agent")

    assert fork.returncode == 0, fork.stdout + fork.stderr
    [line] = fork.stdout.splitlines()
    assert parse_command(line) == (
        "warning",
        {"title": "attest"},
        "fixtures not available to forks: the object store's secrets are not given to this pull request",
    )
    assert runner.outputs() == {"available": "false"}


def test_a_pull_that_fails_stops_the_step_before_the_tests(runner: Runner) -> None:
    store = {
        "OBJECT_STORE_ADDR": "127.0.0.1:9",
        "OBJECT_STORE_ACCESS_KEY": "a",
        "OBJECT_STORE_SECRET_KEY": "b",
    }
    env = clean_env(**{k: str(v) for k, v in runner.files.items()}, **store)
    lock = runner.tmp / "tests" / "attest" / "fixtures.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("alpha not-a-digest\n", encoding="utf-8")

    done = run_cli(["ci", "pull"], cwd=runner.tmp, env=env)

    assert done.returncode == 3
    [line] = done.stdout.splitlines()
    name, _, message = parse_command(line)
    assert name == "error" and message.startswith("attest fixture pull exited ")
    assert message.endswith(": the tests cannot run without their pinned fixtures")
    [error] = done.stderr.splitlines()
    assert error.startswith("attest: tests/attest/fixtures.lock")
    assert runner.outputs() == {}


def project_in_a_repository(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose tests live in `agent/`, with a policy that lets failures through and a
    pull request that re-records the fixture `alpha`; the project directory and the base commit."""
    repo = tmp_path / "repo"
    project = repo / "agent"
    (project / ".attest").mkdir(parents=True)
    (project / ".attest" / "policy.yml").write_text("version: 1\nfailures: allow\n", encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    write_fixture(project / "tests/attest/fixtures", "alpha", [exchange(chat_request(), chat_response("Hi"))])
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    write_fixture(
        project / "tests/attest/fixtures", "alpha", [exchange(chat_request(), chat_response("Hey"))]
    )
    git(repo, "commit", "-q", "-am", "re-record alpha")
    failed = make_test("tests/test_a.py::test_a", "failed", message="boom")
    (project / "attest-report.json").write_text(json.dumps(make_report([failed])), encoding="utf-8")
    return project, base


def test_publish_started_outside_the_project_reads_everything_in_it(runner: Runner, tmp_path: Path) -> None:
    project, base = project_in_a_repository(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runner.judge(cwd=project, REPORT="attest-report.json", POLICY=".attest/policy.yml")

    done = runner(
        "publish",
        cwd=elsewhere,
        PROJECT_DIR=str(project),
        REPORT="attest-report.json",
        POLICY=".attest/policy.yml",
        BASE=base,
        ARTIFACT_DIR="pr",
        COMMENT="false",
        CHECK_RUN="false",
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert runner.outputs()["verdict"] == "pass"  # the project's policy, not the defaults
    [annotation] = [parse_command(line) for line in done.stdout.splitlines() if line.startswith("::error")]
    assert annotation[1]["file"] == "agent/tests/test_a.py"
    assert "| `alpha` |" in runner.summary()
    assert not any(line.startswith("::warning") for line in done.stdout.splitlines()), done.stdout


def test_pull_reads_the_lock_of_the_project_it_is_given(runner: Runner, tmp_path: Path) -> None:
    store = {
        "OBJECT_STORE_ADDR": "127.0.0.1:9",
        "OBJECT_STORE_ACCESS_KEY": "a",
        "OBJECT_STORE_SECRET_KEY": "b",
    }
    env = clean_env(**{k: str(v) for k, v in runner.files.items()}, **store, ATTEST_CI_PROJECT_DIR="agent")
    lock = runner.tmp / "agent" / "tests" / "attest" / "fixtures.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("alpha not-a-digest\n", encoding="utf-8")

    done = run_cli(["ci", "pull"], cwd=runner.tmp, env=env)

    assert done.returncode == 3
    [error] = done.stderr.splitlines()
    assert error.startswith("attest: agent/tests/attest/fixtures.lock")


# --- the verdict, worked out once -------------------------------------------------------------------


def test_the_policy_step_writes_the_verdict_file_the_later_steps_read(runner: Runner) -> None:
    miss = make_test("tests/test_a.py::test_miss", "failed", replay=replay_facts(2, misses=1))
    (runner.tmp / "report.json").write_text(json.dumps(make_report([miss])), encoding="utf-8")

    done = runner("policy", REPORT="report.json", VERDICT_FILE=str(runner.tmp / "v" / "verdict.json"))

    assert done.returncode == 0, done.stderr
    verdict = json.loads((runner.tmp / "v" / "verdict.json").read_text(encoding="utf-8"))
    assert (verdict["verdict"], verdict["exit_code"], verdict["policy_source"]) == (
        "blocked",
        1,
        "built-in defaults",
    )
    assert verdict["counts"] == {"replayed": 2, "live": 0, "cost_usd": 0, "misses": 1}
    assert verdict["summary_line"] == "2 replayed · 0 live model calls · $0.00 · 1 missed · 1 failed"
    assert {r["rule"] for r in verdict["rules"] if r["status"] == "blocked"} == {"failures", "misses"}
    assert not (runner.tmp / "attest-verdict.json").exists()  # the default is $RUNNER_TEMP's


def test_html_and_publish_show_the_verdict_file_and_never_read_the_policy_again(runner: Runner) -> None:
    (runner.tmp / "report.json").write_text(json.dumps(make_report([make_test("tests/test_a.py::test_ok")])))
    runner.judge(REPORT="report.json")
    # Were either step to judge again, this policy would stop it (and block the report besides).
    (runner.tmp / ".attest").mkdir()
    (runner.tmp / ".attest" / "policy.yml").write_text("version: 1\nmax_live_calls: -1\n", encoding="utf-8")
    page = runner.tmp / "attest-report.html"

    html = runner(
        "html", REPORT="report.json", PAGE=str(page), VERDICT=str(runner.tmp / "attest-verdict.json")
    )
    publish = runner("publish", REPORT="report.json", ARTIFACT_DIR="pr", COMMENT="false", CHECK_RUN="false")

    assert html.returncode == publish.returncode == 0
    assert "::warning" not in html.stdout + publish.stdout, html.stdout + publish.stdout
    assert "Policy: pass" in page.read_text(encoding="utf-8")
    assert "- Policy: **pass** · `built-in defaults`" in runner.summary()


def test_a_publish_step_that_crashes_leaves_the_gates_outputs_whole(runner: Runner) -> None:
    tests = [make_test("tests/test_a.py::test_a", replay=replay_facts(3))]
    (runner.tmp / "report.json").write_text(json.dumps(make_report(tests)), encoding="utf-8")
    runner.judge(REPORT="report.json")

    # Publishing stops before it writes anything (here on an input it refuses): a warning, no outputs.
    crashed = runner("publish", REPORT="report.json", ARTIFACT_DIR="pr", REPORT_URL="http://x")
    assert crashed.returncode == 0 and crashed.stdout.startswith(
        "::warning title=attest::publishing exited 3"
    )
    published = runner.outputs()
    assert published == {}

    done = runner("gate", RAN="true", COMMENT_URL=published.get("comment-url", ""))

    assert done.returncode == 0, done.stderr
    assert runner.outputs() == {
        "replayed": "3",
        "live": "0",
        "cost": "0",
        "misses": "0",
        "verdict": "pass",
        "comment-url": "",
        "summary": "3 replayed · 0 live model calls · $0.00",
        "report": "report.json",
    }


def test_a_gate_without_its_verdict_file_is_an_error_exit_3_in_one_line(runner: Runner) -> None:
    done = runner("gate", RAN="true", VERDICT=str(runner.tmp / "none.json"))

    assert done.returncode == 3
    [line] = done.stderr.splitlines()
    assert line.startswith(f"attest: {runner.tmp / 'none.json'}: no verdict file")
    assert done.stdout.splitlines()[-1] == "attest: verdict error (exit 3)"
    assert runner.outputs()["verdict"] == "error" and runner.outputs()["replayed"] == ""
