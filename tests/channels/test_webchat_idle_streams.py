"""Open web chat streams wait on signals, not on the database (issue 8, concurrency at scale).

The scale bench (2,000 sessions, ``bench/burst.py``) found every open stream re-reading the
store once a second: 2,000 queries a second before a single message, so the server had no time
left to accept messages. Now an idle stream costs no query; one watcher per process reads new
messages for all of them when a publish may not arrive (another process wrote the reply)."""

from __future__ import annotations

import asyncio
import gc
import json
import re
import time
from typing import Any

import pytest
from sqlalchemy import event
from test_webchat import next_block, served, sse_events

from frontdesk.app import create_app
from frontdesk.ingestion.channels.webchat import adapter
from frontdesk.output.blocks import TextBlock
from frontdesk.output.rendering import DeliveryTarget
from harness import make_runtime, message, reply

IDLE_STREAMS = 60
# What a stream's own lookups read: the transcript, the session's conversation.
STREAM_QUERY = re.compile(r"FROM (messages|conversations|contacts)\b")


async def idle_streams(db: Any, count_streams: int, measure_s: float) -> tuple[list[str], int]:
    """Open ``count_streams`` streams (half on conversations that exist, half before the first
    message), let them settle, then for ``measure_s`` record the stream queries the store sees.
    Returns those statements and the keep-alive comments the streams received meanwhile."""
    runtime, accounts = await make_runtime(db, {"name": "r", "default": [reply("hi")]}, workers=0)
    statements: list[str] = []
    keepalives = [0]
    measuring = asyncio.Event()

    def count(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if STREAM_QUERY.search(statement):
            statements.append(statement)

    url = f"/v1/webchat/{accounts.webchat_id}/stream"
    async with served(create_app(runtime)) as client:
        existing = [f"old-customer-{n:04d}" for n in range(count_streams // 2)]
        for session in existing:
            await runtime.ingestor.ingest(message(accounts.webchat_id, "hello", session=session))
        sessions = existing + [f"new-visitor-{n:04d}" for n in range(count_streams // 2)]
        async with asyncio.TaskGroup() as streams:
            opened = [asyncio.Event() for _ in sessions]

            async def hold(session: str, ready: asyncio.Event) -> None:
                async with client.stream("GET", url, params={"session": session}) as response:
                    lines = response.aiter_lines()
                    while not (await anext(lines)).startswith("id:"):  # retry:, then where it starts
                        pass
                    ready.set()
                    async for line in lines:  # until the test closes the server
                        keepalives[0] += measuring.is_set() and line.startswith(": keep-alive")

            tasks = [streams.create_task(hold(s, e)) for s, e in zip(sessions, opened, strict=True)]
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in opened)), 20)
            # Let every stream reach its wait, and the watcher (1 s ticks) wake the conversations
            # of the messages above once: that catch-up is bounded by messages, not by time.
            await asyncio.sleep(2.5)
            event.listen(db.engine.sync_engine, "before_cursor_execute", count)
            measuring.set()
            try:
                await asyncio.sleep(measure_s)
            finally:
                event.remove(db.engine.sync_engine, "before_cursor_execute", count)
            for task in tasks:
                task.cancel()
    return statements, keepalives[0]


async def test_sixty_idle_streams_cost_almost_no_queries(db):
    statements, _ = await idle_streams(db, IDLE_STREAMS, measure_s=3.0)
    # Before: one lookup per stream per second (about 180 here). Now: the watcher's reads only.
    assert len(statements) <= 6, f"{len(statements)} queries in 3 s, e.g. {statements[:3]}"


async def test_keep_alives_do_not_read_the_store(db, monkeypatch):
    # At 2,000 streams, a read with every 15 s keep-alive was 133 transcript reads a second
    # (bench/burst.py): now only a signal or the 60 s safety timer reads.
    monkeypatch.setattr(adapter, "STREAM_KEEPALIVE_S", 0.25)
    statements, keepalives = await idle_streams(db, 20, measure_s=2.0)

    assert keepalives >= 20 * 4  # every stream kept its connection alive throughout
    assert len(statements) <= 4, f"{len(statements)} queries in 2 s, e.g. {statements[:3]}"


async def test_a_reply_written_without_a_publish_reaches_the_stream_within_the_watchers_second(db):
    # Another process on the same SQLite file (``frontdesk chat`` beside ``frontdesk demo``)
    # writes a reply: nothing in this process publishes it, the store watcher finds it.
    if db.dialect == "postgresql":
        pytest.skip("on PostgreSQL every writer NOTIFYs (tests/platform/test_pg_notify.py); the watcher covers SQLite")
    runtime, accounts = await make_runtime(db, {"name": "r", "default": [reply("hi")]}, workers=0)
    session = "other-process-0001"
    first = await runtime.ingestor.ingest(message(accounts.webchat_id, "hello", session=session))
    target = DeliveryTarget("webchat", accounts.webchat_id, first.conversation_id, session, 0, {}, {})
    async with served(create_app(runtime)) as client:
        url = f"/v1/webchat/{accounts.webchat_id}/stream"
        async with client.stream("GET", url, params={"session": session}) as response:
            events = sse_events(response)
            await anext(events)
            await anext(events)
            async with runtime.db.transaction() as session:  # staged only: no renderer, no publish
                await runtime.deliverer.stage(
                    session, target, [TextBlock(text="from the other process")], turn_id=None, origin="test"
                )
            started = time.monotonic()
            block = await next_block(events, timeout_s=5)
            waited = time.monotonic() - started
    assert json.loads(block["data"])["block"] == {"type": "text", "text": "from the other process"}
    assert waited < 3  # the watcher's interval is 1 s; the stream's own safety timer is 15 s


async def test_a_closed_stream_leaves_no_ticket_behind(db):
    # The widget opens its stream on page load: a visitor who never writes (or a made-up session)
    # must not leave a waiting ticket in the process for ever.
    runtime, accounts = await make_runtime(db, {"name": "r", "default": [reply("hi")]}, workers=0)
    url = f"/v1/webchat/{accounts.webchat_id}/stream"
    async with served(create_app(runtime)) as client:
        for n in range(20):
            async with client.stream("GET", url, params={"session": f"silent-visitor-{n:04d}"}) as response:
                events = sse_events(response)
                await anext(events)
                await anext(events)
                await asyncio.sleep(0.05)  # the stream is waiting on its ticket
        await asyncio.sleep(0.5)  # the server notices the disconnects
        gc.collect()
        assert runtime.signals.listeners == 0
