"""What a process asks of its database is counted where it happens (``Database.work``), so the
benches can print the transactions and statements of a turn, and operators can scrape them."""

from __future__ import annotations

from sqlalchemy import select

from frontdesk.platform.store.engine import DatabaseWork
from frontdesk.platform.store.schema import Job, Tenant


async def test_transactions_are_counted_by_intent_and_statements_without_begin_and_commit(db):
    async with db.read() as session:  # the connection is opened (and set up) before counting
        await session.execute(select(Tenant.id))
    before = db.work.copy()

    async with db.transaction() as session:
        await session.execute(select(Tenant.id))
        await session.execute(select(Job.id))
    async with db.read() as session:
        await session.execute(select(Tenant.id))

    assert db.work - before == DatabaseWork(write_transactions=1, read_transactions=1, statements=3)
