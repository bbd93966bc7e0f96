"""Sends to the platforms reuse connections, but not idle ones a platform may be closing.

Found by ``bench/reliability/storm.py``: a connection idle for about the server's keep-alive
(5 s in uvicorn, Node and Apache by default) was reused just as the server closed it, and the
send failed. The outbound client now drops a connection after 2 s idle, well before that.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "channels"))

from loopback import serve

from harness import make_runtime, reply


def connection_recorder() -> tuple[Any, list[int]]:
    """An ASGI app answering 200 that records the client port of each request (one per TCP
    connection)."""
    ports: list[int] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        ports.append(scope["client"][1])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    return app, ports


async def test_an_idle_connection_is_dropped_before_a_platforms_keep_alive_closes_it(db):
    runtime, _ = await make_runtime(db, {"name": "r", "default": [reply("hi")]}, workers=0)
    http = runtime.channel_deps.http
    app, ports = connection_recorder()
    try:
        async with serve(app, lifespan="off", timeout_keep_alive=5) as base_url:
            await http.post(f"{base_url}/send")
            await asyncio.sleep(0.2)
            await http.post(f"{base_url}/send")  # busy: the same connection
            await asyncio.sleep(2.5)
            await http.post(f"{base_url}/send")  # idle 2.5 s: a new one, before the server's 5 s
    finally:
        await runtime.channel_deps.http.aclose()

    assert ports[0] == ports[1]
    assert ports[2] != ports[1]
