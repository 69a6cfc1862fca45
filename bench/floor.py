"""The floor: a bare aiohttp server on loopback that answers with fixed recorded bytes.

It does what the engine does minus everything that is the engine's own work (parsing, normalizing,
hashing, lookup, accounting): read the request body, answer with one recording, one write per SSE
event. Run as a subprocess, like the engine, so both pay the same process and socket costs.

    python bench/floor.py SPEC.json    prints {"ready": URL}; serves until stdin ends
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web


def handler(routes: dict[str, dict[str, Any]]) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    encoded = {
        name: (
            route,
            route["body"].encode(),
            [e.encode() for e in route["events"]] if route["events"] is not None else None,
        )
        for name, route in routes.items()
    }

    async def handle(request: web.Request) -> web.StreamResponse:
        route, body, events = encoded[request.match_info["route"]]
        await request.read()
        headers = [tuple(h) for h in route["headers"]]
        if events is None:
            return web.Response(status=route["status"], body=body, headers=headers)
        response = web.StreamResponse(status=route["status"], headers=headers)
        await response.prepare(request)
        for event in events:
            if route["delay_ms"]:
                await asyncio.sleep(route["delay_ms"] / 1000)
            await response.write(event)
        await response.write_eof()
        return response

    return handle


async def serve(spec: Path) -> None:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{route}/{tail:.*}", handler(json.loads(spec.read_text(encoding="utf-8"))))
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, reuse_address=True)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # the port the OS chose
    print(json.dumps({"ready": f"http://127.0.0.1:{port}"}), flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # serve until the parent closes stdin
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(serve(Path(sys.argv[1])))
