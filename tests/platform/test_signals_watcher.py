"""The store watcher (platform/signals.py) wakes live views where no publish arrives: SQLite shared
by two processes, or PostgreSQL while the LISTEN connection is down. PostgreSQL hands out message
ids at insert but commits in any order; a row that appears after one with a higher id was read
must still wake its conversation within the watcher's interval, not the stream's 15 s timer."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import func, select

from frontdesk.platform.signals import ConversationSignals
from frontdesk.platform.store.schema import Message
from harness import make_runtime, message, reply

INTERVAL_S = 0.1


async def store_row_with_id(db: Any, message_id: int, like: Message, text: str) -> None:
    """A customer row with a chosen id: what another process's slow transaction commits."""
    async with db.transaction() as session:
        session.add(
            Message(
                id=message_id,
                conversation_id=like.conversation_id,
                channel_account_id=like.channel_account_id,
                channel_message_id=f"late:{message_id}",
                role="user",
                content_type="text",
                content=text,
                meta={},
                status="ready",
                created_at=like.created_at,
            )
        )


async def test_a_row_committed_after_a_higher_id_still_wakes_its_conversation(db):
    runtime, accounts = await make_runtime(db, {"name": "r", "default": [reply("hi")]}, workers=0)
    stored = {}
    for session_name in ("slow", "fast"):
        ingested = await runtime.ingestor.ingest(message(accounts.webchat_id, "hello", session=session_name))
        async with db.read() as session:
            stored[session_name] = await session.get(Message, ingested.message_id)
    async with db.read() as session:
        newest = int(await session.scalar(select(func.max(Message.id))) or 0)

    signals = ConversationSignals(watch_interval_s=INTERVAL_S)
    await signals.start(db)
    try:
        slow = signals.ticket(stored["slow"].conversation_id)
        fast = signals.ticket(stored["fast"].conversation_id)
        if signals.bridge is not None:
            await signals.bridge.close()  # LISTEN is down: the watcher is all there is
        await asyncio.sleep(3 * INTERVAL_S)  # anchored at the present

        # The transaction holding id newest+1 is slow: newest+2 commits and is read first.
        await store_row_with_id(db, newest + 2, stored["fast"], "quick one")
        assert await ConversationSignals.wait(fast, timeout_s=2)
        await asyncio.sleep(3 * INTERVAL_S)  # the watcher has read past newest+1
        await store_row_with_id(db, newest + 1, stored["slow"], "late one")

        assert await ConversationSignals.wait(slow, timeout_s=2)
    finally:
        await signals.close()
