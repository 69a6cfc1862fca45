"""No-network mode: real network namespaces, the probe, the CLI, and the sudo path's argv.

Nothing here sends a packet off the machine: the probe only asks the kernel for routes, and the
"agent" that tries to reach a provider runs inside a namespace and first checks that only loopback
is up.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
import typer
from attest_toolkit.cli import run
from attest_toolkit.cli.sandbox import register
from attest_toolkit.fixtures.validation import load_schema
from attest_toolkit.sandbox import (
    SandboxError,
    current_egress,
    egress_from_environ,
    isolated_argv,
    run_isolated,
    run_probe,
)
from attest_toolkit.sandbox import strategy as strategies
from attest_toolkit.sandbox.probe import Probe
from attest_toolkit.sandbox.strategy import Invoker, sudo_argv, wrap

pytest_plugins = ["netns"]  # the namespace fixture

PY = sys.executable
EGRESS_SCHEMA = load_schema("report-v2.schema.json")["$defs"]["summary"]["properties"]["egress"]
SHOW_ENV = (
    "import json, os; print(json.dumps({k: v for k, v in os.environ.items() if k.startswith('ATTEST_')}))"
)


def cli(argv: list[str]) -> int:
    app = typer.Typer()
    register(app)

    @app.callback()
    def root() -> None:
        """A group, as the real `attest` app is."""

    return run(app, argv)


@pytest.fixture
def host_not_isolated() -> None:
    if run_probe().isolated:
        pytest.skip("this test host has no network at all, so guard and 'off' cannot be observed")


def child_json(argv: list[str], tmp_path: Path, **kwargs: object) -> tuple[int, dict]:
    out = tmp_path / "child.json"
    script = f"import json, sys; exec(sys.argv[1]); json.dump(RESULT, open({str(out)!r}, 'w'))"
    result = run_isolated([PY, "-c", script, *argv], **kwargs)  # type: ignore[arg-type]
    return result.returncode, {"egress": result.egress, "child": json.loads(out.read_text())}


# --- real namespaces -------------------------------------------------------------------------------


def test_probe_inside_the_namespace_reports_isolation(namespace: str, tmp_path: Path) -> None:
    code = "import os; RESULT = {k: v for k, v in os.environ.items() if k.startswith('ATTEST_')}"
    returncode, seen = child_json([code], tmp_path)
    egress, env = seen["egress"], seen["child"]
    assert returncode == 0
    assert egress["mode"] == "none" and egress["isolation_verified"] is True
    assert egress["strategy"] == namespace
    assert egress["probe"].startswith("isolated: interfaces up: lo; routes via: none;")
    assert "192.0.2.1:9: ENETUNREACH" in egress["probe"]
    jsonschema.validate(egress, EGRESS_SCHEMA)
    assert env["ATTEST_EGRESS_MODE"] == "none"
    assert env["ATTEST_ISOLATION_VERIFIED"] == "true"
    assert env["ATTEST_EGRESS_PROBE"] == egress["probe"]
    assert env["ATTEST_EGRESS_STRATEGY"] == namespace
    assert "ATTEST_EGRESS" not in env


def test_loopback_server_inside_is_reachable_from_inside(namespace: str, tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import socket
        with socket.create_server(("127.0.0.1", 0)) as server:
            with socket.create_connection(server.getsockname(), timeout=5) as client:
                peer, _ = server.accept()
                client.sendall(b"ping")
                RESULT = {"got": peer.recv(4).decode()}
                peer.close()
        """
    )
    returncode, seen = child_json([code], tmp_path)
    assert returncode == 0
    assert seen["child"] == {"got": "ping"}


AGENT = textwrap.dedent(
    """
    import socket, sys
    from attest_toolkit.sandbox.netif import up_interfaces
    if up_interfaces() != ["lo"]:
        sys.exit(99)  # never try a provider unless nothing but loopback is up
    RESULT = {}
    for label, host in (("name", "api.openai.com"), ("ip", "162.159.140.245")):
        try:
            socket.create_connection((host, 443), timeout=5).close()
            RESULT[label] = "connected"
        except OSError as exc:
            RESULT[label] = type(exc).__name__
    """
)


def test_agent_inside_cannot_reach_a_provider_by_name_or_ip(namespace: str, tmp_path: Path) -> None:
    returncode, seen = child_json([AGENT], tmp_path)
    assert returncode == 0, "the agent found an interface other than lo up and tried nothing"
    assert seen["child"]["name"] != "connected"
    assert seen["child"]["ip"] != "connected"


def test_exit_code_of_the_command_is_passed_through(namespace: str) -> None:
    assert run_isolated([PY, "-c", "raise SystemExit(42)"]).returncode == 42
    assert cli(["sandbox", "--", PY, "-c", "raise SystemExit(7)"]) == 7


def test_user_namespace_strategy_runs_as_mapped_root(namespace: str, tmp_path: Path) -> None:
    out = tmp_path / "probe.json"
    out.touch()
    argv = wrap(strategies.USERNS, ["sh", "-c", f"id -u > {tmp_path}/uid"], probe_out=out)
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0 and "unshare" in done.stderr:
        pytest.skip(f"unprivileged user namespaces are not available: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    egress = json.loads(out.read_text())["egress"]
    assert egress["strategy"] == "userns" and egress["isolation_verified"] is True
    assert (tmp_path / "uid").read_text().strip() == "0"


def test_inside_a_namespace_the_sandbox_sees_it_is_already_isolated(namespace: str, tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import json
        from attest_toolkit.sandbox import choose_strategy, run_isolated
        from attest_toolkit.sandbox.netif import bring_up
        bring_up("lo")
        result = run_isolated(["true"])
        print(json.dumps([choose_strategy("none"), choose_strategy("guard"), result.egress]))
        """
    )
    outer, _ = isolated_argv([PY, "-c", code], "none")
    done = subprocess.run(outer, capture_output=True, text=True, check=True)
    none_choice, guard_choice, egress = json.loads(done.stdout)
    assert none_choice == guard_choice == "already-isolated"
    assert egress["strategy"] == "already-isolated" and egress["isolation_verified"] is True


def test_isolated_argv_wraps_a_command_that_exits_3_when_isolation_fails(
    host_not_isolated: None, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    argv = [PY, "-m", "attest_toolkit.sandbox", "--strategy", "already-isolated", "--", "touch", str(marker)]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 3
    assert not marker.exists()
    [line] = done.stderr.splitlines()
    assert line.startswith("attest: sandbox: isolation could not be verified (")


# --- files named directly under /tmp ---------------------------------------------------------------

# Writes argv[1] as the report writer does: a temp file beside it, renamed over it.
RENAME_OVER = textwrap.dedent(
    """
    import os, sys
    target = sys.argv[1]
    old = open(target).read() if os.path.exists(target) else ""
    with open(target + ".part", "w") as out:
        out.write(old + sys.argv[2])
    os.replace(target + ".part", target)
    raise SystemExit(int(sys.argv[3]))
    """
)


@pytest.fixture
def tmp_file() -> Iterator[Path]:
    """A name directly under the real /tmp, unique to the test, removed after it."""
    path = Path("/tmp", f"attest-sandbox-{uuid.uuid4().hex}.json")
    yield path
    path.unlink(missing_ok=True)


def test_a_file_written_directly_under_tmp_by_rename_comes_back(namespace: str, tmp_file: Path) -> None:
    result = run_isolated([PY, "-c", RENAME_OVER, str(tmp_file), '{"tests": 1}', "5"])
    assert result.returncode == 5, "the command's exit code is kept"
    assert tmp_file.read_text() == '{"tests": 1}'
    assert not tmp_file.with_name(tmp_file.name + ".part").exists(), "nothing else of the private /tmp"


def test_a_file_that_existed_under_tmp_is_seen_inside_and_gets_the_content(
    namespace: str, tmp_file: Path
) -> None:
    tmp_file.write_text("before;")
    assert run_isolated([PY, "-c", RENAME_OVER, str(tmp_file), "after", "0"]).returncode == 0
    assert tmp_file.read_text() == "before;after"
    tmp_file.write_text("")
    assert run_isolated(["sh", "-c", f"echo written >> {tmp_file}"]).returncode == 0
    assert tmp_file.read_text() == "written\n"


def test_a_symlink_planted_at_the_named_path_is_not_written_through(
    namespace: str, tmp_file: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    plant = f"import os, sys; os.symlink({str(victim)!r}, sys.argv[1])"
    assert run_isolated([PY, "-c", plant, str(tmp_file)]).returncode == 0
    assert victim.read_text() == "untouched"
    assert not tmp_file.exists() and not tmp_file.is_symlink()
    err = capfd.readouterr().err.strip().splitlines()
    assert err == [f"attest: sandbox: {tmp_file} not returned: it is a symbolic link, not a regular file"]


# --- the sudo path ---------------------------------------------------------------------------------

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2


def test_sudo_argv_drops_back_to_the_invoker_and_keeps_the_environment() -> None:
    env = {"PATH": "/opt/tools/bin:/usr/bin", "HOME": "/home/runner", "OPENAI_API_KEY": SECRET, "CI": "1"}
    argv = sudo_argv(["pytest", "-q"], env=env, invoker=Invoker(1001, 118, (118, 4, 1001)))
    assert argv[1:4] == ["-n", "--preserve-env", "--"]
    assert Path(argv[0]).name == "sudo" and Path(argv[4]).name == "unshare"
    assert argv[5 : argv.index("--", 5)] == [
        "--net",
        "--mount",
        "--pid",
        "--fork",
        "--kill-child",
        "--mount-proc",
    ]
    inner = argv[argv.index("-c") + 2 :]
    assert inner[:2] == ["--strategy", "sudo-unshare"]
    options, command = inner[: inner.index("--")], inner[inner.index("--") + 1 :]
    assert command == ["pytest", "-q"]
    assert options[options.index("--user") + 1] == "1001"
    assert options[options.index("--group") + 1] == "118"
    assert options[options.index("--groups") + 1] == "118,4,1001"
    assert "PATH=/opt/tools/bin:/usr/bin" in options and "HOME=/home/runner" in options
    assert not any(SECRET in part for part in argv), "a secret may reach the process list"


def reachable_toolkit(shared: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The toolkit where the unprivileged user can read it. On the sudo path the invoker owns the
    clone; here the drop is to nobody, who cannot enter a clone under a private (0700) directory, as
    root's `make test` in a `mktemp -d` clone has: stage two then runs a copy of the package."""
    copy = Path(shared) / "toolkit"
    shutil.copytree(
        Path(strategies.import_root()) / "attest_toolkit",
        copy / "attest_toolkit",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for path in (copy, *copy.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    monkeypatch.setattr(strategies, "import_root", lambda: str(copy))


def test_sudo_path_files_written_inside_belong_to_the_invoker(
    namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run what sudo would run (we are root already) and check the drop to an unprivileged user."""
    if os.geteuid() != 0:
        pytest.skip("dropping to another user needs root; the argv test covers the non-root side")
    nobody = 65534
    out = tmp_path / "probe.json"
    out.touch()
    env = {"PATH": os.environ["PATH"], "FROM_CALLER": "kept", "SUDO_USER": "added-by-sudo"}
    # pytest's tmp_path is private to root, so the unprivileged user writes to a directory of its own.
    with tempfile.TemporaryDirectory(prefix="attest-sandbox-test-") as shared:
        os.chmod(shared, 0o777)
        reachable_toolkit(shared, monkeypatch)
        script = f'touch {shared}/made-inside && echo "$(id -u) $FROM_CALLER ${{SUDO_USER:-unset}}"'
        invoker = Invoker(nobody, nobody, (nobody,))
        argv = sudo_argv(["sh", "-c", script], env=env, invoker=invoker, probe_out=out)
        done = subprocess.run(argv[argv.index("--") + 1 :], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [str(nobody), "kept", "unset"]
        assert (Path(shared) / "made-inside").stat().st_uid == nobody
    assert json.loads(out.read_text())["egress"]["strategy"] == "sudo-unshare"


def test_sudo_path_a_file_returned_under_tmp_belongs_to_the_invoker(
    namespace: str, tmp_path: Path, tmp_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0:
        pytest.skip("dropping to another user needs root; the argv test covers the non-root side")
    nobody = 65534
    out = tmp_path / "probe.json"
    out.touch()
    env = {"PATH": os.environ["PATH"]}
    with tempfile.TemporaryDirectory(prefix="attest-sandbox-test-") as shared:
        os.chmod(shared, 0o777)
        reachable_toolkit(shared, monkeypatch)
        # sh, not this Python: the unprivileged user may not run the test's interpreter.
        command = ["sh", "-c", f"printf 'from nobody' > {tmp_file}.part && mv {tmp_file}.part {tmp_file}"]
        argv = sudo_argv(command, env=env, invoker=Invoker(nobody, nobody, (nobody,)), probe_out=out)
        done = subprocess.run(argv[argv.index("--") + 1 :], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert tmp_file.read_text() == "from nobody"
    assert tmp_file.stat().st_uid == nobody


# --- guard, errors and the CLI ----------------------------------------------------------------------


def test_guard_sets_attest_egress_block_and_reports_unverified(
    host_not_isolated: None, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "egress.json"
    code = cli(["sandbox", "--network", "guard", "--report-egress", str(report), "--", PY, "-c", SHOW_ENV])
    assert code == 0
    env = json.loads(capfd.readouterr().out)
    assert env["ATTEST_EGRESS"] == "block"
    assert env["ATTEST_EGRESS_MODE"] == "guard" and env["ATTEST_ISOLATION_VERIFIED"] == "false"
    egress = json.loads(report.read_text())
    assert egress["mode"] == "guard" and egress["isolation_verified"] is False
    assert egress["strategy"] is None and egress["probe"].startswith("NOT isolated:")
    jsonschema.validate(egress, EGRESS_SCHEMA)


def test_report_egress_is_written_for_a_namespace_run(namespace: str, tmp_path: Path) -> None:
    report = tmp_path / "out" / "egress.json"
    assert cli(["sandbox", "--network", "none", "--report-egress", str(report), "--", "true"]) == 0
    egress = json.loads(report.read_text())
    assert egress["mode"] == "none" and egress["isolation_verified"] is True
    jsonschema.validate(egress, EGRESS_SCHEMA)


def test_unknown_network_value_is_a_one_line_usage_error(capfd: pytest.CaptureFixture[str]) -> None:
    assert cli(["sandbox", "--network", "host", "--", "true"]) == 3
    err = capfd.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--network" in err and "Traceback" not in err


def test_no_way_to_isolate_is_one_line_naming_what_was_tried(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    refusals = (
        ("already-isolated", "eth0 up"),
        ("root-unshare", "not root"),
        ("userns", "Operation not permitted"),
    )
    monkeypatch.setattr(strategies, "CHECKS", tuple((name, lambda r=r: r) for name, r in refusals))
    marker = tmp_path / "ran"
    assert cli(["sandbox", "--", "touch", str(marker)]) == 3
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and err.startswith("attest: cannot turn the network off: tried ")
    assert "already-isolated (eth0 up); root-unshare (not root); userns (Operation not permitted)" in err
    assert "--network guard" in err
    assert not marker.exists()
    # The same machine with --network guard runs the command under the guard instead.
    assert cli(["sandbox", "--network", "guard", "--", "touch", str(marker)]) == 0
    assert marker.exists()


def test_a_missing_command_is_one_line_exit_3(namespace: str, capfd: pytest.CaptureFixture[str]) -> None:
    assert cli(["sandbox", "--", "attest-no-such-command"]) == 3
    err = capfd.readouterr().err
    assert err == "attest: command not found: attest-no-such-command\n"


# --- the probe and the egress record ----------------------------------------------------------------


def test_probe_verdicts_on_the_network() -> None:
    """The namespace alone; privileges and escapes are judged in test_sandbox_escapes.py."""
    fresh = Probe(("lo",), (), "ENETUNREACH", "ENETUNREACH", True)
    assert fresh.network_isolated and fresh.why_not(confinement=False) == ""
    assert Probe(("lo",), (), "ENETUNREACH", "unavailable", True).network_isolated  # no IPv6 at all
    host = Probe(("eth0", "lo"), ("eth0",), "route found", "route found", True)
    assert not host.network_isolated and host.why_not() == "eth0 up"
    assert Probe(("lo",), ("wg0",), "ENETUNREACH", "ENETUNREACH", True).why_not() == "routes via wg0"
    assert not Probe(("lo",), (), "route found", "ENETUNREACH", True).network_isolated
    no_loopback = Probe(("lo",), (), "ENETUNREACH", "ENETUNREACH", False)
    assert no_loopback.why_not(confinement=False) == "loopback does not work"


def test_egress_record_from_the_environment() -> None:
    passed = {
        "ATTEST_EGRESS_MODE": "none",
        "ATTEST_ISOLATION_VERIFIED": "true",
        "ATTEST_EGRESS_PROBE": "isolated: ...",
        "ATTEST_EGRESS_STRATEGY": "sudo-unshare",
    }
    assert egress_from_environ(passed) == {
        "mode": "none",
        "isolation_verified": True,
        "probe": "isolated: ...",
        "strategy": "sudo-unshare",
    }
    assert egress_from_environ({"ATTEST_EGRESS": "block"})["mode"] == "guard"  # type: ignore[index]
    assert egress_from_environ({}) is None
    assert egress_from_environ({"ATTEST_EGRESS_MODE": "sideways"}) is None


def test_current_egress_does_not_trust_a_hand_set_environment(host_not_isolated: None) -> None:
    claimed = {"ATTEST_EGRESS_MODE": "none", "ATTEST_ISOLATION_VERIFIED": "true"}
    assert current_egress(claimed)["isolation_verified"] is False
    assert current_egress(claimed)["mode"] == "off"
    assert current_egress({"ATTEST_EGRESS": "block"})["mode"] == "guard"


def test_unknown_network_in_the_api_is_a_sandbox_error() -> None:
    with pytest.raises(SandboxError, match="unknown network mode 'host'"):
        run_isolated(["true"], network="host")
    with pytest.raises(SandboxError, match="no command given"):
        isolated_argv([], "guard")
