"""One writer at a time on a SQLite file, across the processes that share it, without sleeping.

SQLite lets one transaction write at a time. A writer that finds the file locked waits in
SQLite's busy handler, which sleeps in steps that grow to 100 ms: with ``serve``'s HTTP process
and its worker process writing the same file, a webhook's acknowledgement waited out those
sleeps (hundreds of milliseconds at p99) for a lock that was free again after a few. Here the
writers of one process queue on an asyncio lock, and the processes on an ``flock`` of a file
beside the database (``<database>-writer.lock``), which the kernel hands to the next waiter the
moment it is released. SQLite's busy timeout still covers writers that do not take it (the
``sqlite3`` shell, a backup).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

log = logging.getLogger(__name__)


class SqliteWriteLock:
    def __init__(self, database_path: str | None) -> None:
        self._in_process = asyncio.Lock()
        self._fd: int | None = None
        if database_path and database_path != ":memory:":
            path = Path(f"{database_path}-writer.lock")
            try:
                self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as exc:  # a read-only directory: SQLite's busy timeout alone, as before
                log.warning("no writer lock file %s (%s): processes sharing the database wait in sleeps", path, exc)

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        async with self._in_process:
            if self._fd is None:
                yield
                return
            await self._acquire(self._fd)
            try:
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    @staticmethod
    async def _acquire(fd: int) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: no thread hop
            return
        except BlockingIOError:
            pass
        waiting = asyncio.get_running_loop().run_in_executor(None, fcntl.flock, fd, fcntl.LOCK_EX)
        try:
            await asyncio.shield(waiting)
        except asyncio.CancelledError:
            # The thread still gets the lock some time later: hand it straight back then.
            waiting.add_done_callback(lambda done: _unlock_if_taken(done, fd))
            raise

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _unlock_if_taken(acquired: asyncio.Future[None], fd: int) -> None:
    if acquired.exception() is None:
        with contextlib.suppress(OSError):  # closed meanwhile: the lock went with the file
            fcntl.flock(fd, fcntl.LOCK_UN)
