"""Provider calls that go around a running replay, made loud.

A client built before `attest_replay` (a module-level `OpenAI()`, `genai.Client()` or
`boto3.client("bedrock-runtime")`, as pytest-recording users write it) read the provider's URL when it
was built, so its calls go straight to the provider. While a replay block runs, a request that the
test process's httpx (the official SDKs' HTTP client) sends to a provider host is watched here:

- strict (or auto with live calls off): it never leaves. The agent gets the provider-shaped error a
  miss gets (which the SDKs do not retry), or the egress guard's error when the guard is on, and the
  test fails with one line naming the host and the likely cause.
- auto: it goes out, and is counted as a live call and priced from the provider's answer, like a
  miss the engine forwarded.

Other hosts are untouched (the egress guard decides about them). Clients that do not send through
httpx's default transports are not watched; the egress guard and network isolation cover them.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ..guard.hosts import is_blocked_host
from ..providers import PROVIDERS, provider_for
from .diagnose import MISS_HEADERS, MissKind, miss_body

# Each runner's words for where the client should be built: what starts the replay, and the fix.
RUNNERS = {
    "pytest": ("attest_replay", "build it inside the block"),
    "vitest": ("useReplay", "build it after useReplay"),
}


def _provider(host: str) -> str:
    return provider_for("", host)


def message(host: str, runner: str = "pytest") -> str:
    """The one line a blocked call fails its test with, naming the client of the host's provider."""
    opener, fix = RUNNERS[runner]
    client = PROVIDERS[_provider(host)].clients[runner]
    return (
        f"attest replay: a call to {host} went around the replay; the likely cause is a client built "
        f"before {opener} (a module-level {client} keeps the provider's URL): {fix}"
    )


def refusal_body(host: str, runner: str = "pytest") -> dict[str, Any]:
    """The provider-shaped error a blocked call is answered with (a miss's, which the SDKs do not retry)."""
    return miss_body(_provider(host), message(host, runner))


@dataclass
class Watch:
    """What went around one replay block."""

    fixture: str
    blocks: bool  # strict mode, or live calls off: nothing goes out
    misses: list[dict[str, Any]] = field(default_factory=list)
    live_calls: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_to(self, summary: dict[str, Any]) -> None:
        """Count what went around in the block's summary, as the engine counts misses and live calls."""
        summary["miss_list"] = [*summary.get("miss_list", []), *self.misses]
        summary["misses"] = summary.get("misses", 0) + len(self.misses)
        summary["live_list"] = [*summary.get("live_list", []), *self.live_calls]
        summary["live"] = summary.get("live", 0) + len(self.live_calls)
        costs = [c["cost_usd"] for c in self.live_calls]
        summary["unpriced"] = summary.get("unpriced", 0) + costs.count(None)
        priced = sum(c for c in costs if c is not None)
        summary["live_cost_usd"] = round(summary.get("live_cost_usd", 0.0) + priced, 6)


_watch: Watch | None = None


def start(fixture: str, blocks: bool) -> Watch:
    global _watch
    _watch = Watch(fixture, blocks)
    return _watch


def stop() -> Watch | None:
    global _watch
    watch, _watch = _watch, None
    return watch


def _watched(request: Any) -> Watch | None:
    watch = _watch
    if watch is None or not is_blocked_host(request.url.host):
        return None
    return watch


def send(module: ModuleType, request: Any, forward: Callable[[], Any]) -> Any:
    """httpx's sync transport: `forward()` sends the request as it would have been."""
    watch = _watched(request)
    if watch is None:
        return forward()
    if watch.blocks:
        _count_miss(watch, request)
        return forward() if guard_on() else _refusal(module, request)
    response = forward()
    call = _count_live(watch, request)
    response.stream = _tee_sync(module, response, call)
    return response


async def send_async(module: ModuleType, request: Any, forward: Callable[[], Awaitable[Any]]) -> Any:
    """httpx's async transport, as `send`."""
    watch = _watched(request)
    if watch is None:
        return await forward()
    if watch.blocks:
        _count_miss(watch, request)
        return await forward() if guard_on() else _refusal(module, request)
    response = await forward()
    call = _count_live(watch, request)
    response.stream = _tee_async(module, response, call)
    return response


def guard_on() -> bool:
    """With the egress guard on, the guard refuses the connection in its own words (the test still
    fails with this module's line, the guard's error after it)."""
    from .. import guard

    return guard.installed()


def _count_miss(watch: Watch, request: Any) -> None:
    _count_blocked(watch, request.url.host, "pytest")


def _count_blocked(watch: Watch, host: str, runner: str) -> None:
    _add_miss(watch, message(host, runner), MissKind.BYPASS)


def note_miss(text: str, component: MissKind) -> None:
    """Count a call refused elsewhere in this process (plain HTTP) as the running replay's miss."""
    watch = _watch
    if watch is not None:
        _add_miss(watch, text, component)


def _add_miss(watch: Watch, text: str, component: MissKind) -> None:
    miss = {"message": text, "component": component, "fixture": watch.fixture, "not_evaluated": False}
    with watch.lock:
        watch.misses.append(miss)


def _refusal(module: ModuleType, request: Any) -> Any:
    """The answer a miss gets: provider-shaped, and not retried by the SDKs."""
    body = refusal_body(request.url.host)
    return module.Response(400, headers=list(MISS_HEADERS), json=body, request=request)


def refusal(host: str, runner: str) -> dict[str, Any]:
    """A blocked call's answer for a runner in another process (the Vitest helper), which sends it."""
    return {
        "status": 400,
        "headers": [*map(list, MISS_HEADERS)],
        "body": json.dumps(refusal_body(host, runner)),
    }


def reported(report: dict[str, Any]) -> Watch:
    """What a runner in another process saw go around its replay (`{"runner", "fixture", "blocked":
    [host, ...], "live": [{"model", "content_type", "content_encoding", "body": base64 or null}]}`),
    counted and priced as this module counts its own calls."""
    runner = report.get("runner", "vitest")
    if runner not in RUNNERS:
        raise ValueError(f"unknown runner {runner!r}")
    watch = Watch(str(report["fixture"]), blocks=bool(report.get("blocked")))
    for host in report.get("blocked", []):
        _count_blocked(watch, str(host), runner)
    for sent in report.get("live", []):
        model = sent.get("model")
        call: dict[str, Any] = {"model": model if isinstance(model, str) else None, "cost_usd": None}
        if sent.get("body") is not None:
            headers = {
                "content-type": sent.get("content_type") or "",
                "content-encoding": sent.get("content_encoding"),
            }
            _price(call, headers, [base64.b64decode(sent["body"])])
        watch.live_calls.append(call)
    return watch


def _count_live(watch: Watch, request: Any) -> dict[str, Any]:
    """The call, counted now (unpriced until its answer has been read)."""
    call: dict[str, Any] = {"model": _model_of(request), "cost_usd": None}
    with watch.lock:
        watch.live_calls.append(call)
    return call


def _model_of(request: Any) -> str | None:
    try:
        model = json.loads(request.content).get("model")
    except (ValueError, AttributeError, TypeError):  # not JSON, not an object, or a streamed body
        return None
    return model if isinstance(model, str) else None


def _price(call: dict[str, Any], headers: Mapping[str, Any], chunks: list[bytes]) -> None:
    from ..normalize import request_content
    from ..pricing.cost import cost_usd, usage_of

    body = request_content(b"".join(chunks), headers.get("content-encoding"))
    cost = cost_usd(call["model"], usage_of(body, headers.get("content-type") or ""))
    call["cost_usd"] = None if cost is None else round(cost, 6)


def _tee_sync(module: ModuleType, response: Any, call: dict[str, Any]) -> Any:
    inner, chunks = response.stream, []

    class Tee(module.SyncByteStream):  # type: ignore[name-defined,misc]
        def __iter__(self) -> Iterator[bytes]:
            for chunk in inner:
                chunks.append(chunk)
                yield chunk
            _price(call, response.headers, chunks)

        def close(self) -> None:
            inner.close()

    return Tee()


def _tee_async(module: ModuleType, response: Any, call: dict[str, Any]) -> Any:
    inner, chunks = response.stream, []

    class Tee(module.AsyncByteStream):  # type: ignore[name-defined,misc]
        async def __aiter__(self) -> Any:
            async for chunk in inner:
                chunks.append(chunk)
                yield chunk
            _price(call, response.headers, chunks)

        async def aclose(self) -> None:
            await inner.aclose()

    return Tee()
