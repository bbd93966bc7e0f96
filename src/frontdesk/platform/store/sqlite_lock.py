"""One writer at a time on a SQLite file, across the processes that share it, without sleeping.

SQLite lets one transaction write at a time. A writer that finds the file locked waits in
SQLite's busy handler, which sleeps in steps that grow to 100 ms: with ``serve``'s HTTP process
and its worker process writing the same file, a webhook's acknowledgement waited out those
sleeps (hundreds of milliseconds at p99) for a lock that was free again after a few. Here the
writers of one process queue on an asyncio lock, and the processes on an ``flock`` of a file
beside the database (``<database>-writer.lock``), which the kernel hands to the next waiter the
moment it is released. SQLite's busy timeout still covers writers that do not take it (the
``sqlite3`` shell, a backup).

``flock`` is not fair: a worker process that releases the lock and wants it again at once can
take it before the waiting HTTP process is even scheduled, again and again, and the webhook's
acknowledgement waits behind a run of turn transactions. So the HTTP process's writes go first
(``favour``): while one waits, it holds a second lock, the gate (``<database>-writer.gate``), which
every other writer passes through before it may queue for the writer lock. A write of the
favoured process waits for at most the transaction under way.
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
        self._writer: int | None = None
        self._gate: int | None = None
        self.favoured = False  # this process's writes go before the others' (serve's HTTP process)
        if database_path and database_path != ":memory:":
            try:
                self._writer = _open(f"{database_path}-writer.lock")
                self._gate = _open(f"{database_path}-writer.gate")
            except OSError as exc:  # a read-only directory: SQLite's busy timeout alone, as before
                log.warning("no writer lock files beside %s (%s): writers wait in SQLite's sleeps", database_path, exc)
                self.close()

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        async with self._in_process:
            if self._writer is None or self._gate is None:
                yield
                return
            await self._acquire(self._gate)  # a favoured writer waiting holds it: go after it
            if self.favoured:
                try:
                    await self._acquire(self._writer)
                finally:
                    fcntl.flock(self._gate, fcntl.LOCK_UN)
            else:
                fcntl.flock(self._gate, fcntl.LOCK_UN)
                await self._acquire(self._writer)
            try:
                yield
            finally:
                fcntl.flock(self._writer, fcntl.LOCK_UN)

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
        for fd in (self._writer, self._gate):
            if fd is not None:
                os.close(fd)
        self._writer = self._gate = None


def _open(path: str) -> int:
    return os.open(Path(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


def _unlock_if_taken(acquired: asyncio.Future[None], fd: int) -> None:
    if acquired.exception() is None:
        with contextlib.suppress(OSError):  # closed meanwhile: the lock went with the file
            fcntl.flock(fd, fcntl.LOCK_UN)
