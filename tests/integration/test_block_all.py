"""`--attest-egress=block-all`: every host but loopback and `--attest-allowed-hosts` is refused from the
test process (pytest-recording's --block-network), provider hosts always."""

from __future__ import annotations

import socket

import pytest
from attest_toolkit.guard import scope
from conftest import scrub


def outbound_address() -> str | None:
    """This machine's non-loopback address (a UDP connect picks the route and sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 9))
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else address


TEST = """
import http.server, threading, urllib.request, pytest

@pytest.fixture
def server():
    httpd = http.server.HTTPServer(("0.0.0.0", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()

def fetch(url):
    try:
        return urllib.request.urlopen(url, timeout=10).status
    except Exception as exc:
        return repr(exc)

def test_hosts(server):
    print("\\n@loopback", fetch(f"http://127.0.0.1:{server}/"))
    print("\\n@localhost", fetch(f"http://localhost:{server}/"))
    print("\\n@address", fetch(f"http://ADDRESS:{server}/"))
    print("\\n@named", fetch("http://webhook.example.invalid/hook"))
    print("\\n@provider", fetch("https://api.openai.com/v1/models"))
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    scrub(monkeypatch)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    address = outbound_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to connect to")
    pytester.makepyfile(test_hosts=TEST.replace("ADDRESS", address))
    return pytester


def lines(result: pytest.RunResult) -> dict[str, str]:
    """What each fetch printed (`@what result` lines)."""
    pairs = (line[1:].split(" ", 1) for line in result.outlines if line.startswith("@"))
    return {what: seen for what, seen in pairs if what in WHAT}


WHAT = ("loopback", "localhost", "address", "named", "provider")


def test_block_all_leaves_only_loopback(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-s", "--attest-egress=block-all")
    result.assert_outcomes(passed=1)
    seen = lines(result)
    assert seen["loopback"] == "200" and seen["localhost"] == "200"
    assert "attest egress guard: connection to " in seen["address"] and "blocked" in seen["address"]
    assert "attest egress guard: connection to webhook.example.invalid:80 blocked" in seen["named"]
    assert "attest egress guard: connection to api.openai.com:443 blocked" in seen["provider"]


def test_allowed_hosts_reach_through_but_a_provider_never_does(suite: pytest.Pytester) -> None:
    address = outbound_address()
    result = suite.runpytest_subprocess(
        "-s", "--attest-egress=block-all", f"--attest-allowed-hosts={address},api.openai.com"
    )
    result.assert_outcomes(passed=1)
    seen = lines(result)
    assert seen["address"] == "200" and seen["loopback"] == "200"
    assert "attest egress guard: connection to webhook.example.invalid:80 blocked" in seen["named"]
    assert "attest egress guard: connection to api.openai.com:443 blocked" in seen["provider"]


def test_plain_block_leaves_other_hosts_alone(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-s", "--attest-egress=block")
    result.assert_outcomes(passed=1)
    seen = lines(result)
    assert seen["address"] == "200"
    assert "attest egress guard: connection to api.openai.com:443 blocked" in seen["provider"]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("LOCALHOST.", True),
        ("127.0.0.5", True),
        ("[::1]", True),
        ("10.0.0.1", False),
        ("example.com", False),
        ("app.localhost", True),
    ],
)
def test_loopback_names(host: str, loopback: bool) -> None:
    assert scope.is_loopback(host) is loopback


def test_hosts_parse_like_pytest_recording() -> None:
    assert scope.parse_hosts("a.example, B.example.,[::1],") == {"a.example", "b.example", "::1"}
