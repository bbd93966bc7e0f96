"""A redelivery is recognised without a write transaction (issue 8, redelivery storm): on SQLite
every write waits for one lock, so a storm of redeliveries used to queue behind new messages and
turns (the 2,000-session bench saw 2,470 of 6,000 redeliveries time out after 30 s). A new message
costs one write transaction and no read (issue 21): the process remembers what it stored, and a
redelivery it does not know (another instance stored it) is found by the unique index."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from frontdesk.errors import NotFoundError
from frontdesk.ingestion.ingest import Ingestor
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.schema import Message
from harness import count, make_runtime, message, reply


async def test_a_redelivery_is_answered_while_another_writer_holds_the_store(db):
    runtime, accounts = await make_runtime(db, {"name": "r", "default": [reply("hi")]})
    first = await runtime.ingestor.ingest(message(accounts.webchat_id, "hello", msg_id="m1"))
    holding, release = asyncio.Event(), asyncio.Event()

    async def long_writer() -> None:
        async with db.transaction() as session:
            await session.execute(text("SELECT 1"))
            holding.set()
            await release.wait()

    writer = asyncio.create_task(long_writer())
    await holding.wait()
    try:
        again = await asyncio.wait_for(runtime.ingestor.ingest(message(accounts.webchat_id, "hello", msg_id="m1")), 2)
        changed = await asyncio.wait_for(
            runtime.ingestor.ingest(message(accounts.webchat_id, "hello?", msg_id="m1")), 2
        )
    finally:
        release.set()
        await writer
    assert (again.duplicate, again.same_content, again.message_id) == (True, True, first.message_id)
    assert (changed.duplicate, changed.same_content) == (True, False)  # web chat turns this into a 409
    assert await count(db, Message) == 1


async def test_a_redelivery_to_an_account_of_another_channel_is_still_refused(db):
    runtime, accounts = await make_runtime(db, {"name": "r", "default": [reply("hi")]})
    await runtime.ingestor.ingest(message(accounts.webchat_id, "hello", msg_id="m1"), channel="webchat")
    with pytest.raises(NotFoundError):  # the same 404 as for a new message
        await runtime.ingestor.ingest(message(accounts.webchat_id, "hello", msg_id="m1"), channel="telegram")


async def test_a_new_message_is_one_write_transaction_and_no_read(db):
    runtime, accounts = await make_runtime(db, {"name": "r", "default": [reply("hi")]})
    await runtime.ingestor.ingest(message(accounts.webchat_id, "first", msg_id="m0"))  # contact and conversation
    before = db.work.copy()

    await runtime.ingestor.ingest(message(accounts.webchat_id, "second", msg_id="m1"))

    work = db.work - before
    assert (work.write_transactions, work.read_transactions) == (1, 0)
    assert work.statements <= 5


async def test_a_redelivery_another_instance_stored_is_found_by_the_unique_index(db):
    runtime, accounts = await make_runtime(db, {"name": "r", "default": [reply("hi")]})
    first = await runtime.ingestor.ingest(message(accounts.webchat_id, "hello", msg_id="m1"))
    other_instance = Ingestor(db, runtime.queue, SystemClock())  # knows nothing of what the first stored

    again = await other_instance.ingest(message(accounts.webchat_id, "hello", msg_id="m1"))
    changed = await other_instance.ingest(message(accounts.webchat_id, "hello?", msg_id="m1"))

    assert (again.duplicate, again.same_content, again.message_id) == (True, True, first.message_id)
    assert (changed.duplicate, changed.same_content) == (True, False)
    assert await count(db, Message) == 1
