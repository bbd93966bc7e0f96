"""Stand-in worker processes for tests/platform/test_worker_processes.py (a module of its own: a
spawned process imports its target by module name). No tests here."""

from __future__ import annotations

import asyncio
import socket

from prometheus_client import CollectorRegistry, Counter, generate_latest

from frontdesk.platform.process_link import CHANGED, METRICS, METRICS_ASK, READY, WAKE, ProcessLink


def echo_worker(sock: socket.socket, index: int, turns: int) -> None:
    """Says it is ready; answers each wake-up with a ``CHANGED`` naming itself, and a metrics ask
    with a counter of ``turns`` (as if it had run that many)."""
    asyncio.run(_echo(sock, index, turns))


async def _echo(sock: socket.socket, index: int, turns: int) -> None:
    link = await ProcessLink.open(sock)
    registry = CollectorRegistry()
    Counter("frontdesk_turns", "Turns.", ["outcome"], registry=registry).labels("answered").inc(turns)
    link.send(READY)
    async for kind, _payload in link.frames():
        if kind == WAKE:
            link.send(CHANGED, f"woken-{index}".encode())
        elif kind == METRICS_ASK:
            link.send(METRICS, generate_latest(registry))
