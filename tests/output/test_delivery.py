"""Invariant 8: the receipt exists as ``sending`` before the platform call, then ends
``sent``, ``partial`` or ``failed`` with counts and errors. Nothing is resent by itself."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from sqlalchemy import select

from frontdesk.errors import ConflictError
from frontdesk.output.blocks import Block, ImageGroupBlock, TextBlock
from frontdesk.output.receipts import record_platform_status
from frontdesk.output.rendering import DeliveryTarget, PlannedPart, SentPart, one_part_per_block
from frontdesk.platform.store.schema import DeliveryPart, Receipt
from harness import make_runtime, message, receipts, reply, reply_texts

TWO_BLOCKS = {
    "name": "two",
    "default": [{"reply": {"blocks": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}],
}
TEXT_AND_IMAGES = [
    TextBlock(text="Here they are"),
    ImageGroupBlock(urls=["https://x.test/1.png", "https://x.test/2.png"]),
]


class SimulatedKill(BaseException):
    """Not an ``Exception``: no handler of ours runs after it, as after a real kill. (Not
    ``KeyboardInterrupt`` either: asyncio re-raises that one out of the event loop, which would
    stop the test run itself now that a reply's commit and send run in their own task.)"""


class ScriptedPlatform:
    """A platform whose n-th call does what ``outcomes[n]`` says: ``ok``, ``fail`` or ``die``
    (the process is killed mid-delivery). Records what the receipt said during each call."""

    def __init__(self, db, outcomes: list[str]) -> None:
        self.db = db
        self.outcomes = list(outcomes)
        self.calls: list[tuple[int, bool]] = []
        self.status_seen_during_call: list[str] = []

    def plan(self, target: DeliveryTarget, blocks: Sequence[Block]) -> list[PlannedPart]:
        return one_part_per_block(blocks)

    async def send(self, target: DeliveryTarget, part: PlannedPart, *, replay: bool = False) -> SentPart:
        async with self.db.transaction() as session:
            status = await session.scalar(select(Receipt.status).where(Receipt.message_id == target.message_id))
        self.status_seen_during_call.append(status)
        self.calls.append((part.block_index, replay))
        outcome = self.outcomes.pop(0) if self.outcomes else "ok"
        if outcome == "die":
            raise SimulatedKill
        if outcome == "fail":
            raise ConnectionError("platform unreachable")
        return SentPart((f"pm-{len(self.calls)}",))

    async def typing(self, target: DeliveryTarget) -> None:
        return None


async def _answer(db, script, outcomes):
    runtime, accounts = await make_runtime(db, script, quiet_window_s=0)
    platform = ScriptedPlatform(db, outcomes)
    runtime.deliverer._renderers["terminal"] = platform
    first = await runtime.ingestor.ingest(message(accounts.terminal_id, "hi"))
    await runtime.assembler.process(first.conversation_id, "w")
    return runtime, platform


async def _deliver(db, blocks, outcomes):
    """Stage and deliver ``blocks`` on a terminal thread, as the assembler does."""
    runtime, accounts = await make_runtime(db, TWO_BLOCKS, quiet_window_s=0)
    platform = ScriptedPlatform(db, outcomes)
    deliverer = runtime.deliverer
    deliverer._renderers["terminal"] = platform
    first = await runtime.ingestor.ingest(message(accounts.terminal_id, "hi"))
    target = DeliveryTarget("terminal", accounts.terminal_id, first.conversation_id, "s1", 0)
    async with db.transaction() as session:
        staged = await deliverer.stage(session, target, blocks, turn_id=None, origin="test")
    await deliverer.deliver(staged)
    return runtime, platform


async def parts(db) -> list[tuple[int, str, str | None]]:
    async with db.transaction() as session:
        rows = await session.scalars(select(DeliveryPart).order_by(DeliveryPart.seq))
        return [(p.seq, p.status, p.error) for p in rows]


@pytest.mark.parametrize(
    ("outcomes", "status", "sent", "errors"),
    [
        (["ok", "ok"], "sent", 2, 0),
        (["ok", "fail"], "partial", 1, 1),
        (["fail", "fail"], "failed", 0, 2),
    ],
)
async def test_receipt_is_sending_during_the_platform_calls_then_final(db, outcomes, status, sent, errors):
    _, platform = await _answer(db, TWO_BLOCKS, outcomes)

    assert platform.status_seen_during_call == ["sending", "sending"]
    (receipt,) = await receipts(db)
    assert (receipt.kind, receipt.status, receipt.parts_total, receipt.parts_sent) == ("delivery", status, 2, sent)
    assert (receipt.sent_text, receipt.sent_image) == (sent, 0)
    assert len(receipt.errors) == errors
    assert all("platform unreachable" in e["error"] for e in receipt.errors)
    assert receipt.finished_at is not None


async def test_a_failing_image_call_ends_partial_and_counts_what_went_out(db):
    await _deliver(db, TEXT_AND_IMAGES, ["ok", "fail"])

    (receipt,) = await receipts(db)
    assert (receipt.status, receipt.sent_text, receipt.sent_image) == ("partial", 1, 0)
    assert receipt.errors == [
        {"seq": 1, "block": 1, "kind": "image_group", "error": "ConnectionError: platform unreachable"}
    ]


async def test_failed_delivery_is_not_resent_automatically(db):
    runtime, platform = await _answer(db, TWO_BLOCKS, ["fail", "fail"])

    await runtime.runner.sweep_once()
    while await runtime.runner.run_once():
        pass

    assert len(platform.calls) == 2
    assert [r.status for r in await receipts(db)] == ["failed"]


async def test_replay_resends_only_the_parts_that_did_not_go_out(db):
    runtime, platform = await _deliver(db, TEXT_AND_IMAGES, ["ok", "fail"])
    (receipt,) = await receipts(db)

    status = await runtime.deliverer.replay(receipt.id)

    assert status == "sent"
    assert platform.calls == [(0, False), (1, False), (1, True)]
    (receipt,) = await receipts(db)
    assert (receipt.status, receipt.replays, receipt.sent_text, receipt.sent_image, receipt.errors) == (
        "sent",
        1,
        1,
        2,
        [],
    )
    with pytest.raises(ConflictError):
        await runtime.deliverer.replay(receipt.id)  # nothing left to resend


async def test_a_process_killed_between_two_calls_leaves_sending_visible_and_replay_finishes_it(db):
    runtime, accounts = await make_runtime(db, TWO_BLOCKS, quiet_window_s=0)
    platform = ScriptedPlatform(db, ["ok", "die"])
    runtime.deliverer._renderers["terminal"] = platform
    first = await runtime.ingestor.ingest(message(accounts.terminal_id, "hi"))
    with pytest.raises(SimulatedKill):
        await runtime.assembler.process(first.conversation_id, "w")

    assert [r.status for r in await receipts(db)] == ["sending"]
    assert await parts(db) == [(0, "sent", None), (1, "pending", None)]
    (receipt,) = await receipts(db)
    with pytest.raises(ConflictError):
        await runtime.deliverer.replay(receipt.id)  # "sending" needs an operator's say-so

    assert await runtime.deliverer.replay(receipt.id, include_sending=True) == "sent"
    assert platform.calls == [(0, False), (1, False), (1, True)]


async def test_a_platform_failure_callback_turns_a_sent_receipt_partial(db):
    runtime, _ = await _answer(db, TWO_BLOCKS, ["ok", "ok"])
    (receipt,) = await receipts(db)
    async with db.transaction() as session:
        assert await record_platform_status(
            session, receipt.channel_account_id, "pm-2", "read", None, runtime.clock.now()
        )
        assert await record_platform_status(
            session, receipt.channel_account_id, "pm-2", "delivered", None, runtime.clock.now()
        )
        assert await record_platform_status(
            session, receipt.channel_account_id, "pm-1", "failed", "131047 re-engagement", runtime.clock.now()
        )
        assert not await record_platform_status(
            session, receipt.channel_account_id, "someone-else", "read", None, runtime.clock.now()
        )
    async with db.transaction() as session:
        rows = list(await session.scalars(select(DeliveryPart).order_by(DeliveryPart.seq)))
    assert [(p.status, p.platform_status) for p in rows] == [("failed", "failed"), ("sent", "read")]
    (receipt,) = await receipts(db)
    assert (receipt.status, receipt.sent_text) == ("partial", 1)


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
    prose = {"name": "p", "default": [{"text": "Happy to help."}, {"text": "Happy to help with your order."}]}
    runtime, accounts = await make_runtime(db, prose, quiet_window_s=0)
    first = await runtime.ingestor.ingest(message(accounts.terminal_id, "when do you open?"))

    await runtime.assembler.process(first.conversation_id, "w")

    assert await reply_texts(db) == ["Happy to help with your order."]
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


def test_text_is_split_on_sentence_boundaries_within_the_limit():
    from frontdesk.output.rendering import split_text, utf16_units

    text = "First sentence here. Second one is here too. Third!"
    assert split_text(text, 30) == ["First sentence here.", "Second one is here too. Third!"]
    assert split_text(text, 25) == ["First sentence here.", "Second one is here too.", "Third!"]
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    emoji = "😀" * 30  # two UTF-16 units each, as LINE counts
    assert all(utf16_units(piece) <= 11 for piece in split_text(emoji, 11, measure=utf16_units))
    assert "".join(split_text(emoji, 11, measure=utf16_units)) == emoji
