"""A faulted model request answered (see `replay.faults` for the plan): the web layer's side.

Every request of a session with faults is served here or by the web layer next to it, never by the
fast path or a lane (`ReplayApp.serving`), so a timeout, a disconnect and a cut stream reach each
client, whichever way it called, as its own transport's error on a real socket.
"""

from __future__ import annotations

import json

from aiohttp import web

from ..normalize import eventstream
from ..providers import PROVIDERS, status_error
from . import faults as plan
from .answers import serve_recording
from .faults import Fault, SessionFaults
from .index import Recording


def message(fault: Fault, number: int) -> str:
    return f"attest replay: injected fault {fault.spec} (model request {number})"


async def instead(
    request: web.Request, faults: SessionFaults, provider: str, path: str, fault: Fault
) -> web.StreamResponse:
    """A status, a timeout or a disconnect, answered in place of a recording (none is taken)."""
    faults.injected_one(fault)
    if fault.kind == "disconnect":
        return _closed(request)
    if fault.kind == "timeout":
        if await faults.hold() and _open(request):
            faults.notes.append(
                f"{message(fault, faults.requests)}: no client timeout ended it within the engine's "
                f"{plan.TIMEOUT_CEILING:g} s ceiling, so the engine closed the connection"
            )
        return _closed(request)
    text = message(fault, faults.requests)
    body, headers = status_error(provider, fault.value, text)
    found = PROVIDERS.get(provider)
    if found is not None and found.errors_in_stream and path.endswith(found.errors_in_stream):
        return await _stream_exception(request, headers, text)
    if fault.retry_after is not None:
        headers = {**headers, "retry-after": str(fault.retry_after)}
    return web.json_response(body, status=fault.value, headers=headers)


async def serving(
    request: web.Request, faults: SessionFaults, rec: Recording, fault: Fault
) -> web.StreamResponse:
    """The recording served late (`latency`), event by event (`pace`), or cut (`cut`)."""
    faults.injected_one(fault)
    if fault.kind == "latency":
        await faults.wait(fault.value / 1000)
        return await serve_recording(request, rec)
    events = rec.events if rec.events is not None else (rec.body,)
    if fault.kind == "cut":
        # Never the last event: a cut stream always ends as an error, never as a clean end. A plain
        # answer (one event) is cut after its head.
        events = events[: min(fault.value, len(events) - 1)] if rec.events is not None else ()
    response = web.StreamResponse(status=rec.status, headers=rec.headers)
    await response.prepare(request)
    try:
        for event in events:
            if fault.kind == "pace":
                await faults.wait(fault.value / 1000)
            await response.write(event)
        if fault.kind == "cut":
            return _closed(request)
        await response.write_eof()
    except ConnectionResetError:  # the agent left mid-stream
        pass
    return response


async def _stream_exception(request: web.Request, headers: dict[str, str], text: str) -> web.StreamResponse:
    """A faulted AWS event stream (Bedrock's): HTTP 200, then the exception as the stream's one event,
    as Bedrock sends a throttle that comes once the stream has begun (botocore raises it from the
    stream)."""
    kind = headers["x-amzn-ErrorType"].split(":", 1)[0]
    frame = eventstream.encode_frame(
        {
            "headers": [
                [":exception-type", kind],
                [":content-type", "application/json"],
                [":message-type", "exception"],
            ],
            "payload": json.dumps({"message": text}),
        }
    )
    response = web.StreamResponse(status=200, headers={"content-type": eventstream.MEDIA_TYPE})
    await response.prepare(request)
    await response.write(frame)
    await response.write_eof()
    return response


def _open(request: web.Request) -> bool:
    return request.transport is not None and not request.transport.is_closing()


def _closed(request: web.Request) -> web.Response:
    """The connection closed with no (further) answer; aiohttp drops the response returned."""
    if request.transport is not None:
        request.transport.close()
    return web.Response()
