"""Failures nobody reports by calling ``notify``: a send that failed and a burst of refused replies
become one notification each, however often the sweeps run."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from frontdesk.humans.notifications.watch import (
    SPIKE_THRESHOLD,
    FailedDeliveryWatch,
    notify_failed_deliveries,
    notify_rejection_spikes,
)
from frontdesk.platform.store.schema import ClaimRejection, Conversation, Notification, Receipt, TurnTrace
from humans.test_notification_kit import CLOCK, world


async def notifications(db, kind: str) -> list[Notification]:
    async with db.transaction() as session:
        return list(await session.scalars(select(Notification).where(Notification.kind == kind)))


async def add_receipt(db, conversation_id: str, status: str, *, finished_ago: timedelta = timedelta()) -> int:
    async with db.transaction() as session:
        conversation = await session.get(Conversation, conversation_id)
        receipt = Receipt(
            kind="delivery",
            conversation_id=conversation_id,
            channel_account_id=conversation.channel_account_id,
            status=status,
            parts_total=2,
            parts_sent=1 if status == "partial" else (2 if status == "sent" else 0),
            errors=[{"seq": 1, "block": 0, "kind": "text", "error": "400 chat not found"}],
            created_at=CLOCK.now() - finished_ago,
            finished_at=CLOCK.now() - finished_ago,
        )
        session.add(receipt)
        await session.flush()
        return receipt.id


async def test_a_failed_send_is_reported_once_however_often_the_sweep_runs(db):
    place = await world(db)
    await add_receipt(db, place.conversation_id, "failed")
    await add_receipt(db, place.conversation_id, "partial")
    await add_receipt(db, place.conversation_id, "sent")
    await add_receipt(db, place.conversation_id, "failed", finished_ago=timedelta(days=2))  # long seen

    first = await notify_failed_deliveries(db, CLOCK)
    again = await notify_failed_deliveries(db, CLOCK)

    assert (first, again) == (2, 0)
    texts = sorted(n.text for n in await notifications(db, "delivery_failed"))
    assert texts == ["failed: 400 chat not found", "partial: 400 chat not found"]


async def add_rejections(db, conversation_id: str, count: int) -> None:
    async with db.transaction() as session:
        trace = TurnTrace(conversation_id=conversation_id, worker="w", started_at=CLOCK.now(), outcome="fallback")
        session.add(trace)
        await session.flush()
        for attempt in range(count):
            session.add(
                ClaimRejection(
                    conversation_id=conversation_id,
                    turn_id=trace.id,
                    attempt=attempt + 1,
                    claims=[],
                    failures=[{"rule": "price"}],
                    reply_text="$5",
                    created_at=CLOCK.now(),
                )
            )


async def test_a_burst_of_refused_replies_is_one_spike_per_window(db):
    place = await world(db)
    await add_rejections(db, place.conversation_id, SPIKE_THRESHOLD)

    assert await notify_rejection_spikes(db, CLOCK) == 1
    assert await notify_rejection_spikes(db, CLOCK) == 0
    (spike,) = await notifications(db, "claim_rejected_spike")
    assert spike.tenant_id == place.tenant_id


async def test_a_few_refusals_are_not_a_spike(db):
    place = await world(db)
    await add_rejections(db, place.conversation_id, SPIKE_THRESHOLD - 1)

    assert await notify_rejection_spikes(db, CLOCK) == 0


async def test_the_sweep_reads_only_what_finished_since_its_last_pass_and_sees_a_replay_again(db):
    place = await world(db)
    watch = FailedDeliveryWatch(db, CLOCK)
    recent = await add_receipt(db, place.conversation_id, "failed", finished_ago=timedelta(minutes=30))

    assert await watch() == 1  # the first pass looks back an hour
    await add_receipt(db, place.conversation_id, "failed", finished_ago=timedelta(minutes=20))
    assert await watch() == 0  # finished before the last pass: not read again
    async with db.transaction() as session:
        receipt = await session.get(Receipt, recent)
        receipt.replays, receipt.finished_at = 1, CLOCK.now()  # replayed, and failed again
    assert await watch() == 1
    assert await notify_failed_deliveries(db, CLOCK) == 1  # a full look-back still finds the other
