"""Hand-off through the pipeline: the thread goes to a person, and only that thread."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from frontdesk.output.transcript import message_text
from frontdesk.platform.store.schema import Conversation, Message, Notification, Task, TurnTrace
from harness import converse, count, make_runtime, message, receipts, replies, reply, traces

REASON = "Customer wants to talk to a person about a reprint"
COURTESY = "Of course! A person from our team will reply to you here shortly."
REFER = {"tool": "refer_to_human", "args": {"reason_for_team": REASON}}
COURTESY_REPLY = {"reply": {"blocks": [{"type": "text", "text": COURTESY}], "claims": [{"type": "handoff_triggered"}]}}
ASK_FOR_A_PERSON = "Can I talk to a person please?"


def handoff_script(*calls: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "handoff",
        "rules": [{"match": r"(?i)\bperson\b", "responses": [*(calls or (REFER,)), COURTESY_REPLY]}],
        "default": [reply("got: {user_text}")],
    }


async def texts_in(db, conversation_id: str) -> list[str]:
    return [message_text(m) for m in await replies(db, conversation_id)]


async def ai_enabled(db, conversation_id: str) -> bool:
    async with db.transaction() as session:
        conversation = await session.get(Conversation, conversation_id)
    assert conversation is not None
    return conversation.ai_enabled


async def test_handoff_switches_ai_off_for_that_conversation_only(db):
    conv = await converse(
        db,
        handoff_script(),
        ("bob", "hello"),
        ("alice", ASK_FOR_A_PERSON),
        ("bob", "do you print flyers?"),
    )

    assert (await ai_enabled(db, conv["alice"]), await ai_enabled(db, conv["bob"])) == (False, True)
    assert await texts_in(db, conv["bob"]) == ["got: hello", "got: do you print flyers?"]


async def test_handoff_opens_a_high_priority_task_holding_the_reason(db):
    conv = await converse(db, handoff_script(), ("alice", ASK_FOR_A_PERSON))

    async with db.transaction() as session:
        (task,) = await session.scalars(select(Task))
        (note,) = await session.scalars(select(Notification))
    assert (task.conversation_id, task.kind, task.priority, task.status) == (conv["alice"], "handoff", "high", "open")
    assert (task.title, task.details["reason"]) == (REASON, REASON)
    assert (note.kind, note.conversation_id, note.task_id, note.text) == ("handoff", conv["alice"], task.id, REASON)


@pytest.mark.parametrize(
    "calls",
    [
        pytest.param((REFER, REFER), id="two-steps"),
        pytest.param(({"tools": [REFER, REFER]},), id="one-response"),
    ],
)
async def test_refer_to_human_called_twice_in_one_run_notifies_the_team_once(db, calls):
    conv = await converse(db, handoff_script(*calls), ("alice", ASK_FOR_A_PERSON))

    (trace,) = await traces(db)
    assert [(c["name"], c["ok"]) for c in trace.tool_calls] == [("refer_to_human", True)] * 2
    assert await count(db, Notification, Notification.kind == "handoff") == 1
    assert await count(db, Task, Task.kind == "handoff") == 1
    assert await texts_in(db, conv["alice"]) == [COURTESY]


async def test_courtesy_reply_is_delivered_with_its_handoff_claim_accepted(db):
    conv = await converse(db, handoff_script(), ("alice", ASK_FOR_A_PERSON))

    assert await texts_in(db, conv["alice"]) == [COURTESY]
    (trace,) = await traces(db)
    assert (trace.outcome, trace.route["intent"], trace.claims) == (
        "replied",
        "human_request",
        [{"type": "handoff_triggered"}],
    )
    assert "refer_to_human" in trace.tools_offered
    ((sent,), (receipt,)) = await replies(db), await receipts(db)
    assert (receipt.message_id, receipt.status) == (sent.id, "sent")


async def test_later_message_in_a_handed_off_thread_is_stored_but_not_answered(db):
    conv = await converse(
        db,
        handoff_script(),
        ("alice", ASK_FOR_A_PERSON),
        ("alice", "hello? is anyone there?"),
    )

    async with db.transaction() as session:
        later = await session.scalar(
            select(Message).where(
                Message.conversation_id == conv["alice"], Message.content == "hello? is anyone there?"
            )
        )
    assert later is not None
    assert later.processed_at is not None  # consumed: no worker picks it up again
    assert later.turn_id is None  # ...without an agent turn
    assert await texts_in(db, conv["alice"]) == [COURTESY]
    assert await count(db, TurnTrace) == 1
    assert not await ai_enabled(db, conv["alice"])


async def test_a_hand_off_whose_turn_never_committed_still_gets_the_courtesy_reply(db):
    """The hand-off commits inside its tool; if the turn's own reply is then lost (a crash, a lost
    lease), the next run must not swallow the customer's message in silence."""
    from frontdesk.humans import hand_off
    from frontdesk.packs.catalog import FALLBACK_TEXTS

    runtime, accounts = await make_runtime(db, handoff_script())
    ingested = await runtime.ingestor.ingest(message(accounts.webchat_id, ASK_FOR_A_PERSON))
    async with db.transaction() as session:  # what refer_to_human committed before the crash
        await hand_off(
            session,
            tenant_id=accounts.tenant_id,
            conversation_id=ingested.conversation_id,
            reason=REASON,
            run_key="crashed-run",
            now=runtime.clock.now(),
        )

    await runtime.assembler.process(ingested.conversation_id, "restarted-worker")
    await runtime.ingestor.ingest(message(accounts.webchat_id, "hello? anyone?"))
    await runtime.assembler.process(ingested.conversation_id, "restarted-worker")

    assert [message_text(m) for m in await replies(db)] == [FALLBACK_TEXTS["en"]]  # one courtesy reply, then silence
    assert await count(db, Message, Message.role == "user", Message.processed_at.is_(None)) == 0
    [trace] = await traces(db)
    assert trace.detail == "courtesy reply after a hand-off"
