"""report-v2: reading and validating, building, merging shards, and JUnit XML in and out."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest
import typer
from attest_toolkit.cli import report as report_cli
from attest_toolkit.cli import run
from attest_toolkit.report.build import ReportError, build_report, load_report, merge_reports, write_report
from attest_toolkit.report.junit import from_junit, to_junit
from report_factory import FAULTS, ISOLATED, make_miss, make_report, make_test, replay_facts


def cli(argv: list[str]) -> int:
    app = typer.Typer()
    report_cli.register(app)
    return run(app, argv)


def write_json(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


# --- load and validate ---------------------------------------------------------------------------


def test_load_report_returns_a_valid_report(tmp_path: Path) -> None:
    report = make_report()
    assert load_report(write_json(tmp_path / "r.json", report)) == report


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"version": 2, "tests": [', "not valid JSON (line 1"),
        ("[1, 2]", "not an attest report"),
        (json.dumps({**make_report(), "version": 3}), "report version 3"),
        (
            json.dumps({"version": 2, "tests": []}),
            'invalid at the top level: the required property "summary" is missing',
        ),
    ],
)
def test_malformed_report_is_one_error_naming_the_file(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "attest-report.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ReportError) as caught:
        load_report(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert problem in str(caught.value)
    assert "\n" not in str(caught.value)
    assert caught.value.exit_code == 3


def test_schema_violation_names_the_json_pointer(tmp_path: Path) -> None:
    report = make_report()
    report["tests"][3]["outcome"] = "exploded"
    with pytest.raises(ReportError, match=r'invalid at /tests/3/outcome: must be one of "passed"'):
        load_report(write_json(tmp_path / "r.json", report))


def test_missing_report_file(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no such report file"):
        load_report(tmp_path / "absent.json")


# --- build and write -----------------------------------------------------------------------------


def test_build_report_counts_outcomes_and_replay_totals() -> None:
    tests = [
        make_test("tests/a.py::one", replay=replay_facts(2, live=1, cost=0.1, unpriced=0)),
        make_test(
            "tests/a.py::two", "failed", message="boom", replay=replay_facts(1, live=2, cost=0.2, unpriced=1)
        ),
        make_test(
            "tests/b.py::three", "not_evaluated", reason="replay_miss", replay=replay_facts(0, misses=1)
        ),
    ]
    report = build_report(tests, egress=ISOLATED, duration=1.5)
    summary = report["summary"]
    assert summary["tests"] == 3
    assert summary["outcomes"]["passed"] == 1
    assert summary["outcomes"]["failed"] == 1
    assert summary["outcomes"]["not_evaluated"] == 1
    assert summary["replay"] == {
        "replayed": 3,
        "live": 3,
        "misses": 1,
        "unpriced": 1,
        "unused": 0,
        "live_cost_usd": 0.3,
        "not_evaluated": 1,
    }
    assert summary["egress"] == ISOLATED
    assert summary["duration"] == 1.5
    assert summary["usage"] == {"calls": 0, "cost_usd": 0.0}


def test_build_report_keeps_credentials_out_of_messages(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ACME_API_KEY", "acme-0123456789-secret")
    message = "auth failed for sk-proj-abcdefghijklmnopqrstuvwx with acme-0123456789-secret"
    report = build_report([make_test("tests/a.py::t", "failed", message=message)], egress=ISOLATED)
    text = json.dumps(report)
    assert "sk-proj-abcdefghijklmnopqrstuvwx" not in text
    assert "acme-0123456789-secret" not in text
    assert "auth failed for {{redacted}}" in report["tests"][0]["message"]


def test_write_report_is_atomic_and_refuses_an_invalid_report(tmp_path: Path) -> None:
    path = tmp_path / "out" / "report.json"
    write_report(make_report(), path)
    before = path.read_text(encoding="utf-8")
    broken = make_report()
    broken["summary"]["tests"] = -1
    with pytest.raises(ReportError, match="/summary/tests"):
        write_report(broken, path)
    assert path.read_text(encoding="utf-8") == before
    assert [p.name for p in path.parent.iterdir()] == ["report.json"]


# --- merge ---------------------------------------------------------------------------------------


def test_merge_two_shards() -> None:
    shard1 = make_report(
        [
            make_test("tests/a.py::one", replay=replay_facts(2)),
            make_test(
                "tests/a.py::flaky", "failed", message="first try", replay=replay_facts(1, live=1, cost=0.5)
            ),
        ]
    )
    shard2 = make_report(
        [
            make_test("tests/b.py::two", replay=replay_facts(4)),
            make_test("tests/a.py::flaky", replay=replay_facts(1)),
        ],
        egress={"mode": "guard", "isolation_verified": False, "probe": None, "strategy": None},
    )
    merged = merge_reports([shard1, shard2])
    assert [t["id"] for t in merged["tests"]] == ["tests/a.py::one", "tests/a.py::flaky", "tests/b.py::two"]
    flaky = merged["tests"][1]
    assert flaky["outcome"] == "passed"  # the retry, which ran last
    summary = merged["summary"]
    assert summary["tests"] == 3
    assert summary["outcomes"]["passed"] == 3
    assert summary["outcomes"]["failed"] == 0
    assert summary["replay"]["replayed"] == 7
    assert summary["replay"]["live"] == 0
    assert summary["egress"]["mode"] == "guard"  # the weakest shard
    assert summary["egress"]["isolation_verified"] is False
    assert summary["environment"]["shards"] == 2
    assert summary["environment"]["runner"] == "merge"


def test_merge_keeps_isolation_only_when_every_shard_verified_it() -> None:
    merged = merge_reports([make_report(), make_report()])
    assert merged["summary"]["egress"]["mode"] == "none"
    assert merged["summary"]["egress"]["isolation_verified"] is True


def test_merge_counts_calls_a_shard_made_outside_any_test_and_nested_merges() -> None:
    shard1 = make_report(
        [make_test("tests/a.py::one", replay=replay_facts(1))], replay={"live": 2, "replayed": 1}
    )
    shard2 = make_report([make_test("tests/b.py::two", replay=replay_facts(1))])
    shard3 = make_report([make_test("tests/c.py::three", replay=replay_facts(1))])
    merged = merge_reports([merge_reports([shard1, shard2]), shard3])
    assert merged["summary"]["replay"]["live"] == 2
    assert merged["summary"]["replay"]["replayed"] == 3
    assert merged["summary"]["environment"]["shards"] == 3


def test_merge_cli_writes_the_merged_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = write_json(tmp_path / "one.json", make_report([make_test("tests/a.py::one")]))
    two = write_json(tmp_path / "two.json", make_report([make_test("tests/b.py::two")]))
    assert cli(["report", "merge", str(one), str(two), "-o", str(tmp_path / "merged.json")]) == 0
    assert load_report(tmp_path / "merged.json")["summary"]["tests"] == 2


def test_merge_cli_names_the_malformed_shard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = write_json(tmp_path / "one.json", make_report())
    bad = tmp_path / "bad.json"
    bad.write_text("{nope", encoding="utf-8")
    assert cli(["report", "merge", str(one), str(bad), "-o", str(tmp_path / "merged.json")]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"attest: {bad}: not valid JSON")
    assert err.count("\n") == 1
    assert not (tmp_path / "merged.json").exists()


# --- JUnit ---------------------------------------------------------------------------------------


def test_junit_round_trip_keeps_every_outcome_and_replay_fact(tmp_path: Path) -> None:
    report = make_report()
    report["tests"].append(
        make_test(
            "tests/c.py::test_comma",
            replay=replay_facts(
                1, live=1, cost=0.0125, unpriced=0, fixtures=["a,b.attest.json", "c.attest.json"]
            ),
        )
    )
    report = make_report(report["tests"])
    to_junit(report, tmp_path / "junit.xml")
    assert from_junit(tmp_path / "junit.xml") == report


def test_junit_carries_each_fault_a_test_ran_with_and_reads_them_back(tmp_path: Path) -> None:
    faulted = make_test("tests/a.py::test_recovers", replay=replay_facts(2, faults=FAULTS))
    report = make_report([faulted, make_test("tests/a.py::test_plain", replay=replay_facts(1))])
    source, xml = write_json(tmp_path / "r.json", report), tmp_path / "j.xml"
    assert cli(["report", "junit", "--report", str(source), "-o", str(xml)]) == 0
    cases = ElementTree.parse(xml).iter("testcase")  # the XML a CI system reading JUnit sees
    recovers, plain = ([(p.get("name"), p.get("value")) for p in case.iter("property")] for case in cases)
    assert [p for p in recovers if p[0].startswith("attest.fault")] == [
        ("attest.faults", "2"),
        ("attest.fault", "status=429,retry-after=1 (request 1)"),
        ("attest.fault", "every:pace=20 (request 3)"),
    ]
    assert not [p for p in plain if p[0].startswith("attest.fault")]
    back = from_junit(xml)
    assert back == report and back["summary"]["replay"]["faults"] == 2


def test_junit_cli_round_trip(tmp_path: Path) -> None:
    source = write_json(tmp_path / "r.json", make_report())
    assert cli(["report", "junit", "--report", str(source), "-o", str(tmp_path / "j.xml")]) == 0
    assert cli(["report", "from-junit", str(tmp_path / "j.xml"), "-o", str(tmp_path / "back.json")]) == 0
    assert load_report(tmp_path / "back.json") == make_report()


def test_from_junit_reads_pytests_own_xml(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_sample="""
        import pytest

        def test_ok():
            pass

        def test_bad():
            assert 1 == 2, "numbers differ"

        @pytest.fixture
        def broken():
            raise RuntimeError("setup exploded")

        def test_error(broken):
            pass

        @pytest.mark.skip(reason="not today")
        def test_skip():
            pass

        @pytest.mark.xfail(reason="known")
        def test_xfail():
            assert False

        class TestGroup:
            def test_inner(self):
                pass
        """
    )
    xml = pytester.path / "junit.xml"
    pytester.runpytest("-p", "no:attest", f"--junitxml={xml}", "-o", "junit_family=xunit1")
    report = from_junit(xml)
    by_id = {t["id"]: t for t in report["tests"]}
    assert by_id["test_sample.py::test_ok"]["outcome"] == "passed"
    assert by_id["test_sample.py::test_ok"]["line"] == 3  # the `def` line, counted from 1
    assert by_id["test_sample.py::test_ok"]["file"] == "test_sample.py"
    assert by_id["test_sample.py::test_bad"]["outcome"] == "failed"
    assert "numbers differ" in by_id["test_sample.py::test_bad"]["message"]
    assert by_id["test_sample.py::test_error"]["outcome"] == "error"
    assert by_id["test_sample.py::test_skip"]["outcome"] == "skipped"
    assert by_id["test_sample.py::test_skip"]["reason"] == "not today"
    assert by_id["test_sample.py::test_xfail"]["outcome"] == "xfailed"
    assert by_id["test_sample.py::TestGroup::test_inner"]["outcome"] == "passed"
    assert report["summary"]["environment"]["runner"] == "junit"
    assert report["summary"]["egress"]["mode"] == "off"
    assert report["summary"]["egress"]["isolation_verified"] is False


def test_from_junit_reads_replay_properties_of_another_runner(tmp_path: Path) -> None:
    xml = tmp_path / "vitest.xml"
    xml.write_text(
        textwrap.dedent(
            """\
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites>
              <testsuite name="vitest" tests="2">
                <testcase classname="src/agent.test.ts" name="replays inc-1042" time="0.5" file="src/agent.test.ts">
                  <properties>
                    <property name="attest.replayed" value="3"/>
                    <property name="attest.live" value="0"/>
                    <property name="attest.misses" value="0"/>
                    <property name="attest.fixtures" value="tests/attest/fixtures/inc-1042.attest.json, x.attest.json"/>
                  </properties>
                </testcase>
                <testcase classname="src/agent.test.ts" name="misses" time="0.1">
                  <failure message="replay miss: tools changed (hash 1111111→2222222)">stack</failure>
                  <properties>
                    <property name="attest.replayed" value="0"/>
                    <property name="attest.misses" value="1"/>
                    <property name="attest.miss" value="replay miss: tools changed (hash 1111111→2222222)"/>
                  </properties>
                </testcase>
              </testsuite>
            </testsuites>
            """
        ),
        encoding="utf-8",
    )
    report = from_junit(xml)
    first, second = report["tests"]
    assert first["id"] == "src/agent.test.ts::replays inc-1042"
    assert first["replay"]["fixtures"] == ["tests/attest/fixtures/inc-1042.attest.json", "x.attest.json"]
    assert first["replay"]["replayed"] == 3
    assert second["outcome"] == "failed"
    assert second["replay"]["miss"] == {
        "message": "replay miss: tools changed (hash 1111111→2222222)",
        "component": "tools",
    }
    assert report["summary"]["replay"]["misses"] == 1
    assert report["summary"]["replay"]["replayed"] == 3


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("<testsuites><testsuite>", "not valid XML"),
        ("<html><body/></html>", "not JUnit XML"),
        (
            '<testsuite><testcase name="t"><properties><property name="attest.live" value="many"/>'
            "</properties></testcase></testsuite>",
            "testcase t: property attest.live = 'many' is not a whole number",
        ),
        ('<testsuite><testcase name="t" time="1,5"/></testsuite>', "testcase t: time '1,5' is not a number"),
        (
            '<testsuite><testcase name="t"><properties><property name="attest.fault" value="status=429"/>'
            "</properties></testcase></testsuite>",
            "testcase t: property attest.fault = 'status=429' is not SPEC (request N)",
        ),
        (
            '<testsuite><testcase name="t"><properties><property name="attest.fault" '
            'value="explode (request 1)"/></properties></testcase></testsuite>',
            "testcase t: property attest.fault: --fault 'explode': the kind must be",
        ),
    ],
)
def test_from_junit_malformed_is_one_line_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, problem: str
) -> None:
    xml = tmp_path / "in.xml"
    xml.write_text(content, encoding="utf-8")
    assert cli(["report", "from-junit", str(xml), "-o", str(tmp_path / "out.json")]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"attest: {xml}: ")
    assert problem in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_junit_file_is_readable_by_junitparser_consumers(tmp_path: Path) -> None:
    from junitparser import JUnitXml

    to_junit(make_report(), tmp_path / "j.xml")
    xml = JUnitXml.fromfile(str(tmp_path / "j.xml"))
    assert xml.tests == 7
    assert xml.failures == 1
    assert xml.errors == 1
    assert os.stat(tmp_path / "j.xml").st_mode & 0o777 == 0o644


def test_miss_location_survives_junit(tmp_path: Path) -> None:
    report = make_report(
        [make_test("tests/a.py::t", "failed", replay=replay_facts(0, misses=1, miss=make_miss()))]
    )
    to_junit(report, tmp_path / "j.xml")
    miss = from_junit(tmp_path / "j.xml")["tests"][0]["replay"]["miss"]
    assert miss["location"] == {"file": "agent/refund.py", "line": 42}
    assert miss["component"] == "system"


# --- no secret in a report ------------------------------------------------------------------------

KEY = "sk-proj-" + "R3p0rtK3y" * 3
ECHOED = "X-Custom-Auth: hdr-0b8f2c9e7d"  # a provider echoing a custom auth header back


def leaky_row() -> dict:
    """A row whose every free-form string quotes a credential, as a careless test can make it do."""
    miss = make_miss(f"replay miss: {ECHOED}", "messages", f"agent/{KEY}.py", 3)
    facts = replay_facts(1, misses=1, miss=miss, fixtures=[f"tests/attest/fixtures/{KEY}.attest.json"])
    row = make_test(
        f"tests/test_a.py::test_call[{KEY}]", "failed", message=f"assert {KEY!r} == ''", replay=facts
    )
    row["file"] = f"tests/{KEY}/test_a.py"
    return row


def test_a_built_report_holds_no_credential_in_any_string(tmp_path: Path) -> None:
    # Parametrize ids quote their arguments, paths and messages anything: each goes through redaction.
    skipped = make_test("tests/test_b.py::test_skip", "skipped", message=f"needs {ECHOED}")
    path = write_report(build_report([leaky_row(), skipped], egress=dict(ISOLATED)), tmp_path / "r.json")
    text = path.read_text()
    assert KEY not in text and "hdr-0b8f2c9e7d" not in text
    assert "tests/test_a.py::test_call[{{redacted}}]" in text


def test_a_report_from_junit_holds_no_credential(tmp_path: Path) -> None:
    xml = tmp_path / "junit.xml"
    xml.write_text(
        f'<testsuites><testsuite name="s"><testcase classname="tests.test_a" name="test_call[{KEY}]" time="0.1">'
        f'<failure message="{ECHOED}">postgres://app:pw-0b8f2c9e@db/prod</failure></testcase>'
        f'<testcase classname="tests.test_a" name="test_skip" time="0"><skipped message="cookie: s={KEY}"/>'
        "</testcase></testsuite></testsuites>",
        encoding="utf-8",
    )
    text = json.dumps(from_junit(xml))
    for leak in (KEY, "hdr-0b8f2c9e7d", "pw-0b8f2c9e"):
        assert leak not in text


@pytest.mark.parametrize(
    ("field", "value"),
    [("outcome", KEY), ("duration", KEY), ("line", KEY)],
)
def test_a_schema_error_names_the_pointer_and_the_problem_never_the_value(
    tmp_path: Path, field: str, value: str
) -> None:
    report = make_report()
    report["tests"][1][field] = value
    with pytest.raises(ReportError) as caught:
        load_report(write_json(tmp_path / "r.json", report))
    assert f"invalid at /tests/1/{field}: " in str(caught.value)
    assert KEY not in str(caught.value)
