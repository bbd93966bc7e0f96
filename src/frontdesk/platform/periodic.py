"""Background renewals (job heartbeats, conversation leases) that stop without being cancelled.

Cancelling a task that is inside a database call can leave its connection mid-transaction (on
SQLite, holding the write lock while aiosqlite's thread finishes ``BEGIN IMMEDIATE``). So these
loops are told to stop and then awaited: a renewal in flight completes first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def every(interval_s: float, action: Callable[[], Awaitable[bool]], *, what: str) -> AsyncIterator[None]:
    """Run ``action`` every ``interval_s`` while the body runs; it returns False to stop early."""
    stop = asyncio.Event()

    async def loop() -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval_s)
                return
            try:
                if not await action():
                    return
            except Exception:
                log.exception("%s failed", what)

    task = asyncio.create_task(loop(), name=what)
    try:
        yield
    finally:
        stop.set()
        await task
