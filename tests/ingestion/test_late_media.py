"""Media later than the readiness gate's timeout: the turn answers its placeholder, and what the
customer really sent (the transcript, the re-hosted image) still gets a turn of its own, whether
it lands after that turn or while the turn is being written. Never silence, never twice."""

from __future__ import annotations

import asyncio

from pydantic_ai import ModelRequest, ModelResponse, ToolCallPart, UserPromptPart

from frontdesk.humans import hand_off
from frontdesk.platform.clock import ManualClock
from frontdesk.platform.store.schema import Message
from harness import make_runtime, message, reply, reply_texts, traces

ECHO = {"name": "echo", "default": [reply("got: {user_text}")]}
PLACEHOLDER = "[voice note: being transcribed]"
TRANSCRIPT = "[voice note] a quote for 500 cards please"


def voice_note(account: str):
    return message(account, PLACEHOLDER, content_type="voice", status="pending")


async def stored(db, message_id: int) -> Message:
    async with db.read() as session:
        row = await session.get(Message, message_id)
        assert row is not None
        return row


async def test_a_transcript_after_the_gate_gave_up_is_answered_in_a_turn_of_its_own(db):
    runtime, accounts = await make_runtime(db, ECHO, clock=ManualClock(), quiet_window_s=0, media_ready_timeout_s=0.3)
    pending = await runtime.ingestor.ingest(voice_note(accounts.terminal_id))
    await runtime.runner.run_until_idle()
    assert await reply_texts(db) == [f"got: {PLACEHOLDER}"]  # the gate waited, then went on

    await runtime.ingestor.mark_ready(pending.message_id, TRANSCRIPT)
    await runtime.runner.run_until_idle()
    await runtime.ingestor.mark_ready(pending.message_id, TRANSCRIPT)  # a re-run of the media job
    await runtime.runner.run_until_idle()

    assert await reply_texts(db) == [f"got: {PLACEHOLDER}", f"got: {TRANSCRIPT}"]
    first, second = await traces(db)
    row = await stored(db, pending.message_id)
    assert (row.content, row.turn_id) == (TRANSCRIPT, second.id)
    assert row.meta["answered_as_placeholder_by"] == first.id


async def test_a_transcript_that_lands_while_its_placeholder_is_answered_gets_the_next_turn(db):
    seen: list[list[str]] = []
    writing, finish = asyncio.Event(), asyncio.Event()

    class Gated:
        """Holds the first turn mid-generation until the test has made the media ready."""

        name = "gated"

        async def request(self, messages, params):
            seen.append(_customer_texts(messages))
            if len(seen) == 1:
                writing.set()
                await finish.wait()
            answer = f"answer {len(seen)}"
            return ModelResponse(parts=[ToolCallPart("reply", {"blocks": [{"type": "text", "text": answer}]})])

    runtime, accounts = await make_runtime(
        db, Gated(), clock=ManualClock(), quiet_window_s=0, media_ready_timeout_s=0.3
    )
    pending = await runtime.ingestor.ingest(voice_note(accounts.terminal_id))
    jobs = asyncio.create_task(runtime.runner.run_until_idle())
    await writing.wait()
    await runtime.ingestor.mark_ready(pending.message_id, TRANSCRIPT)  # committed before the turn's reply
    finish.set()
    await jobs

    # The second turn reads the transcript (its own earlier answer is history; the placeholder is not).
    assert seen == [[PLACEHOLDER], [TRANSCRIPT]]
    assert await reply_texts(db) == ["answer 1", "answer 2"]
    first, second = await traces(db)
    row = await stored(db, pending.message_id)
    assert (row.turn_id, row.meta["answered_as_placeholder_by"]) == (second.id, first.id)


async def test_a_late_transcript_in_a_thread_a_person_has_taken_is_left_to_them(db):
    runtime, accounts = await make_runtime(db, ECHO, clock=ManualClock(), quiet_window_s=0, media_ready_timeout_s=0.3)
    pending = await runtime.ingestor.ingest(voice_note(accounts.terminal_id))
    await runtime.runner.run_until_idle()
    async with db.transaction() as session:  # e.g. the customer asked for a person meanwhile
        await hand_off(
            session, tenant_id=accounts.tenant_id, conversation_id=str(pending.conversation_id),
            reason="asked for a person", run_key="r1", now=runtime.clock.now(),
        )  # fmt: skip
    await runtime.ingestor.mark_ready(pending.message_id, TRANSCRIPT)
    await runtime.runner.run_until_idle()

    assert await reply_texts(db) == [f"got: {PLACEHOLDER}"]  # no courtesy reply over the operator
    (first,) = await traces(db)
    row = await stored(db, pending.message_id)
    assert (row.content, row.turn_id) == (TRANSCRIPT, first.id)  # what the operator reads


async def test_late_media_reopened_and_then_handed_off_gets_no_courtesy_reply(db):
    """A hand-off after the media was opened again but before its turn ran: the customer had an
    answer to the placeholder already, so the person's thread gets no courtesy reply on top."""
    runtime, accounts = await make_runtime(db, ECHO, clock=ManualClock(), quiet_window_s=0.5, media_ready_timeout_s=0.3)
    pending = await runtime.ingestor.ingest(voice_note(accounts.terminal_id))
    await runtime.runner.run_until_idle()
    await runtime.ingestor.mark_ready(pending.message_id, TRANSCRIPT)  # its turn waits out the window
    async with db.transaction() as session:
        await hand_off(
            session, tenant_id=accounts.tenant_id, conversation_id=str(pending.conversation_id),
            reason="asked for a person", run_key="r2", now=runtime.clock.now(),
        )  # fmt: skip
    await runtime.runner.run_until_idle()

    assert await reply_texts(db) == [f"got: {PLACEHOLDER}"]
    row = await stored(db, pending.message_id)
    assert (row.content, row.processed_at is not None) == (TRANSCRIPT, True)  # seen, left to the person


def _customer_texts(messages) -> list[str]:
    requests = [m for m in messages if isinstance(m, ModelRequest)]
    return [str(p.content) for m in requests for p in m.parts if isinstance(p, UserPromptPart)]
