"""Invariant 5: one turn per conversation — bursts, mid-turn arrivals, races, crashes."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import delete, update

from frontdesk.ingestion.lease import ConversationLease
from frontdesk.platform.clock import ManualClock
from frontdesk.platform.store.schema import Conversation, Job, Message, Task, Tenant
from frontdesk.reasoning.loop import FALLBACK_TEXT
from harness import HeldModel, count, make_runtime, message, replies, reply, reply_texts, traces

ECHO = {"name": "echo", "default": [reply("got: {user_text}")]}


async def test_burst_of_three_messages_gets_one_reply(db):
    clock = ManualClock()
    runtime, accounts = await make_runtime(db, ECHO, clock=clock)
    for text in ("hi", "I need business cards", "500 of them"):
        await runtime.ingestor.ingest(message(accounts.terminal_id, text))
        clock.advance(0.05)  # typed quickly: well within the quiet window (0.2 s)
    await runtime.runner.run_until_idle()

    assert await reply_texts(db) == ["got: hi\nI need business cards\n500 of them"]
    (trace,) = await traces(db)
    assert (trace.batch_size, trace.outcome, trace.steps) == (3, "replied", 1)
    assert trace.batch_span_ms == 100
    assert {"wait_ms", "generation_ms", "commit_ms", "delivery_ms", "total_ms"} <= set(trace.latency_ms)
    assert trace.latency_ms["wait_ms"] >= 200  # the quiet window after the last message


async def test_message_sent_while_reply_is_generated_gets_exactly_one_more_reply(db):
    model = HeldModel()
    runtime, accounts = await make_runtime(db, model, clock=ManualClock())
    await runtime.ingestor.ingest(message(accounts.terminal_id, "first"))
    jobs = asyncio.create_task(runtime.runner.run_until_idle())
    await model.asked.wait()  # the first turn is generating
    await runtime.ingestor.ingest(message(accounts.terminal_id, "second"))
    await runtime.ingestor.ingest(message(accounts.terminal_id, "third"))
    model.release.set()
    await jobs

    assert await reply_texts(db) == ["re: first", "re: second\nthird"]
    assert [t.batch_size for t in await traces(db)] == [1, 2]


async def test_turn_after_a_mid_turn_message_sees_the_earlier_reply_before_the_new_messages(db):
    model = HeldModel()
    runtime, accounts = await make_runtime(db, model, clock=ManualClock(), quiet_window_s=0.1)
    await runtime.ingestor.ingest(message(accounts.terminal_id, "first"))
    jobs = asyncio.create_task(runtime.runner.run_until_idle())
    await model.asked.wait()  # the first turn is generating
    await runtime.ingestor.ingest(message(accounts.terminal_id, "second"))
    model.release.set()
    await jobs

    assert model.seen == [
        [("customer", "first")],
        [("customer", "first"), ("agent", "re: first"), ("customer", "second")],
    ]


async def test_redelivered_message_changes_nothing(db):
    runtime, accounts = await make_runtime(db, ECHO, quiet_window_s=0)
    first = await runtime.ingestor.ingest(message(accounts.terminal_id, "hello", msg_id="m1"))
    await runtime.runner.run_once()
    again = await runtime.ingestor.ingest(message(accounts.terminal_id, "hello", msg_id="m1"))

    assert again.duplicate
    assert again.message_id == first.message_id
    assert await count(db, Message) == 2  # the customer's message and one reply
    assert await count(db, Job, Job.status == "queued") == 0
    assert not await runtime.runner.run_once()


async def test_two_workers_racing_for_one_conversation_run_one_turn(db):
    model = HeldModel()
    runtime, accounts = await make_runtime(db, model, quiet_window_s=0)
    result = await runtime.ingestor.ingest(message(accounts.terminal_id, "hi"))

    first = asyncio.create_task(runtime.assembler.process(result.conversation_id, "worker-a"))
    await model.asked.wait()  # worker a holds the lease and is generating
    assert await runtime.assembler.process(result.conversation_id, "worker-b") == 0
    model.release.set()

    assert await first == 1
    assert await reply_texts(db) == ["re: hi"]


async def test_turn_abandoned_by_a_dead_process_is_finished_once_by_the_sweeper(db):
    runtime, accounts = await make_runtime(db, ECHO, quiet_window_s=0, job_lease_s=5)
    result = await runtime.ingestor.ingest(message(accounts.terminal_id, "anyone there?"))
    # The process that claimed the job and took the lease died: both leases stop being renewed.
    dead = await runtime.queue.claim("dead-host:1/0")
    assert dead is not None
    assert await ConversationLease(db, runtime.clock, 30).acquire(result.conversation_id, "dead-host:1/0/job1")
    past = runtime.clock.now() - timedelta(seconds=1)
    async with db.transaction() as session:
        await session.execute(update(Conversation).values(lock_until=past))
        await session.execute(update(Job).values(locked_until=past))

    assert await runtime.runner.sweep_once() >= 1
    while await runtime.runner.run_once():
        pass
    await runtime.runner.sweep_once()
    while await runtime.runner.run_once():
        pass

    assert await reply_texts(db) == ["got: anyone there?"]
    assert await count(db, Message, Message.processed_at.is_(None)) == 0


async def test_unanswered_conversation_without_a_job_is_requeued_by_the_sweeper(db):
    runtime, accounts = await make_runtime(db, ECHO, quiet_window_s=0)
    await runtime.ingestor.ingest(message(accounts.terminal_id, "lost job"))
    async with db.transaction() as session:  # e.g. the job row was purged by hand
        await session.execute(delete(Job))

    assert await runtime.runner.sweep_once() == 1
    assert await runtime.runner.sweep_once() == 0  # a queued job now stands for it
    await runtime.runner.run_once()
    assert len(await replies(db)) == 1


async def test_conversation_whose_job_died_is_left_for_an_operator_until_the_customer_writes_again(db):
    runtime, accounts = await make_runtime(db, ECHO, quiet_window_s=0)
    await runtime.ingestor.ingest(message(accounts.terminal_id, "first"))
    async with db.transaction() as session:  # every attempt failed: the job is dead
        await session.execute(update(Job).values(status="dead", last_error="boom"))

    assert await runtime.runner.sweep_once() == 0
    assert not await runtime.runner.run_once()

    await runtime.ingestor.ingest(message(accounts.terminal_id, "hello?"))
    while await runtime.runner.run_once():
        pass
    assert await reply_texts(db) == ["got: first\nhello?"]


async def test_holder_whose_lease_was_taken_over_commits_nothing(db):
    model = HeldModel()
    runtime, accounts = await make_runtime(db, model, quiet_window_s=0, lease_ttl_s=30)
    result = await runtime.ingestor.ingest(message(accounts.terminal_id, "hi"))
    stale = asyncio.create_task(runtime.assembler.process(result.conversation_id, "old-holder"))
    await model.asked.wait()
    async with db.transaction() as session:  # the old holder stalled past its lease; someone took over
        await session.execute(update(Conversation).values(lock_owner="new-holder"))
    model.release.set()

    assert await stale == 0
    assert await replies(db) == []
    assert await count(db, Message, Message.processed_at.is_(None)) == 1  # left for the new holder


async def test_readiness_gate_waits_for_pending_media(db):
    runtime, accounts = await make_runtime(db, ECHO, clock=ManualClock(), quiet_window_s=0, media_ready_timeout_s=30)
    pending = await runtime.ingestor.ingest(
        message(accounts.terminal_id, "(voice message — transcribing)", content_type="voice", status="pending")
    )
    while await runtime.runner.run_once():  # every job due now: the turn waits for the media
        pass
    assert await replies(db) == []
    assert await count(db, Job, Job.status == "queued") == 1  # it comes back when the wait is over

    await runtime.ingestor.mark_ready(pending.message_id, "a quote for 500 cards please")
    await runtime.runner.run_until_idle()

    assert await reply_texts(db) == ["got: a quote for 500 cards please"]
    (trace,) = await traces(db)
    assert trace.latency_ms["pending_media"] == 0
    assert trace.latency_ms["wait_ms"] < 30_000  # pulled forward, not run at the timeout


async def test_media_ready_while_the_holder_decides_to_wait_is_answered_at_once(db, monkeypatch):
    """The media lands between the holder's read (still pending: wait 30 s) and its letting go of
    the lease; the turn that readiness queues runs meanwhile, finds the lease held and ends. The
    customer is answered now all the same, not when the 30 s wait runs out."""
    clock = ManualClock()
    runtime, accounts = await make_runtime(db, ECHO, clock=clock, quiet_window_s=0, media_ready_timeout_s=30)
    pending = await runtime.ingestor.ingest(
        message(accounts.terminal_id, "(voice message — transcribing)", content_type="voice", status="pending")
    )
    release = ConversationLease.release
    landed: list[bool] = []

    async def media_lands_first(lease: ConversationLease, conversation_id: str, owner: str) -> None:
        if not landed:
            landed.append(True)
            await runtime.ingestor.mark_ready(pending.message_id, "a quote for 500 cards please")
            assert await runtime.runner.run_once()  # the turn it queued: the lease is still held here
        await release(lease, conversation_id, owner)

    monkeypatch.setattr(ConversationLease, "release", media_lands_first)
    while await runtime.runner.run_once():  # only what is due now: the clock does not move
        pass

    assert landed
    assert await reply_texts(db) == ["got: a quote for 500 cards please"]
    assert clock.monotonic() == 0
    assert await count(db, Job, Job.status == "queued") == 0  # no wake-up left for later


async def test_readiness_gate_times_out_to_the_placeholder(db):
    runtime, accounts = await make_runtime(db, ECHO, clock=ManualClock(), quiet_window_s=0, media_ready_timeout_s=0.5)
    await runtime.ingestor.ingest(
        message(accounts.terminal_id, "(voice message — transcribing)", content_type="voice", status="pending")
    )
    await runtime.runner.run_until_idle()

    assert await reply_texts(db) == ["got: (voice message — transcribing)"]
    (trace,) = await traces(db)
    assert trace.latency_ms["wait_ms"] == 500
    assert trace.latency_ms["pending_media"] == 1


async def test_quiet_window_does_not_hold_a_worker(db):
    """Ten conversations waiting out their quiet windows are all answered one window after they
    wrote: waiting is a delayed job, not a sleeping worker (one worker runs every job here)."""
    clock = ManualClock()
    runtime, accounts = await make_runtime(db, ECHO, clock=clock, quiet_window_s=0.5)
    for n in range(10):
        await runtime.ingestor.ingest(message(accounts.terminal_id, f"hello {n}", session=f"s{n}"))
    await runtime.runner.run_until_idle()

    assert len(await replies(db)) == 10
    # Served one after another, ten windows of 0.5 s would take 5 s of the clock; together, one.
    assert clock.monotonic() == 0.5
    assert {t.latency_ms["wait_ms"] for t in await traces(db)} == {500}


async def test_conversation_taken_by_a_human_gets_no_agent_reply(db):
    runtime, accounts = await make_runtime(db, ECHO, quiet_window_s=0)
    first = await runtime.ingestor.ingest(message(accounts.terminal_id, "hello"))
    async with db.transaction() as session:
        await session.execute(update(Conversation).values(ai_enabled=False))

    await runtime.assembler.process(first.conversation_id, "w")

    assert await replies(db) == []
    assert await count(db, Message, Message.processed_at.is_(None)) == 0


async def test_a_reply_written_while_an_operator_takes_over_is_not_sent_over_them(db):
    asked, taken_over = asyncio.Event(), asyncio.Event()

    class SlowModel:
        name = "slow"

        async def request(self, messages, params):
            from pydantic_ai import ModelResponse, ToolCallPart

            asked.set()
            await taken_over.wait()  # the operator switches the AI off while the model writes
            return ModelResponse(parts=[ToolCallPart("reply", {"blocks": [{"type": "text", "text": "late AI"}]})])

    runtime, accounts = await make_runtime(db, SlowModel(), quiet_window_s=0)
    ingested = await runtime.ingestor.ingest(message(accounts.terminal_id, "is anyone there?"))
    turn = asyncio.create_task(runtime.assembler.process(ingested.conversation_id, "worker-a"))
    await asked.wait()
    async with db.transaction() as session:
        await session.execute(
            update(Conversation).where(Conversation.id == ingested.conversation_id).values(ai_enabled=False)
        )
    taken_over.set()
    await turn

    (trace,) = await traces(db)
    assert trace.outcome == "suppressed"
    assert await reply_texts(db) == []  # nothing reached the customer
    assert await count(db, Message, Message.processed_at.is_(None)) == 0  # and it is not answered later


async def test_a_tenant_whose_stored_time_zone_no_longer_exists_still_gets_the_hold_message(db):
    # The turn's first transaction claims the model budget on the tenant's clock: a zone that
    # cannot be read must not fail the job (the customer would hear nothing), only the turn.
    clock = ManualClock()
    runtime, accounts = await make_runtime(db, ECHO, clock=clock)
    async with db.transaction() as session:
        await session.execute(update(Tenant).values(policy={"timezone": "Mars/Olympus"}))
    await runtime.ingestor.ingest(message(accounts.terminal_id, "are you open?"))
    await runtime.runner.run_until_idle()

    assert await reply_texts(db) == [FALLBACK_TEXT]  # the turn's hold, with a task for the team
    (trace,) = await traces(db)
    assert trace.outcome == "fallback"
    assert "Mars/Olympus" in (trace.detail or "")
    assert await count(db, Task, Task.kind == "needs_reply") == 1
