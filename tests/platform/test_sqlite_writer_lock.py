"""Processes sharing one SQLite file take turns on its writer lock file, not in SQLite's sleeps.

Two ``Database`` objects on one file stand for two processes (each opens the lock file itself, and
``flock`` excludes across open files, as across processes): serve's HTTP process and its worker
process. A second writer waits for the lock file before it sends ``BEGIN IMMEDIATE``, so it never
sits in SQLite's busy handler (which sleeps up to 100 ms a step), and a writer cancelled while it
waits never leaves the lock held.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from sqlalchemy import event, select

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


def begins(db: Database) -> list[str]:
    sent: list[str] = []

    def record(_conn, _cursor, statement: str, *_args) -> None:
        if statement.startswith("BEGIN"):
            sent.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", record)
    return sent


async def test_a_second_processs_writer_waits_for_the_lock_file_and_writes_once_the_first_commits(two_processes):
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
    for _ in range(20):  # let the writer run as far as it can
        await asyncio.sleep(0)
    waited_outside_sqlite = list(second_began)
    release.set()
    await holder
    await asyncio.wait_for(writer, 10)

    assert waited_outside_sqlite == []  # no BEGIN sent while the other process held the file
    assert second_began == ["BEGIN IMMEDIATE"]


async def test_a_writer_cancelled_while_it_waits_leaves_the_lock_free(two_processes, sqlite_url):
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
    for _ in range(20):
        await asyncio.sleep(0)
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


async def test_the_http_processs_write_goes_before_a_worker_process_write_that_came_later(two_processes, sqlite_url):
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
        for _ in range(20):
            await asyncio.sleep(0)
        worker_write = asyncio.create_task(write(later_worker, "worker"))
        for _ in range(20):
            await asyncio.sleep(0)
        release.set()
        await holder
        await asyncio.wait_for(asyncio.gather(edge_write, worker_write), 10)
    finally:
        await later_worker.dispose()

    assert order == ["edge", "worker"]
