"""Processes sharing one SQLite file take turns on its writer lock file, not in SQLite's sleeps.

Two ``Database`` objects on one file stand for two processes (each opens the lock file itself, and
``flock`` excludes across open files, as across processes): serve's HTTP process and its worker
process. A second writer waits for the lock file before it sends ``BEGIN IMMEDIATE``, so it never
sits in SQLite's busy handler (which sleeps up to 100 ms a step), and a writer cancelled while it
waits never leaves the lock held.
"""

from __future__ import annotations

import asyncio
import fcntl
import shutil
from pathlib import Path

import pytest
from sqlalchemy import event, select

from frontdesk.platform.store import sqlite_lock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Tenant


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    """A migrated SQLite file of this test's own (the lock files are SQLite's: no PostgreSQL run)."""
    path = tmp_path / "frontdesk.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


@pytest.fixture
async def two_processes(sqlite_url: str):
    first, second = Database.from_url(sqlite_url), Database.from_url(sqlite_url)
    try:
        yield first, second
    finally:
        await first.dispose()
        await second.dispose()


class LockWaits:
    """Counts writers that began to wait for a lock file (a blocking ``flock``, run in a thread),
    so a test waits for that moment instead of yielding and hoping."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.count = 0
        self._changed = asyncio.Event()

    def began(self) -> None:  # on the event loop
        self.count += 1
        self._changed.set()

    async def until(self, count: int) -> None:
        while self.count < count:
            self._changed.clear()
            await asyncio.wait_for(self._changed.wait(), 10)


@pytest.fixture
async def lock_waits(monkeypatch: pytest.MonkeyPatch) -> LockWaits:
    waits = LockWaits(asyncio.get_running_loop())
    real = fcntl.flock

    def flock(fd: int, operation: int) -> None:
        if operation == fcntl.LOCK_EX:  # blocking: the lock was taken when tried without waiting
            waits._loop.call_soon_threadsafe(waits.began)
        real(fd, operation)

    monkeypatch.setattr(sqlite_lock.fcntl, "flock", flock)
    return waits


def begins(db: Database) -> list[str]:
    sent: list[str] = []

    def record(_conn, _cursor, statement: str, *_args) -> None:
        if statement.startswith("BEGIN"):
            sent.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", record)
    return sent


async def test_a_second_processs_writer_waits_for_the_lock_file_and_writes_once_the_first_commits(
    two_processes, lock_waits
):
    first, second = two_processes
    second_began = begins(second)
    holding, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with first.transaction() as session:
            await session.execute(select(Tenant.id))
            holding.set()
            await release.wait()

    async def write() -> int:
        async with second.transaction() as session:
            return len(list(await session.scalars(select(Tenant.id))))

    holder = asyncio.create_task(hold())
    await holding.wait()
    writer = asyncio.create_task(write())
    await lock_waits.until(1)  # the writer waits for the lock file
    waited_outside_sqlite = list(second_began)
    release.set()
    await holder
    await asyncio.wait_for(writer, 10)

    assert waited_outside_sqlite == []  # no BEGIN sent while the other process held the file
    assert second_began == ["BEGIN IMMEDIATE"]


async def test_a_writer_cancelled_while_it_waits_leaves_the_lock_free(two_processes, sqlite_url, lock_waits):
    first, second = two_processes
    holding, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with first.transaction():
            holding.set()
            await release.wait()

    async def write() -> None:
        async with second.transaction() as session:
            await session.execute(select(Tenant.id))

    holder = asyncio.create_task(hold())
    await holding.wait()
    waiting = asyncio.create_task(write())
    await lock_waits.until(1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
    await holder

    third = Database.from_url(sqlite_url)  # another process, after both
    try:
        await asyncio.wait_for(write_with(third), 10)
        await asyncio.wait_for(write_with(second), 10)
    finally:
        await third.dispose()


async def write_with(db: Database) -> None:
    async with db.transaction() as session:
        await session.execute(select(Tenant.id))


async def test_the_http_processs_write_goes_before_a_worker_process_write_that_came_later(
    two_processes, sqlite_url, lock_waits
):
    # serve's HTTP process favours its writes: a webhook's acknowledgement waits for the
    # transaction under way, never for a run of the worker process's turn transactions.
    worker, edge = two_processes
    edge.favour_writes()
    later_worker = Database.from_url(sqlite_url)  # another worker writer, arriving after the edge
    order: list[str] = []
    holding, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with worker.transaction():
            holding.set()
            await release.wait()

    async def write(db: Database, name: str) -> None:
        async with db.transaction() as session:
            await session.execute(select(Tenant.id))
            order.append(name)

    holder = asyncio.create_task(hold())
    await holding.wait()
    try:
        edge_write = asyncio.create_task(write(edge, "edge"))
        await lock_waits.until(1)  # the edge waits for the writer lock, holding the gate
        worker_write = asyncio.create_task(write(later_worker, "worker"))
        await lock_waits.until(2)  # the later worker waits at the gate
        release.set()
        await holder
        await asyncio.wait_for(asyncio.gather(edge_write, worker_write), 10)
    finally:
        await later_worker.dispose()

    assert order == ["edge", "worker"]
