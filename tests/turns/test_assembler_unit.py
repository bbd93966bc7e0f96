"""Invariant 5 as the assembler's own logic, on the in-memory store: no database, a manual clock,
no sleeps. The same behaviours on SQLite and PostgreSQL, end to end, are ``test_assembler.py``'s."""

from __future__ import annotations

import pytest
from turn_kit import HOLD_TEXT, TurnKit

from frontdesk.platform.jobs import RetryLater
from frontdesk.reasoning.loop import FALLBACK_TEXT, Outcome
from frontdesk.turns.assembler import Attempt


async def test_a_burst_gets_one_reply_once_the_conversation_is_quiet() -> None:
    kit = TurnKit()
    conversation = kit.store.open_conversation()
    for text in ("hi", "I need business cards", "500 of them"):
        kit.store.receive(conversation, text)
        kit.clock.advance(0.05)

    assert await kit.assembler.process(conversation, "worker-a") == 0  # typed 0.05 s ago: not quiet
    assert kit.store.come_backs == [(conversation, pytest.approx(0.15))]
    assert kit.store.lease_holder(conversation) is None

    kit.clock.advance(0.15)
    assert await kit.assembler.process(conversation, "worker-a") == 1

    assert kit.texts() == ["re: hi\nI need business cards\n500 of them"]
    (record,) = kit.store.records
    assert (len(record.batch_ids), record.batch_span_ms) == (3, 100)
    latency = kit.store.latency[kit.store.sent[0].trace_id]
    assert latency["delivery_status"] == "sent"
    assert latency["wait_ms"] == 300
    assert kit.store.lease_holder(conversation) is None  # let go with the delivery
    assert kit.typing.shown[0].conversation_id == conversation


async def test_messages_sent_while_a_reply_is_written_get_exactly_one_more_reply_that_sees_the_first() -> None:
    kit = TurnKit()
    conversation = kit.quiet_conversation("first")
    turns, release = await kit.turn_held(conversation)
    kit.store.receive(conversation, "second")
    kit.store.receive(conversation, "third")
    kit.clock.advance(1)  # quiet again by the time the first reply is out
    release.set()

    assert await turns == 2
    assert kit.texts() == ["re: first", "re: second\nthird"]
    assert kit.responder.seen[1] == [
        ("user", "first"),
        ("assistant", "re: first"),
        ("user", "second"),
        ("user", "third"),
    ]


async def test_a_second_worker_finds_the_lease_held_and_leaves_the_rows_to_the_first() -> None:
    kit = TurnKit()
    conversation = kit.quiet_conversation("hi")
    first, release = await kit.turn_held(conversation)

    assert await kit.assembler.process(conversation, "worker-b") == 0
    release.set()
    assert await first == 1
    assert kit.texts() == ["re: hi"]


async def test_a_holder_whose_lease_ran_out_and_was_taken_over_sends_nothing_and_the_new_holder_answers_once() -> None:
    kit = TurnKit()
    conversation = kit.quiet_conversation("anyone there?")
    stalled, release = await kit.turn_held(conversation)
    kit.clock.advance(kit.store.lease_ttl_s + 1)  # worker a stalled past its lease
    kit.responder.release = None
    assert await kit.assembler.process(conversation, "worker-b") == 1
    release.set()

    assert await stalled == 0  # its reply was discarded at the fence
    assert kit.texts() == ["re: anyone there?"]
    assert [r.worker for r in kit.store.records] == ["worker-b"]


async def test_a_thread_taken_over_by_a_person_while_the_reply_was_written_gets_no_reply() -> None:
    kit = TurnKit()
    conversation = kit.quiet_conversation("I want to talk to someone")
    turn, release = await kit.turn_held(conversation)
    kit.store.take_over(conversation)
    release.set()

    assert await turn == 1
    assert kit.texts() == []
    (record,) = kit.store.records  # the turn is on record, its reply kept out of the thread
    assert record.result.outcome == Outcome.REPLIED
    assert kit.store.latency[next(iter(kit.store.latency))]["delivery_status"] == "not_sent"
    assert kit.store.unanswered(conversation) == []


async def test_messages_in_a_thread_a_person_has_are_consumed_without_a_turn() -> None:
    kit = TurnKit()
    conversation = kit.store.open_conversation()
    kit.store.take_over(conversation)
    kit.clock.advance(1)
    kit.store.receive(conversation, "thanks, see you tomorrow")
    kit.clock.advance(1)

    assert await kit.assembler.process(conversation, "worker-a") == 0
    assert kit.responder.seen == []
    assert kit.texts() == []
    assert kit.store.unanswered(conversation) == []
    assert kit.store.lease_holder(conversation) is None


async def test_messages_whose_turn_handed_the_thread_over_but_never_replied_get_the_courtesy_reply() -> None:
    kit = TurnKit()
    conversation = kit.store.open_conversation()
    kit.store.receive(conversation, "I need a person, please")
    kit.store.take_over(conversation, handoff_task=True)  # committed by a turn that then crashed
    kit.clock.advance(1)

    assert await kit.assembler.process(conversation, "worker-a") == 1
    assert kit.texts() == [HOLD_TEXT]
    assert kit.responder.seen == []  # no model for the courtesy reply


async def test_a_model_outage_is_retried_by_the_job_and_the_last_attempt_sends_the_hold_message() -> None:
    kit = TurnKit()
    conversation = kit.quiet_conversation("price of 500 cards?")
    kit.responder.outages = 2

    with pytest.raises(RetryLater):
        await kit.assembler.process(conversation, "worker-a", Attempt(1, 2))
    assert kit.store.records == []
    assert kit.texts() == []
    assert kit.store.lease_holder(conversation) is None
    assert await kit.store.waiting(conversation)

    kit.clock.advance(5)
    assert await kit.assembler.process(conversation, "worker-a", Attempt(2, 2)) == 1
    assert kit.texts() == [HOLD_TEXT]
    (record,) = kit.store.records
    assert "model unavailable on attempt 2 of 2" in (record.result.detail or "")


async def test_a_responder_that_fails_still_leaves_the_customer_the_hold_message() -> None:
    kit = TurnKit()
    conversation = kit.quiet_conversation("hello")
    kit.responder.fail_with = RuntimeError("a tool's bug")

    assert await kit.assembler.process(conversation, "worker-a") == 1
    assert kit.texts() == [FALLBACK_TEXT]
    (record,) = kit.store.records
    assert record.result.hold
    assert "a tool's bug" in (record.result.detail or "")


async def test_media_still_being_prepared_is_waited_for_then_answered_with_its_batch() -> None:
    kit = TurnKit()
    conversation = kit.store.open_conversation()
    kit.store.receive(conversation, "here is my logo")
    photo = kit.store.receive(conversation, "[photo]", pending=True)
    kit.clock.advance(1)

    assert await kit.assembler.process(conversation, "worker-a") == 0
    ((_, delay),) = kit.store.come_backs
    assert delay == pytest.approx(kit.quiet.media_ready_timeout_s - 1)

    kit.store.media_ready(photo)
    assert await kit.assembler.process(conversation, "worker-a") == 1
    assert kit.texts() == ["re: here is my logo\n[photo]"]


async def test_media_that_lands_after_the_wait_gave_up_gets_a_turn_of_its_own() -> None:
    kit = TurnKit()
    conversation = kit.store.open_conversation()
    photo = kit.store.receive(conversation, "[photo]", pending=True)
    kit.clock.advance(kit.quiet.media_ready_timeout_s + 1)  # the wait gave up: answered as its placeholder
    turn, release = await kit.turn_held(conversation)
    kit.store.media_ready(photo)  # lands while the placeholder's reply is written
    kit.clock.advance(1)
    release.set()

    assert await turn == 1
    assert kit.store.unanswered(conversation) == [photo]  # opened again, with a quiet window of its own
    assert kit.store.come_backs == [(conversation, pytest.approx(kit.quiet.window_s))]
    kit.clock.advance(kit.quiet.window_s)
    assert await kit.assembler.process(conversation, "worker-a") == 1
    assert kit.texts() == ["re: [photo]", "re: [photo]"]
    assert kit.store.unanswered(conversation) == []
