"""Invariant 8: the receipt exists as ``sending`` before the platform call, then ends
``sent``, ``partial`` or ``failed`` with counts and errors. Nothing is resent by itself."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from sqlalchemy import select

from frontdesk.output.blocks import Block
from frontdesk.output.delivery import DeliveryTarget, RenderResult
from frontdesk.platform.store.schema import Receipt
from harness import make_runtime, message, receipts, reply, reply_texts

TWO_BLOCKS = {
    "name": "two",
    "default": [{"reply": {"blocks": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}],
}


class RecordingRenderer:
    """A platform that reports what the receipt said at the moment it was called."""

    def __init__(self, db, outcome: str) -> None:
        self.db = db
        self.outcome = outcome
        self.status_seen_during_call: list[str] = []

    async def render(self, target: DeliveryTarget, blocks: Sequence[Block]) -> RenderResult:
        async with self.db.transaction() as session:
            status = await session.scalar(select(Receipt.status).where(Receipt.message_id == target.message_id))
        self.status_seen_during_call.append(status)
        if self.outcome == "raise":
            raise ConnectionError("platform unreachable")
        sent = {"sent": len(blocks), "partial": 1, "failed": 0}[self.outcome]
        errors = [] if sent == len(blocks) else [{"block": i, "error": "rejected"} for i in range(sent, len(blocks))]
        return RenderResult(parts_total=len(blocks), parts_sent=sent, errors=errors)


@pytest.mark.parametrize(
    ("outcome", "status", "sent", "has_errors"),
    [
        ("sent", "sent", 2, False),
        ("partial", "partial", 1, True),
        ("failed", "failed", 0, True),
        ("raise", "failed", 0, True),
    ],
)
async def test_receipt_is_sending_during_the_platform_call_then_final(db, outcome, status, sent, has_errors):
    runtime, accounts = await make_runtime(db, TWO_BLOCKS, quiet_window_s=0)
    platform = RecordingRenderer(db, outcome)
    runtime.assembler._deliverer._renderers["terminal"] = platform
    first = await runtime.ingestor.ingest(message(accounts.terminal_id, "hi"))

    await runtime.assembler.process(first.conversation_id, "w")

    assert platform.status_seen_during_call == ["sending"]
    (receipt,) = await receipts(db)
    assert (receipt.kind, receipt.status, receipt.parts_total, receipt.parts_sent) == ("delivery", status, 2, sent)
    assert bool(receipt.errors) is has_errors
    assert receipt.finished_at is not None
    if outcome == "raise":
        assert "platform unreachable" in receipt.errors[0]["error"]


async def test_failed_delivery_is_not_resent_automatically(db):
    runtime, accounts = await make_runtime(db, TWO_BLOCKS, quiet_window_s=0)
    platform = RecordingRenderer(db, "failed")
    runtime.assembler._deliverer._renderers["terminal"] = platform
    first = await runtime.ingestor.ingest(message(accounts.terminal_id, "hi"))
    await runtime.assembler.process(first.conversation_id, "w")

    await runtime.runner.sweep_once()
    while await runtime.runner.run_once():
        pass

    assert len(platform.status_seen_during_call) == 1
    assert [r.status for r in await receipts(db)] == ["failed"]


async def test_model_that_never_replies_ships_the_fallback_with_a_receipt(db):
    runtime, accounts = await make_runtime(
        db, {"name": "x", "default": [{"error": "overloaded", "status": 529}]}, quiet_window_s=0
    )
    first = await runtime.ingestor.ingest(message(accounts.terminal_id, "hi"))

    await runtime.assembler.process(first.conversation_id, "w")

    (text,) = await reply_texts(db)
    assert "team will get back to you" in text
    assert [r.status for r in await receipts(db)] == ["sent"]


async def test_prose_instead_of_reply_is_retried_once_then_salvaged_into_the_reply(db):
    prose = {"name": "p", "default": [{"text": "We open at 9."}, {"text": "We open at 9am, Monday to Friday."}]}
    runtime, accounts = await make_runtime(db, prose, quiet_window_s=0)
    first = await runtime.ingestor.ingest(message(accounts.terminal_id, "when do you open?"))

    await runtime.assembler.process(first.conversation_id, "w")

    assert await reply_texts(db) == ["We open at 9am, Monday to Friday."]
    from harness import traces

    (trace,) = await traces(db)
    assert (trace.outcome, trace.steps) == ("salvaged", 2)


async def test_prose_then_reply_after_the_hint_ships_the_reply(db):
    runtime, accounts = await make_runtime(
        db, {"name": "p", "default": [{"text": "hmm"}, reply("Proper answer")]}, quiet_window_s=0
    )
    first = await runtime.ingestor.ingest(message(accounts.terminal_id, "hi"))

    await runtime.assembler.process(first.conversation_id, "w")

    assert await reply_texts(db) == ["Proper answer"]
