"""Every ATTEST_<NAME>_UPSTREAM the provider registry names is checked before anything runs: a value
that is not an http(s) URL with a host is one line naming the variable, never a failed call later."""

from __future__ import annotations

import pytest
from attest_toolkit.errors import UsageError
from attest_toolkit.providers import PROVIDERS
from attest_toolkit.providers.env import UPSTREAM_VARS, check_upstreams

BAD = [
    (
        "127.0.0.1:8765",
        "must be a URL starting with http:// or https://, not '127.0.0.1:8765': write "
        "http://127.0.0.1:8765 or https://127.0.0.1:8765",
    ),
    (
        "localhost:8765",
        "must be a URL starting with http:// or https://, not 'localhost:8765': write "
        "http://localhost:8765 or https://localhost:8765",
    ),
    (
        "ftp://gateway.internal",
        "must be a URL starting with http:// or https://, not 'ftp://gateway.internal'",
    ),
    ("http://127.0.0.1:port", "has a port that is not a number from 0 to 65535: 'http://127.0.0.1:port'"),
    ("http:///v1", "names no host: 'http:///v1'"),
    ("https://me:sk-secret@:99999", "has a port that is not a number from 0 to 65535: the value"),
]


def test_the_variables_are_the_registrys():
    assert set(UPSTREAM_VARS) == {p.upstream_var for p in PROVIDERS.values() if p.upstream_var}
    assert {"ATTEST_OPENAI_UPSTREAM", "ATTEST_ANTHROPIC_UPSTREAM", "ATTEST_BEDROCK_UPSTREAM"} <= set(
        UPSTREAM_VARS
    )


@pytest.mark.parametrize("var", UPSTREAM_VARS)
@pytest.mark.parametrize(("value", "problem"), BAD)
def test_a_bad_upstream_is_one_line_naming_its_variable(var, value, problem):
    with pytest.raises(UsageError) as raised:
        check_upstreams({var: value})
    assert str(raised.value) == f"{var} {problem}"
    assert raised.value.exit_code == 3
    assert "sk-secret" not in str(raised.value)


@pytest.mark.parametrize(
    "value", ["http://127.0.0.1:8765", "https://gateway.example/v1/", " http://localhost "]
)
def test_a_url_with_a_scheme_and_a_host_passes(value):
    check_upstreams(dict.fromkeys(UPSTREAM_VARS, value))
