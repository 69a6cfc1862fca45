"""`--fault SPEC` parsed into a plan (replay.faults), and each provider's own error for a status."""

from __future__ import annotations

from typing import get_args

import pytest
from attest_toolkit.errors import UsageError
from attest_toolkit.providers import status_error
from attest_toolkit.replay.faults import Fault, SessionFaults, parse_fault


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("status=429", Fault("status=429", "status", 429, 1)),
        ("call=2:status=529,retry-after=3", Fault("call=2:status=529,retry-after=3", "status", 529, 2, 3)),
        ("every:timeout", Fault("every:timeout", "timeout", 0, None)),
        ("disconnect", Fault("disconnect", "disconnect", 0, 1)),
        ("cut=3", Fault("cut=3", "cut", 3, 1)),
        ("call=1:latency=250", Fault("call=1:latency=250", "latency", 250, 1)),
        ("every:pace=20", Fault("every:pace=20", "pace", 20, None)),
    ],
)
def test_a_spec_is_its_selector_kind_and_parameters(spec: str, expected: Fault) -> None:
    assert parse_fault(spec) == expected


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("status=418", "status must be one of 429, 500, 502, 503, 504, 529, not 418"),
        ("status", "status needs a value"),
        ("timeout=5", "timeout takes no value"),
        ("call=0:timeout", "call=N counts from 1"),
        ("first:timeout", "the selector must be call=N or every"),
        ("cut=three", "cut must be a whole number, not 'three'"),
        ("latency=5,retry-after=1", "unknown parameter 'retry-after=1'"),
        ("explode", "the kind must be status=CODE, timeout, disconnect, cut=K, latency=MS or pace=MS"),
    ],
)
def test_a_bad_spec_is_one_line_naming_it(spec: str, problem: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_fault(spec)
    assert str(raised.value).startswith(f"--fault {spec!r}: {problem}")
    assert "\n" not in str(raised.value) and raised.value.exit_code == 3


def test_every_request_is_counted_and_meets_the_first_fault_that_applies() -> None:
    faults = SessionFaults([parse_fault("call=2:status=500"), parse_fault("every:latency=1")])
    met = [faults.next_request() for _ in range(3)]
    assert [f.kind if f else None for f in met] == ["latency", "status", "latency"]


@pytest.mark.parametrize(
    ("provider", "status", "body", "headers"),
    [
        ("openai", 429, {"type": "requests", "code": "rate_limit_exceeded"}, {}),
        ("openai", 500, {"type": "server_error", "code": None}, {}),
        ("azure", 429, {"type": "requests", "code": "rate_limit_exceeded"}, {}),
        ("groq", 503, {"type": "server_error", "code": None}, {}),
        ("anthropic", 429, {"type": "rate_limit_error"}, {}),
        ("anthropic", 529, {"type": "overloaded_error"}, {}),
        ("anthropic", 500, {"type": "api_error"}, {}),
        ("gemini", 429, {"status": "RESOURCE_EXHAUSTED", "code": 429}, {}),
        ("gemini", 503, {"status": "UNAVAILABLE", "code": 503}, {}),
        ("vertex", 429, {"status": "RESOURCE_EXHAUSTED", "code": 429}, {}),
    ],
)
def test_each_provider_answers_a_status_in_its_own_shape(
    provider: str, status: int, body: dict, headers: dict
) -> None:
    got, got_headers = status_error(provider, status, "boom")
    assert {k: got["error"][k] for k in body} == body
    assert got["error"]["message"] == "boom"
    assert got_headers == headers


@pytest.mark.parametrize(
    ("status", "kind"), [(429, "ThrottlingException"), (503, "ServiceUnavailableException")]
)
def test_bedrock_names_its_exception_in_x_amzn_errortype(status: int, kind: str) -> None:
    body, headers = status_error("bedrock", status, "boom")
    assert body == {"message": "boom"}
    assert headers["x-amzn-ErrorType"].split(":")[0] == kind


def test_the_kinds_are_the_ones_report_v2_spells() -> None:
    from attest_toolkit.replay.faults import Kind
    from attest_toolkit.report.model import ReplayFaultListKind

    assert get_args(Kind) == get_args(ReplayFaultListKind)
