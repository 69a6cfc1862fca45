"""Bad input is one line naming the file and the problem, exit 3, never a traceback; a write that
cannot complete leaves the old file as it was, and a write cleans up after one that was killed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.fixtures import document as fx
from conftest import chat_request, chat_response, clean_env, exchange, run_cli, write_fixture
from report_factory import make_report


def one_line_exit_3(done: subprocess.CompletedProcess[str], path: Path | str, problem: str) -> None:
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines() == [f"attest: {path}: {problem}"]


def replay_fixture(path: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(["replay", "--mode", "strict", "--fixture", str(path), "--", sys.executable, "-c", "pass"])


def test_deep_nesting(tmp_path: Path) -> None:
    path = tmp_path / "deep.attest.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    one_line_exit_3(replay_fixture(path), path, "nested too deeply to be a fixture")


def test_a_symlink_loop(tmp_path: Path) -> None:
    path = tmp_path / "loop.attest.json"
    path.symlink_to(path.name)
    one_line_exit_3(
        replay_fixture(path), path, "cannot read: too many levels of symbolic links (a symlink loop)"
    )


def test_a_name_over_the_file_systems_limit(tmp_path: Path) -> None:
    name = "a" * 300
    done = run_cli(["replay", "--name", name, "--fixtures-dir", str(tmp_path), "--", "true"])
    one_line_exit_3(
        done, tmp_path / f"{name}.attest.json", "cannot read: file name too long for the file system"
    )


def test_a_fixture_that_is_not_a_regular_file_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "zero.attest.json"
    path.symlink_to("/dev/zero")  # read whole, this would eat all memory
    one_line_exit_3(replay_fixture(path), path, "not a regular file (a fixture must be one)")


def test_a_fixture_over_the_documented_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.attest.json"
    with path.open("wb") as fh:
        fh.truncate(fx.MAX_FIXTURE_BYTES + 1)  # sparse: costs no disk
    one_line_exit_3(replay_fixture(path), path, "larger than the 64 MiB a fixture may be")


@pytest.mark.parametrize("name", ["../outside", "/etc/passwd", "sub/../../x"])
def test_path_names_are_refused_by_replay_as_capture_refuses_them(tmp_path: Path, name: str) -> None:
    done = run_cli(["replay", "--name", name, "--", "true"], cwd=tmp_path)
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        f"attest: fixture name {name!r} must be letters, digits, '.', '_' or '-', starting with a letter or digit"
    ]


def test_nan_in_a_policy_number(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text(json.dumps(make_report()))
    for policy, text, where in [
        ("policy.yml", "max_live_cost_usd: .nan\n", "/max_live_cost_usd"),
        ("policy.json", '{"overrides": [{"paths": ["a/**"], "max_live_calls": NaN}]}', "/overrides/0/max_live_calls"),
    ]:  # fmt: skip
        (tmp_path / policy).write_text(text)
        done = run_cli(["policy", "evaluate", "--report", str(report), "--policy", str(tmp_path / policy)])
        one_line_exit_3(done, tmp_path / policy, f"{where}: nan is not a finite number")


def test_malformed_junit_with_lxml_installed(tmp_path: Path) -> None:
    import junitparser.junitparser as parser_module

    assert parser_module.etree.__name__ == "lxml.etree"  # the test extras install lxml: its error path
    path = tmp_path / "junit.xml"
    path.write_text("<testsuites><testsuite name='x'>")
    done = run_cli(["report", "from-junit", str(path), "--output", str(tmp_path / "out.json")])
    assert done.returncode == 3
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"attest: {path}: not valid XML (")


# --- writes -----------------------------------------------------------------------------------------


def test_a_temp_file_left_by_a_killed_writer_is_removed_by_the_next_write(tmp_path: Path) -> None:
    path = write_fixture(tmp_path, "t", [exchange(chat_request(), chat_response())])
    killed = subprocess.Popen([sys.executable, "-c", "pass"])
    killed.wait()  # a writer that is gone: its pid names no process now
    left = tmp_path / f".t.attest.json.{killed.pid}.k1ll3d.tmp"
    left.write_text('{"half": ')
    in_progress = tmp_path / f".t.attest.json.{os.getpid()}.wr1t1ng.tmp"  # a live writer's: kept
    in_progress.write_text("")
    fx.write_fixture(path, fx.read_fixture(path, Secrets.of([])), Secrets.of([]))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["t.attest.json", in_progress.name])


IMPORT_ONE = """
import sys, yaml
from attest_toolkit.cli import main
cassette = {"version": 1, "interactions": [{
    "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions", "body": '{"model": "m"}',
                "headers": {}},
    "response": {"status": {"code": 200, "message": "OK"}, "headers": {"content-type": ["application/json"]},
                 "body": {"string": '{"id": "x"}'}}}]}
open(sys.argv[1], "w").write(yaml.safe_dump(cassette))
sys.argv = ["attest", "fixture", "import", "--name", "t", "--fixtures-dir", sys.argv[2], "--force", sys.argv[1]]
main()
"""


def import_into_a_small_file_system(tmp_path: Path, prepare: str) -> subprocess.CompletedProcess[str]:
    """`attest fixture import` into a 64 KiB tmpfs of its own mount namespace, after `prepare` (sh)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for a mount namespace of its own")
    mount = tmp_path / "mnt"
    mount.mkdir()
    script = (
        f'mount -t tmpfs -o size=64k tmpfs "{mount}" && echo old > "{mount}/t.attest.json" && {prepare} && '
        f'exec "{sys.executable}" -c "$0" "{tmp_path / "c.yaml"}" "{mount}"'
    )
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, IMPORT_ONE], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("prepare", "problem"),
    [
        ('(dd if=/dev/zero of="$MNT/fill" bs=1k count=100 2>/dev/null || true)', "no space left on device"),
        ('mount -o remount,ro "$MNT"', "read-only file system"),
    ],
    ids=["full-disk", "read-only"],
)
def test_a_write_that_cannot_complete_is_one_line_and_keeps_the_old_file(
    tmp_path: Path, prepare: str, problem: str
) -> None:
    mount = tmp_path / "mnt"
    done = import_into_a_small_file_system(tmp_path, prepare.replace("$MNT", str(mount)))
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines()[-1] == f"attest: {mount / 't.attest.json'}: cannot write: {problem}"
    assert "Traceback" not in done.stderr


# attest as installed without the bedrock extra: botocore cannot be imported.
WITHOUT_BOTOCORE = (
    "import sys; sys.modules['botocore'] = None; from attest_toolkit.cli import main; "
    "sys.argv[0] = 'attest'; main()"
)


def capture_without_botocore(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "open('ran', 'w')"]
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_BOTOCORE, "capture", "--name", "b", "--", *command],
        cwd=tmp_path,
        env={k: v for k, v in clean_env(**env).items() if not k.startswith("AWS_")} | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
        ("AWS_PROFILE", "dev"),
        ("ATTEST_BEDROCK_UPSTREAM", "http://127.0.0.1:9"),
    ],
)
def test_capturing_bedrock_without_botocore_says_so_once_before_the_command_starts(
    tmp_path: Path, variable: str, value: str
) -> None:
    done = capture_without_botocore(tmp_path, **{variable: value})
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines() == [
        f"attest: capturing Bedrock ({variable} is set) re-signs each call with botocore, which is not "
        "installed here: pip install 'attest-toolkit[bedrock]'"
    ]
    assert not (tmp_path / "ran").exists()


def test_a_capture_that_selects_no_bedrock_runs_without_botocore(tmp_path: Path) -> None:
    done = capture_without_botocore(tmp_path)
    assert (tmp_path / "ran").exists()
    assert done.returncode == 1  # it ran, and made no model call
    assert "botocore" not in done.stderr
