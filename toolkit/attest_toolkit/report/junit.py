"""JUnit XML in and out, for runners that have no attest plugin (junitparser does the XML).

Replay facts travel as `<properties>` of each `<testcase>`: `attest.replayed`, `attest.live`,
`attest.misses`, `attest.miss` (the miss message), `attest.fixtures` (comma-separated paths, or a JSON
array), `attest.faults` (faults injected) with one `attest.fault` per fault (`SPEC (request N)`, as the
comment names it, so a CI system that shows properties shows which faults a test ran with), and, when
attest wrote the file, `attest.id`, `attest.outcome`, `attest.mode`, `attest.reason`,
`attest.live_cost_usd`, `attest.unpriced` and `attest.miss.*`, so that a report survives a round trip.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal, cast, get_args

import junitparser
from junitparser import xunit2

from ..errors import UsageError
from ..fixtures.document import atomic_write
from ..replay.diagnose import MissKind
from ..replay.faults import parse_fault
from ..replay.modes import Mode, spelled
from .build import (
    OUTCOMES,
    VERSION,
    Report,
    ReportError,
    Test,
    add_unattributed,
    default_environment,
    fault_words,
    redact_tests,
    summarize,
    validate_report,
)
from .model import Replay, ReplayFaultList, ReplayMiss, ReplayMissComponent, ReplayMode, TestOutcome

SUITE_NAME = "attest"
# A JUnit failure message is kept to this many characters in the report, cut once redacted.
JUNIT_MESSAGE_CHARS = 2000
# pytest's `line` attribute counts from 0 (it writes the frame index); report-v2 counts from 1.
ZERO_BASED_LINE_SUITES = frozenset({"pytest"})
# A miss line's words, for a JUnit file that names no component (the seed's wording, see replay.diagnose).
MISS_COMPONENTS = {
    "system prompt changed": MissKind.SYSTEM,
    "messages changed": MissKind.MESSAGES,
    "tools changed": MissKind.TOOLS,
    "params changed": MissKind.PARAMS,
    "model changed": MissKind.MODEL,
    "more model calls than": MissKind.OVERFLOW,
    "extra identical call": MissKind.DUPLICATE,
}
# `attest.fault`'s value: the words `build.fault_words` writes, read back.
FAULT_WORDS = re.compile(r"(?P<fault>.+) \(request (?P<call>[1-9][0-9]*)\)")
# A JUnit file from another runner says nothing about isolation: assume none.
UNKNOWN_EGRESS = {"mode": "off", "isolation_verified": False, "probe": None, "strategy": None}
RUN_PROPERTIES: tuple[Literal["replay", "egress", "environment", "usage", "duration"], ...] = (
    "replay",
    "egress",
    "environment",
    "usage",
    "duration",
)


class _Case(xunit2.TestCase):
    # `file` and `line` are pytest's (xunit1) and several other runners' attributes.
    file = junitparser.Attr()
    line = junitparser.Attr()


class _Suite(xunit2.TestSuite):
    testcase = _Case


class _Xml(xunit2.JUnitXml):
    testsuite = _Suite


class _ReadCase(_Case):
    # Read as text, so that a malformed time is an error naming the test, not a ValueError.
    time = junitparser.Attr()


class _ReadSuite(_Suite):
    testcase = _ReadCase


class _ReadXml(_Xml):
    testsuite = _ReadSuite


# --- reading -------------------------------------------------------------------------------------


def from_junit(path: str | Path) -> Report:
    """A report-v2 from the JUnit XML of any runner: outcomes, messages, file/line, replay facts."""
    path = Path(path)
    tests: list[Test] = []
    counted: list[tuple[list[Test], dict[str, Any]]] = []
    declared: dict[str, Any] = {}  # the run facts a file written by `to_junit` carries
    for suite in _parse(path):
        # junitparser builds each element as the class its parent names: ours, which the stubs cannot know
        suite_tests = [_test(cast(_ReadCase, case), suite.name or "", path) for case in suite]
        tests.extend(suite_tests)
        props = {p.name: p.value for p in suite.properties()}
        for key in RUN_PROPERTIES:
            if f"attest.{key}" in props:
                declared[key] = _json_property(props, f"attest.{key}", path)
        if "attest.replay" in props:
            counted.append((suite_tests, declared["replay"]))
    tests = redact_tests(tests, message_chars=JUNIT_MESSAGE_CHARS)
    summary = summarize(
        tests,
        declared.get("egress", UNKNOWN_EGRESS),
        declared.get("environment") or default_environment(runner="junit"),
        usage=declared.get("usage"),
        duration=declared.get("duration", sum(t["duration"] for t in tests)),
    )
    for suite_tests, replay in counted:
        add_unattributed(summary["replay"], suite_tests, replay)
    report = {"version": VERSION, "tests": tests, "summary": summary}
    return validate_report(report, path)


def _parse(path: Path) -> _ReadXml:
    try:
        return cast(_ReadXml, _ReadXml.fromfile(str(path)))
    except FileNotFoundError:
        raise ReportError("no such JUnit XML file", path) from None
    except IsADirectoryError:
        raise ReportError("is a directory, not a JUnit XML file", path) from None
    except SyntaxError as exc:  # ElementTree's ParseError, or lxml's XMLSyntaxError when lxml is installed
        raise ReportError(f"not valid XML ({exc})", path) from None
    except junitparser.JUnitXmlError:
        raise ReportError(
            "not JUnit XML (the root element is neither <testsuites> nor <testsuite>)", path
        ) from None
    except OSError as exc:
        raise ReportError(f"cannot read: {exc.strerror or exc}", path) from None


def _json_property(props: dict[str, str], name: str, path: Path) -> Any:
    try:
        return json.loads(props[name])
    except (TypeError, json.JSONDecodeError):
        raise ReportError(f"property {name} is not valid JSON", path) from None


def _test(case: _ReadCase, suite_name: str, path: Path) -> Test:
    props = {p.name: p.value or "" for p in case.properties()}
    file = (case.file or "").replace("\\", "/")
    test_id = props.get("attest.id") or _node_id(case.classname or "", case.name or "", file)
    outcome, message, reason = _outcome(case, props)
    test: Test = {
        "id": test_id,
        "file": file,
        "line": _line(case.line, suite_name, test_id, path),
        "outcome": outcome,
        "duration": _duration(case.time, test_id, path),
        "message": message,
    }
    if reason is not None:
        test["reason"] = reason
    faults = [p.value or "" for p in case.properties() if p.name == "attest.fault"]
    replay = _replay(props, faults, test_id, path)
    if replay is not None:
        test["replay"] = replay
    return test


def _node_id(classname: str, name: str, file: str) -> str:
    """pytest's node id when the classname is the file's dotted module path, else `classname::name`."""
    module = file[:-3].replace("/", ".") if file.endswith(".py") else None
    if module and (classname == module or classname.startswith(module + ".")):
        inner = classname[len(module) + 1 :].split(".") if classname != module else []
        return "::".join([file, *inner, name])
    return f"{classname}::{name}" if classname else name


def _duration(raw: str | None, test_id: str, path: Path) -> float:
    try:
        seconds = float(raw or 0)
    except ValueError:
        raise ReportError(f"testcase {test_id}: time {raw!r} is not a number of seconds", path) from None
    return seconds if seconds > 0 and seconds != float("inf") else 0.0


def _line(raw: str | None, suite_name: str, test_id: str, path: Path) -> int | None:
    if raw is None or raw == "":
        return None
    try:
        line = int(raw)
    except ValueError:
        raise ReportError(f"testcase {test_id}: line {raw!r} is not a number", path) from None
    line += 1 if suite_name in ZERO_BASED_LINE_SUITES else 0
    return line if line >= 1 else None


def _outcome(case: _Case, props: dict[str, str]) -> tuple[TestOutcome, str | None, str | None]:
    """(outcome, message, reason) from the testcase's result elements and attest properties."""
    results = case.result
    result: junitparser.Error | junitparser.Failure | junitparser.Skipped | None
    result = next((r for r in results if isinstance(r, junitparser.Error)), None)
    result = result or next((r for r in results if isinstance(r, junitparser.Failure)), None)
    result = result or next((r for r in results if isinstance(r, junitparser.Skipped)), None)
    text = _message(result) if result is not None else None
    reason = props.get("attest.reason")
    declared = props.get("attest.outcome")
    if declared in OUTCOMES:
        # attest wrote this file: the reason, when there was one, is in its own property.
        return cast(TestOutcome, declared), text if declared in {"failed", "error"} else None, reason
    if isinstance(result, junitparser.Error):
        return "error", text, reason
    if isinstance(result, junitparser.Failure):
        return "failed", text, reason
    if isinstance(result, junitparser.Skipped):
        if (result.type or "") == "pytest.xfail":
            return "xfailed", None, reason or text
        if reason or (text or "").startswith("not_evaluated"):
            return "not_evaluated", None, reason or _reason(text)
        return "skipped", None, text
    return "passed", None, reason


def _reason(text: str | None) -> str | None:
    # The seed's wording is `not_evaluated: replay_miss`; the reason is the part after the colon.
    if text and text.startswith("not_evaluated"):
        return text.partition(":")[2].strip() or None
    return text


def _message(result: junitparser.Error | junitparser.Failure | junitparser.Skipped) -> str | None:
    """The failure message as one paragraph: the message attribute, else the text's first paragraph."""
    raw = result.message or (result.text or "").strip().split("\n\n", 1)[0]
    return " ".join(raw.split()) or None  # cut to JUNIT_MESSAGE_CHARS once redacted


def _int_property(props: dict[str, str], name: str, test_id: str, path: Path) -> int:
    raw = props.get(name, "0") or "0"
    try:
        value = int(raw)
    except ValueError:
        raise ReportError(
            f"testcase {test_id}: property {name} = {raw!r} is not a whole number", path
        ) from None
    if value < 0:
        raise ReportError(f"testcase {test_id}: property {name} is negative", path)
    return value


_COUNTED = ("replayed", "live", "misses")  # the counts every replaying testcase carries


def _replay(props: dict[str, str], faults: list[str], test_id: str, path: Path) -> Replay | None:
    if not any(name.startswith("attest.") and name not in _NON_REPLAY for name in props):
        return None
    fixtures, mode = _fixtures(props.get("attest.fixtures", "")), props.get("attest.mode") or "strict"
    replayed, live, misses = (_int_property(props, f"attest.{k}", test_id, path) for k in _COUNTED)
    if mode not in get_args(ReplayMode):
        raise ReportError(f"testcase {test_id}: property attest.mode = {mode!r} is not {spelled(Mode)}", path)
    replay: Replay = {
        "fixtures": fixtures,
        "mode": cast(ReplayMode, mode),  # one of them, checked just above
        "replayed": replayed,
        "live": live,
        "misses": misses,
    }
    if "attest.unpriced" in props:
        replay["unpriced"] = _int_property(props, "attest.unpriced", test_id, path)
    if "attest.live_cost_usd" in props:
        replay["live_cost_usd"] = _cost(props["attest.live_cost_usd"], test_id, path)
    if props.get("attest.miss"):
        replay["miss"] = _miss(props, test_id, path)
    if "attest.faults" in props or faults:
        replay["faults"] = _int_property(props, "attest.faults", test_id, path) or len(faults)
        replay["fault_list"] = [_fault(words, test_id, path) for words in faults]
    return replay


def _fault(words: str, test_id: str, path: Path) -> ReplayFaultList:
    """One `attest.fault` property, `SPEC (request N)`, as report-v2's fault: its kind is its SPEC's."""
    found = FAULT_WORDS.fullmatch(words)
    if not found:
        raise ReportError(
            f"testcase {test_id}: property attest.fault = {words!r} is not SPEC (request N)", path
        )
    try:
        kind = parse_fault(found["fault"]).kind
    except UsageError as exc:
        raise ReportError(f"testcase {test_id}: property attest.fault: {exc}", path) from None
    return {"call": int(found["call"]), "fault": found["fault"], "kind": kind}


_NON_REPLAY = frozenset({"attest.id", "attest.outcome", "attest.reason"})


def _fixtures(raw: str) -> list[str]:
    raw = raw.strip()
    if raw.startswith("["):
        try:
            return [str(v) for v in json.loads(raw)]
        except json.JSONDecodeError:
            pass
    return [part.strip() for part in raw.split(",") if part.strip()]


def _cost(raw: str, test_id: str, path: Path) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ReportError(
            f"testcase {test_id}: property attest.live_cost_usd = {raw!r} is not a number", path
        ) from None
    if value < 0 or value != value:
        raise ReportError(f"testcase {test_id}: property attest.live_cost_usd is not a cost", path)
    return value


def _miss(props: dict[str, str], test_id: str, path: Path) -> ReplayMiss:
    message = props["attest.miss"]
    named = props.get("attest.miss.component")
    # A component no miss has fails the report's validation, which every read report goes through.
    component = cast(ReplayMissComponent, named) if named else _component_of(message)
    miss: ReplayMiss = {"message": message, "component": component}
    if props.get("attest.miss.fixture"):
        miss["fixture"] = props["attest.miss.fixture"]
    if props.get("attest.miss.location"):
        file, _, line = props["attest.miss.location"].rpartition(":")
        miss["location"] = {"file": file, "line": int(line) if line.isdigit() and int(line) > 0 else None}
    return miss


def _component_of(message: str) -> ReplayMissComponent:
    kind = next((comp for words, comp in MISS_COMPONENTS.items() if words in message), MissKind.ENDPOINT)
    return cast(ReplayMissComponent, kind.value)


# --- writing -------------------------------------------------------------------------------------


def to_junit(report: Report, path: str | Path) -> Path:
    """Write the report as JUnit XML (atomically), with the properties `from_junit` reads back."""
    path = Path(path)
    suite = _Suite(SUITE_NAME)
    summary = report["summary"]
    for key in RUN_PROPERTIES:
        if key in summary:
            suite.add_property(f"attest.{key}", json.dumps(summary[key], sort_keys=True))
    suite.add_testcases([_case(test) for test in report["tests"]])
    xml = _Xml()
    xml.add_testsuite(suite)
    xml.update_statistics()
    text = xml.tostring().decode("utf-8")
    atomic_write(path, '<?xml version="1.0" encoding="utf-8"?>\n' + text + "\n", mode=0o644)
    return path


def _case(test: Test) -> _Case:
    classname, _, name = test["id"].rpartition("::")
    case = _Case(name=name or test["id"], classname=classname or test["file"], time=test["duration"])
    if test["file"]:
        case.file = test["file"]
    if test.get("line"):
        case.line = str(test["line"])
    _set_result(case, test)
    for key, value in _properties(test):
        case.add_property(key, value)
    return case


def _set_result(case: _Case, test: Test) -> None:
    outcome, message = test["outcome"], test.get("message") or ""
    if outcome == "failed":
        case.result = [junitparser.Failure(message)]
    elif outcome == "error":
        case.result = [junitparser.Error(message)]
    elif outcome == "skipped":
        case.result = [junitparser.Skipped(test.get("reason"))]
    elif outcome == "xfailed":
        case.result = [junitparser.Skipped(test.get("reason"), "pytest.xfail")]
    elif outcome == "not_evaluated":
        reason = test.get("reason") or "replay_miss"
        case.result = [junitparser.Skipped(f"not_evaluated: {reason}", "attest.not_evaluated")]


def _properties(test: Test) -> list[tuple[str, str]]:
    props = [("attest.id", test["id"]), ("attest.outcome", test["outcome"])]
    reason = test.get("reason")
    if reason:
        props.append(("attest.reason", reason))
    replay = test.get("replay")
    if not replay:
        return props
    fixtures = replay["fixtures"]
    joined = json.dumps(fixtures) if any("," in f for f in fixtures) else ",".join(fixtures)
    props += [("attest.fixtures", joined), ("attest.mode", replay["mode"])]
    props += [(f"attest.{key}", str(replay[key])) for key in ("replayed", "live", "misses")]
    props += [(f"attest.{key}", repr(replay[key])) for key in ("live_cost_usd", "unpriced") if key in replay]
    if "faults" in replay:
        props.append(("attest.faults", str(replay["faults"])))
    props += [("attest.fault", fault_words(f)) for f in replay.get("fault_list") or []]
    miss = replay.get("miss")
    if miss:
        props += [("attest.miss", miss["message"]), ("attest.miss.component", miss["component"])]
        if miss.get("fixture"):
            props.append(("attest.miss.fixture", miss["fixture"]))
        if miss.get("location"):
            loc = miss["location"]
            props.append(("attest.miss.location", f"{loc['file']}:{loc['line'] or ''}"))
    return props
