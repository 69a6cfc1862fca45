"""The egress guard: provider connections fail before anything leaves; loopback and other hosts pass.

Nothing here can reach the network even if the guard were broken: name lookups go to a stub that
answers with loopback, direct connects by name go to a stub that refuses, and proxies are fake
servers on 127.0.0.1 that record what they receive.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
import requests
from attest_toolkit import guard
from attest_toolkit.guard import EgressBlockedError

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
HTTPS_PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
HTTP_PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy")

BLOCKED_SAMPLES = (
    "api.openai.com",
    "api.anthropic.com",
    "generativelanguage.googleapis.com",
    "aiplatform.googleapis.com",
    "us-central1-aiplatform.googleapis.com",
    "europe-west4-aiplatform.googleapis.com",
    "aiplatform.eu.rep.googleapis.com",
    "my-resource.openai.azure.com",
    "contoso-eastus2.openai.azure.com",
    "bedrock-runtime.us-east-1.amazonaws.com",
    "bedrock-runtime.eu-central-1.amazonaws.com",
    "api.mistral.ai",
    "api.groq.com",
    "openrouter.ai",
    "api.together.xyz",
    "api.together.ai",
    "api.deepseek.com",
    "API.OpenAI.COM",
    "api.anthropic.com.",
    "eu.api.openai.com",
    "us.api.openai.com",
    "my-resource.cognitiveservices.azure.com",
    "my-project.services.ai.azure.com",
    "bedrock-runtime-fips.us-east-1.amazonaws.com",
    "bedrock-agent-runtime.us-east-1.amazonaws.com",
    "bedrock-agent-runtime-fips.us-west-2.amazonaws.com",
    "bedrock-runtime.cn-north-1.amazonaws.com.cn",
    "bedrock-agent-runtime.cn-northwest-1.amazonaws.com.cn",
    "api.eu.mistral.ai",
    "api.us.mistral.ai",
    # dual-stack endpoints (botocore's ruleset with use_dualstack_endpoint), FIPS too, both partitions
    "bedrock-runtime.us-east-1.api.aws",
    "bedrock-runtime-fips.us-east-1.api.aws",
    "bedrock-agent-runtime.eu-west-1.api.aws",
    "bedrock-agent-runtime-fips.us-west-2.api.aws",
    "bedrock-runtime.cn-north-1.api.amazonwebservices.com.cn",
)

ALLOWED_SAMPLES = (
    "localhost",
    "127.0.0.1",
    "example.com",
    "openai.com",
    "platform.openai.com",
    "api.openai.com.example.net",
    "notapi.openai.com",
    "openai.azure.com",
    "googleapis.com",
    "storage.googleapis.com",
    "bedrock.us-east-1.amazonaws.com",
    "bedrock-runtime.amazonaws.com",
    "s3.us-east-1.amazonaws.com",
    "mistral.ai",
    "groq.com",
    "together.ai",
    "api.together.com",
    "cognitiveservices.azure.com",
    "ai.azure.com",
    "bedrock-runtime-fips.amazonaws.com",
    "bedrock-agent.us-east-1.amazonaws.com",
    "bedrock-agent-runtime.amazonaws.com.cn",
    "s3.cn-north-1.amazonaws.com.cn",
    "bedrock-runtime.us-east-1.amazonaws.com.cn.example.net",
    "api.aws",
    "bedrock-runtime.api.aws",
    "bedrock.us-east-1.api.aws",
    "s3.dualstack.us-east-1.amazonaws.com",
    "bedrock-runtime.us-east-1.api.aws.example.net",
    "bedrock-runtime.cn-north-1.api.amazonwebservices.com",
)

CHAT_COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4.1",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
}


# --- stand-ins for the network -------------------------------------------------------------------


class LoopbackResolver:
    """Stands in for DNS: records every name asked and answers every one of them with loopback."""

    def __init__(self, real: Callable[..., Any]) -> None:
        self.real = real
        self.asked: list[str] = []

    def __call__(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        self.asked.append(name)
        return self.real("127.0.0.1", port, *args, **kwargs)


class RecordingServer:
    """A TCP server on 127.0.0.1 that records every byte it receives, one thread per connection."""

    def __init__(self, session: Callable[[socket.socket, RecordingServer], None]) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.allowed: set[str] = set()  # CONNECT targets a fake proxy answers with 200
        self._session = session
        self._chunks: list[bytes] = []
        self._lock = threading.Lock()
        self._sessions: list[threading.Thread] = []
        self._stop_port: int | None = None
        self._acceptor = threading.Thread(target=self._accept_all, daemon=True)
        self._acceptor.start()

    def record(self, chunk: bytes) -> None:
        with self._lock:
            self._chunks.append(chunk)

    def transcript(self) -> bytes:
        """Everything received, once every client has closed its connection."""
        self.stop()
        return b"".join(self._chunks)

    def stop(self) -> None:
        if self._acceptor.is_alive():
            # A last connection from a known port ends the accept loop. Connections are accepted in
            # the order they were made, so every earlier client has been taken in by then.
            with socket.socket() as last:
                last.bind(("127.0.0.1", 0))
                self._stop_port = last.getsockname()[1]
                last.connect(("127.0.0.1", self.port))
            self._acceptor.join()
        for session in self._sessions:
            session.join()  # ends when its client closes
        self._listener.close()

    def _accept_all(self) -> None:
        while True:
            conn, (_, port) = self._listener.accept()
            if port == self._stop_port:
                conn.close()
                return
            session = threading.Thread(target=self._run_session, args=(conn,), daemon=True)
            session.start()
            self._sessions.append(session)

    def _run_session(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)  # a bound in case a client never closes; not a synchronisation
            with contextlib.suppress(OSError):  # a client that resets the connection
                self._session(conn, self)


def proxy_session(conn: socket.socket, server: RecordingServer) -> None:
    """An HTTP proxy that records requests and forwards nothing.

    An allowed CONNECT gets 200 and the tunnel is recorded; any other CONNECT gets 403 and any
    other request 502, and the connection stays open for whatever the client sends next.
    """
    pending, tunnel = b"", False
    while chunk := conn.recv(65536):
        server.record(chunk)
        if tunnel:
            continue
        pending += chunk
        while not tunnel and b"\r\n\r\n" in pending:
            head, _, pending = pending.partition(b"\r\n\r\n")
            tunnel = _answer(conn, server, head.split(b"\r\n", 1)[0].split())


def silent_session(conn: socket.socket, server: RecordingServer) -> None:
    """Records what the client sends and answers nothing: a client that closes without reading (a
    blocked one cannot read) then ends with a FIN, where unread answers would make it a reset, which
    drops whatever the server had not read yet."""
    while chunk := conn.recv(65536):
        server.record(chunk)


def _answer(conn: socket.socket, server: RecordingServer, request_line: list[bytes]) -> bool:
    if request_line[:1] == [b"CONNECT"]:
        if len(request_line) > 1 and request_line[1].decode() in server.allowed:
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            return True
        conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
    else:
        conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
    return False


def echo_session(conn: socket.socket, server: RecordingServer) -> None:
    while chunk := conn.recv(65536):
        server.record(chunk)
        conn.sendall(chunk)


class ChatCompletionHandler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.dumps(CHAT_COMPLETION).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


# --- fixtures ---------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No proxy or SDK settings from the machine; and no test may leave the guard on."""
    for name in (*PROXY_VARIABLES, "NO_PROXY", "no_proxy", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    yield
    leaked = guard.installed()
    while guard.installed():
        guard.uninstall()
    assert not leaked, "a test left the egress guard installed"


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> LoopbackResolver:
    """Replaces the real resolver before the guard wraps it, so a lookup the guard misses is seen."""
    stub = LoopbackResolver(socket.getaddrinfo)
    monkeypatch.setattr(socket, "getaddrinfo", stub)
    return stub


@pytest.fixture
def refused_connects(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Replaces connect/connect_ex before the guard wraps them: records and never touches the network."""
    calls: list[Any] = []

    def connect(self: socket.socket, address: Any) -> None:
        calls.append(address)
        raise ConnectionRefusedError("test stand-in: connect never reaches the network")

    def connect_ex(self: socket.socket, address: Any) -> int:
        calls.append(address)
        return 111

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    return calls


@pytest.fixture
def proxy() -> Iterator[RecordingServer]:
    server = RecordingServer(proxy_session)
    yield server
    server.stop()


@pytest.fixture
def echo() -> Iterator[RecordingServer]:
    server = RecordingServer(echo_session)
    yield server
    server.stop()


@pytest.fixture
def chat_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ChatCompletionHandler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture(params=PROXY_VARIABLES)
def proxy_variable(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, proxy: RecordingServer
) -> str:
    monkeypatch.setenv(request.param, f"http://127.0.0.1:{proxy.port}")
    return request.param


# --- helpers ----------------------------------------------------------------------------------------


def egress_error_in(exc: BaseException) -> EgressBlockedError | None:
    """The EgressBlockedError in an exception's cause/context chain (or exception group), if any."""
    stack, seen = [exc], set()
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, EgressBlockedError):
            return current
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        stack.extend(getattr(current, "exceptions", ()))
    return None


def blocked_message(host: str, port: int) -> str:
    return f"attest egress guard: connection to {host}:{port} blocked"


def read_response_head(sock: socket.socket) -> bytes:
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, "the proxy closed the connection"
        head += chunk
    return head


def receive_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "the server closed the connection"
        data += chunk
    return data


def call_sdk(sdk: str, mode: str, **options: Any) -> BaseException:
    """Make one model call with an official SDK and return the exception it raised."""
    options = {"api_key": "test-key", "max_retries": 0, "timeout": 5.0, **options}
    try:
        if mode == "sync":
            _call_sync(sdk, options)
        else:
            asyncio.run(_call_async(sdk, options))
    except Exception as exc:
        return exc
    raise AssertionError(f"the {mode} {sdk} call succeeded")


def _call_sync(sdk: str, options: dict[str, Any]) -> Any:
    if sdk == "openai":
        with openai.OpenAI(**options) as client:
            return client.chat.completions.create(
                model="gpt-4.1", messages=[{"role": "user", "content": "hi"}]
            )
    with anthropic.Anthropic(**options) as client:
        return client.messages.create(
            model="claude-sonnet-5", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
        )


async def _call_async(sdk: str, options: dict[str, Any]) -> Any:
    if sdk == "openai":
        async with openai.AsyncOpenAI(**options) as client:
            return await client.chat.completions.create(
                model="gpt-4.1", messages=[{"role": "user", "content": "hi"}]
            )
    async with anthropic.AsyncAnthropic(**options) as client:
        return await client.messages.create(
            model="claude-sonnet-5", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
        )


SDK_CASES = [(sdk, mode) for sdk in ("openai", "anthropic") for mode in ("sync", "async")]
SDK_DEFAULT_HOSTS = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}


# --- the host list ----------------------------------------------------------------------------------


@pytest.mark.parametrize("host", BLOCKED_SAMPLES)
def test_listed_provider_hosts_are_blocked(host: str) -> None:
    assert guard.is_blocked_host(host)


@pytest.mark.parametrize("host", ALLOWED_SAMPLES)
def test_other_hosts_are_not_blocked(host: str) -> None:
    assert not guard.is_blocked_host(host)


def test_the_error_is_a_connection_error_with_the_seed_wording() -> None:
    error = EgressBlockedError("api.openai.com", 443)
    assert isinstance(error, ConnectionError)
    assert str(error) == "attest egress guard: connection to api.openai.com:443 blocked"


# --- direct connections -----------------------------------------------------------------------------


@pytest.mark.parametrize("host", BLOCKED_SAMPLES)
def test_lookup_of_a_provider_fails_before_any_dns_query(host: str, resolver: LoopbackResolver) -> None:
    with guard.blocking(), pytest.raises(EgressBlockedError) as caught:
        socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
    assert str(caught.value) == blocked_message(host, 443)
    assert resolver.asked == []


def test_lookup_by_idna_bytes_is_blocked_too(resolver: LoopbackResolver) -> None:
    # anyio (the async SDKs' transport) resolves IDNA-encoded bytes.
    with guard.blocking(), pytest.raises(EgressBlockedError):
        socket.getaddrinfo(b"api.openai.com", 443)
    assert resolver.asked == []


@pytest.mark.parametrize("host", BLOCKED_SAMPLES)
@pytest.mark.parametrize("method", ["connect", "connect_ex"])
def test_connect_by_provider_name_fails_before_connecting(
    host: str, method: str, refused_connects: list[Any]
) -> None:
    with guard.blocking(), socket.socket() as sock, pytest.raises(EgressBlockedError) as caught:
        getattr(sock, method)((host, 443))
    assert str(caught.value) == blocked_message(host, 443)
    assert refused_connects == []


def test_create_connection_to_a_provider_is_blocked(resolver: LoopbackResolver) -> None:
    with guard.blocking(), pytest.raises(EgressBlockedError):
        socket.create_connection(("api.mistral.ai", 443), timeout=5)
    assert resolver.asked == []


def test_loopback_and_other_hosts_pass(echo: RecordingServer, resolver: LoopbackResolver) -> None:
    with guard.blocking():
        for host in ("127.0.0.1", "localhost", "models.example.test"):
            with socket.create_connection((host, echo.port), timeout=5) as sock:
                greeting = f"hello {host}\n".encode()
                sock.sendall(greeting)
                assert receive_exactly(sock, len(greeting)) == greeting
    assert "models.example.test" in resolver.asked
    assert b"hello models.example.test" in echo.transcript()


def test_a_literal_ip_is_not_caught(refused_connects: list[Any]) -> None:
    """Documented limit: the guard matches names, so the address a provider name stands for passes."""
    with guard.blocking():
        with socket.socket() as sock, pytest.raises(EgressBlockedError):
            sock.connect(("api.openai.com", 443))
        with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
            sock.connect(("127.0.0.1", 443))  # reached the (stand-in) connect: not caught
    assert refused_connects == [("127.0.0.1", 443)]


@pytest.mark.parametrize(("sdk", "mode"), SDK_CASES)
def test_official_sdks_with_default_base_url_fail_with_the_guard_error(
    sdk: str, mode: str, resolver: LoopbackResolver
) -> None:
    with guard.blocking():
        raised = call_sdk(sdk, mode)
    error = egress_error_in(raised)
    assert error is not None, f"no EgressBlockedError behind {raised!r}"
    assert str(error) == blocked_message(SDK_DEFAULT_HOSTS[sdk], 443)
    assert resolver.asked == []


@pytest.mark.parametrize(
    ("config", "host"),
    [
        ({"use_dualstack_endpoint": True}, "bedrock-runtime.us-east-1.api.aws"),
        (
            {"use_dualstack_endpoint": True, "use_fips_endpoint": True},
            "bedrock-runtime-fips.us-east-1.api.aws",
        ),
    ],
)
def test_a_dual_stack_bedrock_client_fails_with_the_guard_error(
    config: dict[str, bool], host: str, resolver: LoopbackResolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    import boto3
    from botocore.config import Config

    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(var, raising=False)
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="AKIA" + "ATTESTTESTKEY123",
        aws_secret_access_key="not-a-secret",
        config=Config(retries={"max_attempts": 1}, **config),
    )
    message = {"role": "user", "content": [{"text": "hi"}]}
    with guard.blocking(), pytest.raises(Exception) as raised:
        client.converse(modelId="us.amazon.nova-pro-v1:0", messages=[message])
    error = egress_error_in(raised.value)
    assert error is not None, f"no EgressBlockedError behind {raised.value!r}"
    assert str(error) == blocked_message(host, 443)
    assert resolver.asked == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_sdk_pointed_at_loopback_or_another_host_works(
    mode: str, chat_server: int, resolver: LoopbackResolver
) -> None:
    with guard.blocking():
        for host in ("127.0.0.1", "models.example.test"):
            options = {"api_key": "test-key", "max_retries": 0, "base_url": f"http://{host}:{chat_server}/v1"}
            if mode == "sync":
                completion = _call_sync("openai", options)
            else:
                completion = asyncio.run(_call_async("openai", options))
            assert completion.choices[0].message.content == "ok"


def test_requests_to_a_provider_fail_with_the_guard_error(resolver: LoopbackResolver) -> None:
    with guard.blocking(), pytest.raises(requests.ConnectionError) as caught:
        requests.get("https://api.groq.com/openai/v1/models", timeout=5)
    error = egress_error_in(caught.value)
    assert error is not None and str(error) == blocked_message("api.groq.com", 443)
    assert resolver.asked == []


# --- counted installs -------------------------------------------------------------------------------


def test_installs_are_counted(resolver: LoopbackResolver) -> None:
    guard.install()
    guard.install()
    guard.uninstall()
    assert guard.installed()
    with pytest.raises(EgressBlockedError):
        socket.getaddrinfo("api.openai.com", 443)

    guard.uninstall()
    assert not guard.installed()
    socket.getaddrinfo("api.openai.com", 443)  # reaches the (loopback) resolver: the guard is off
    assert resolver.asked == ["api.openai.com"]
    assert "send" not in vars(socket.socket)  # the C methods are back


def test_blocking_nests_inside_an_install(resolver: LoopbackResolver) -> None:
    guard.install()
    with guard.blocking():
        assert guard.installed()
    assert guard.installed()
    guard.uninstall()
    assert not guard.installed()


def test_uninstall_without_install_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="without a matching install"):
        guard.uninstall()


# --- proxies ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_bytes", "host", "port"),
    [
        # a CONNECT to a provider, blocked before the proxy sees it
        (b"CONNECT api.openai.com:443 HTTP/1.1\r\nHost: api.openai.com:443\r\n\r\n", "api.openai.com", 443),
        # an absolute-form request to a provider
        (b"GET http://api.openai.com/v1/models HTTP/1.1\r\nAccept: */*\r\n\r\n", "api.openai.com", 80),
        # a Host header naming a provider
        (b"GET /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n", "api.anthropic.com", 80),
    ],
    ids=["connect", "absolute-form", "host-header"],
)
def test_a_request_naming_a_provider_is_blocked_before_the_proxy_sees_it(
    proxy_variable: str, proxy: RecordingServer, request_bytes: bytes, host: str, port: int
) -> None:
    with (
        guard.blocking(),
        socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock,
        pytest.raises(EgressBlockedError) as caught,
    ):
        sock.sendall(request_bytes)
    assert str(caught.value) == blocked_message(host, port)
    assert proxy.transcript() == b""


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /v1/messages HTTP/1.1\rHost: api.anthropic.com\r\r",
        b"GET /v1/messages HTTP/1.1\r\nAccept: */*\rHost: api.anthropic.com\r\n\r\n",
    ],
    ids=["bare-cr-lines", "host-behind-a-bare-cr"],
)
def test_a_host_header_behind_a_bare_cr_is_blocked(
    proxy_variable: str, proxy: RecordingServer, request_bytes: bytes
) -> None:
    # Some proxies end a line at a bare CR: the screen must see the Host line they see.
    with (
        guard.blocking(),
        socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock,
        pytest.raises(EgressBlockedError) as caught,
    ):
        sock.sendall(request_bytes)
    assert str(caught.value) == blocked_message("api.anthropic.com", 80)
    assert proxy.transcript() == b""


def test_connect_to_another_host_passes_and_a_tls_prefix_makes_the_guard_opaque(
    proxy_variable: str, proxy: RecordingServer
) -> None:
    proxy.allowed.add("example.com:443")
    connect = b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"
    # What follows a TLS record header is not read (documented limit), even when it is plaintext.
    tunnel = b"\x16\x03\x01\x00\x05hello" + b"GET / HTTP/1.1\r\nHost: api.openai.com\r\n\r\n"
    with guard.blocking(), socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(connect)
        assert read_response_head(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(tunnel)
    assert proxy.transcript() == connect + tunnel


def test_plain_http_after_a_connect_is_screened_again(proxy_variable: str, proxy: RecordingServer) -> None:
    proxy.allowed.add("example.com:80")
    connect = b"CONNECT example.com:80 HTTP/1.1\r\nHost: example.com:80\r\n\r\n"
    allowed = b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"
    with guard.blocking(), socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(connect)
        assert read_response_head(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(allowed)
        with pytest.raises(EgressBlockedError):
            sock.sendall(b"GET / HTTP/1.1\r\nHost: api.openai.com\r\n\r\n")
    assert proxy.transcript() == connect + allowed


def test_a_request_after_a_refused_connect_is_screened_again(
    proxy_variable: str, proxy: RecordingServer
) -> None:
    refused = b"CONNECT internal.example:443 HTTP/1.1\r\nHost: internal.example:443\r\n\r\n"
    with guard.blocking(), socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(refused)
        assert read_response_head(sock).startswith(b"HTTP/1.1 403")
        with pytest.raises(EgressBlockedError):
            sock.sendall(b"CONNECT openrouter.ai:443 HTTP/1.1\r\n\r\n")
    assert proxy.transcript() == refused


@pytest.mark.parametrize(
    ("request_bytes", "message"),
    [
        (b"CONNECT API.OPENAI.COM:443 HTTP/1.1\r\n\r\n", blocked_message("api.openai.com", 443).upper()),
        (b"CONNECT api.openai.com.:443 HTTP/1.1\r\n\r\n", blocked_message("api.openai.com.", 443)),
        (b"CONNECT api.openai.com:443 HTTP/1.1\n\n", blocked_message("api.openai.com", 443)),
        (
            b"GET https://api.anthropic.com/v1/models HTTP/1.1\r\n\r\n",
            blocked_message("api.anthropic.com", 443),
        ),
        (b"GET http://user:pw@api.groq.com:8080/ HTTP/1.1\r\n\r\n", blocked_message("api.groq.com", 8080)),
        (b"GET / HTTP/1.1\r\nHOST:  openrouter.ai:8443 \r\n\r\n", blocked_message("openrouter.ai", 8443)),
        (b"GET / HTTP/1.1\r\nHost: api.mistral.ai:\xb2\r\n\r\n", blocked_message("api.mistral.ai", 80)),
        (
            b"\r\nPOST http://bedrock-runtime.us-west-2.amazonaws.com/model HTTP/1.1\r\n\r\n",
            blocked_message("bedrock-runtime.us-west-2.amazonaws.com", 80),
        ),
    ],
)
def test_request_forms_naming_a_provider_are_blocked(
    request_bytes: bytes, message: str, monkeypatch: pytest.MonkeyPatch, proxy: RecordingServer
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    with (
        guard.blocking(),
        socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock,
        pytest.raises(EgressBlockedError) as caught,
    ):
        sock.sendall(request_bytes)
    assert str(caught.value).lower() == message.lower()
    assert proxy.transcript() == b""


def test_every_send_method_is_screened_and_a_refused_connection_stays_refused(
    monkeypatch: pytest.MonkeyPatch, proxy: RecordingServer, tmp_path: Path
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    upload = tmp_path / "request.txt"
    upload.write_bytes(b"CONNECT api.mistral.ai:443 HTTP/1.1\r\n\r\n")

    def send_file(sock: socket.socket) -> None:
        with upload.open("rb") as request:
            sock.sendfile(request)

    attempts: list[Callable[[socket.socket], object]] = [
        lambda sock: sock.send(b"CONNECT api.openai.com:443 HTTP/1.1\r\n\r\n"),
        lambda sock: sock.sendmsg([b"CONNECT api.", b"anthropic.com:443 HTTP/1.1\r\n\r\n"]),
        send_file,
    ]
    with guard.blocking():
        for attempt in attempts:
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
                with pytest.raises(EgressBlockedError):
                    attempt(sock)
                # A client that answers a failed write by reading a response gets the same error.
                with pytest.raises(EgressBlockedError):
                    sock.recv(1024)
                with pytest.raises(EgressBlockedError):
                    sock.sendall(b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
    assert proxy.transcript() == b""


def test_a_provider_name_split_across_sends_never_reaches_the_proxy_whole(
    monkeypatch: pytest.MonkeyPatch, proxy: RecordingServer
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    with guard.blocking(), socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.send(b"CONNECT api.op")
        with pytest.raises(EgressBlockedError):
            sock.send(b"enai.com:443 HTTP/1.1\r\n\r\n")
    assert b"api.openai.com" not in proxy.transcript()


def test_request_bodies_are_not_read_as_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = RecordingServer(silent_session)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    body = b"GET http://api.openai.com/ HTTP/1.1\r\nHost: api.openai.com\r\n\r\n"
    with_length = (
        b"POST http://uploads.example.test/a HTTP/1.1\r\nHost: uploads.example.test\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    chunked = (
        b"POST http://uploads.example.test/b HTTP/1.1\r\nHost: uploads.example.test\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    )
    with guard.blocking(), socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(with_length)
        sock.sendall(chunked)
        with pytest.raises(EgressBlockedError):  # the next request on the connection is screened
            sock.sendall(b"GET http://api.together.ai/v1/models HTTP/1.1\r\n\r\n")
    assert proxy.transcript() == with_length + chunked


def test_a_proxy_named_by_host_name_is_screened(
    monkeypatch: pytest.MonkeyPatch, proxy: RecordingServer
) -> None:
    monkeypatch.setenv("ALL_PROXY", f"localhost:{proxy.port}")  # no scheme: clients read it as http://
    with (
        guard.blocking(),
        socket.create_connection(("localhost", proxy.port), timeout=5) as sock,
        pytest.raises(EgressBlockedError),
    ):
        sock.sendall(b"CONNECT api.openai.com:443 HTTP/1.1\r\n\r\n")
    assert proxy.transcript() == b""


def test_proxy_variables_are_read_when_the_socket_connects(
    monkeypatch: pytest.MonkeyPatch, proxy: RecordingServer
) -> None:
    request = b"CONNECT api.openai.com:443 HTTP/1.1\r\n\r\n"
    with guard.blocking():
        before = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{proxy.port}")
        with (
            socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as after,
            pytest.raises(EgressBlockedError),
        ):
            after.sendall(request)
        with before:  # connected while no proxy was named: an ordinary connection
            before.sendall(request)
    assert proxy.transcript() == request


def test_other_loopback_servers_are_not_screened(
    monkeypatch: pytest.MonkeyPatch, proxy: RecordingServer, echo: RecordingServer
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    request = b"POST /v1/chat/completions HTTP/1.1\r\nHost: api.openai.com\r\n\r\n"
    with guard.blocking(), socket.create_connection(("127.0.0.1", echo.port), timeout=5) as sock:
        sock.sendall(request)
        assert receive_exactly(sock, len(request)) == request
    assert echo.transcript() == request


@pytest.mark.parametrize(
    ("variable", "scheme"),
    [("ALL_PROXY", "socks5"), ("all_proxy", "socks5h"), ("HTTPS_PROXY", "https")],
)
def test_socks_and_https_proxies_are_not_inspected(
    variable: str, scheme: str, monkeypatch: pytest.MonkeyPatch, proxy: RecordingServer
) -> None:
    """Documented limit: only http:// proxies carry a readable request line."""
    monkeypatch.setenv(variable, f"{scheme}://127.0.0.1:{proxy.port}")
    request = b"GET http://api.openai.com/ HTTP/1.1\r\nHost: api.openai.com\r\n\r\n"
    with guard.blocking(), socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(request)
    assert proxy.transcript() == request


def test_no_proxy_is_not_read(monkeypatch: pytest.MonkeyPatch, proxy: RecordingServer) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("NO_PROXY", "*")
    with (
        guard.blocking(),
        socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock,
        pytest.raises(EgressBlockedError),
    ):
        sock.sendall(b"CONNECT api.openai.com:443 HTTP/1.1\r\n\r\n")
    assert proxy.transcript() == b""


@pytest.mark.parametrize(("sdk", "mode"), SDK_CASES)
def test_an_sdk_honoring_no_proxy_goes_direct_and_is_blocked(
    sdk: str, mode: str, monkeypatch: pytest.MonkeyPatch, proxy: RecordingServer, resolver: LoopbackResolver
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("NO_PROXY", SDK_DEFAULT_HOSTS[sdk])
    with guard.blocking():
        raised = call_sdk(sdk, mode)
    error = egress_error_in(raised)
    assert error is not None and str(error) == blocked_message(SDK_DEFAULT_HOSTS[sdk], 443)
    assert resolver.asked == []
    assert proxy.transcript() == b""


@pytest.mark.parametrize("variable", HTTPS_PROXY_VARIABLES)
@pytest.mark.parametrize(("sdk", "mode"), SDK_CASES)
def test_official_sdks_through_a_proxy_fail_before_the_connect_reaches_it(
    sdk: str,
    mode: str,
    variable: str,
    monkeypatch: pytest.MonkeyPatch,
    proxy: RecordingServer,
    resolver: LoopbackResolver,
) -> None:
    monkeypatch.setenv(variable, f"http://127.0.0.1:{proxy.port}")
    with guard.blocking():
        raised = call_sdk(sdk, mode)
    error = egress_error_in(raised)
    assert error is not None, f"no EgressBlockedError behind {raised!r}"
    assert str(error) == blocked_message(SDK_DEFAULT_HOSTS[sdk], 443)
    assert proxy.transcript() == b""
    assert set(resolver.asked) <= {"127.0.0.1"}  # only the proxy's address was looked up


@pytest.mark.parametrize("variable", HTTP_PROXY_VARIABLES)
@pytest.mark.parametrize(("sdk", "mode"), SDK_CASES)
def test_official_sdks_over_plain_http_through_a_proxy_fail_on_the_request_line(
    sdk: str,
    mode: str,
    variable: str,
    monkeypatch: pytest.MonkeyPatch,
    proxy: RecordingServer,
    resolver: LoopbackResolver,
) -> None:
    monkeypatch.setenv(variable, f"http://127.0.0.1:{proxy.port}")
    host = SDK_DEFAULT_HOSTS[sdk]
    with guard.blocking():
        raised = call_sdk(sdk, mode, base_url=f"http://{host}/v1" if sdk == "openai" else f"http://{host}")
    error = egress_error_in(raised)
    assert error is not None, f"no EgressBlockedError behind {raised!r}"
    assert str(error) == blocked_message(host, 80)
    assert proxy.transcript() == b""
