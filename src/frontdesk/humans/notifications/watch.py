"""Events nobody calls ``notify`` for: a send that failed, a burst of replies the gate refused.

Delivery and verification happen below the humans layer (output, reasoning), which must not
import it; so these are found by sweeps over their receipts and rejection rows, run by the job
runner's sweeper. Each event carries a dedupe key (the receipt; the tenant and the window), so
any number of sweeps, on any number of instances, page each subscriber once.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from frontdesk.humans.notifications.events import ClaimRejectedSpike, DeliveryFailed, Event
from frontdesk.humans.notifications.record import notify
from frontdesk.platform.clock import Clock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, ClaimRejection, Conversation, Receipt

# Older failures were either seen by an operator already or predate the notification routes.
LOOKBACK = timedelta(hours=1)
SPIKE_WINDOW = timedelta(minutes=15)
SPIKE_THRESHOLD = 5  # rejected replies per tenant per window; one or two are the gate doing its job


async def notify_failed_deliveries(db: Database, clock: Clock, since: datetime | None = None) -> int:
    """A ``delivery_failed`` event per receipt that ended ``failed`` or ``partial`` since ``since``
    (default: within ``LOOKBACK``)."""
    now = clock.now()
    since = max(since, now - LOOKBACK) if since is not None else now - LOOKBACK
    recorded = 0
    async with db.transaction() as session:
        rows = await session.execute(
            select(Receipt, Conversation.tenant_id, ChannelAccount.channel)
            .join(Conversation, Conversation.id == Receipt.conversation_id)
            .join(ChannelAccount, ChannelAccount.id == Receipt.channel_account_id)
            .where(
                Receipt.kind == "delivery",
                Receipt.status.in_(("failed", "partial")),
                Receipt.finished_at >= since,
            )
        )
        for receipt, tenant_id, channel in rows:
            detail = _first_error(receipt.errors) or f"{receipt.parts_sent} of {receipt.parts_total} parts sent"
            payload = DeliveryFailed(
                conversation_id=receipt.conversation_id,
                message_id=receipt.message_id,
                channel=channel,
                detail=f"{receipt.status}: {detail}"[:2000],
            )
            # A replay that fails again is a new failure: the key names the replay count.
            key = f"delivery_failed:{receipt.id}:{receipt.replays}"
            if await notify(session, Event(tenant_id=tenant_id, payload=payload, dedupe_key=key), now=now) is not None:
                recorded += 1
    return recorded


class FailedDeliveryWatch:
    """The sweep as the runner calls it: each pass reads only receipts finished since the previous
    one (with a margin for a receipt committed while the last pass ran), not the whole last hour
    again every few seconds. A replay finishes its receipt again, so it is seen again. The first
    pass after a start looks back ``LOOKBACK``; the dedupe keys make any overlap harmless."""

    MARGIN = timedelta(minutes=1)

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._last: datetime | None = None

    async def __call__(self) -> int:
        started = self._clock.now()
        since = self._last - self.MARGIN if self._last is not None else None
        recorded = await notify_failed_deliveries(self._db, self._clock, since)
        self._last = started
        return recorded


async def notify_rejection_spikes(db: Database, clock: Clock) -> int:
    """A ``claim_rejected_spike`` event per tenant whose replies the gate refused at least
    ``SPIKE_THRESHOLD`` times in the current window (a model or a pack gone wrong)."""
    now = clock.now()
    window_start = _window_start(now)
    recorded = 0
    async with db.transaction() as session:
        counts = await session.execute(
            select(Conversation.tenant_id, func.count(ClaimRejection.id))
            .join(Conversation, Conversation.id == ClaimRejection.conversation_id)
            .where(ClaimRejection.created_at >= window_start)
            .group_by(Conversation.tenant_id)
        )
        for tenant_id, count in counts:
            if count < SPIKE_THRESHOLD:
                continue
            payload = ClaimRejectedSpike(count=count, window_minutes=int(SPIKE_WINDOW.total_seconds() // 60))
            key = f"claim_rejected_spike:{tenant_id}:{window_start.isoformat()}"
            if await notify(session, Event(tenant_id=tenant_id, payload=payload, dedupe_key=key), now=now) is not None:
                recorded += 1
    return recorded


def _window_start(now: datetime) -> datetime:
    """The start of the fixed window ``now`` falls in (aligned to the epoch, the same on every
    instance, so the dedupe key of a window is too)."""
    seconds = SPIKE_WINDOW.total_seconds()
    stamp = now.timestamp()
    return datetime.fromtimestamp(stamp - stamp % seconds, tz=UTC)


def _first_error(errors: list[Any]) -> str:
    for error in errors:
        if isinstance(error, dict):
            text = error.get("error") or error.get("message") or error.get("detail")
            if text:
                return str(text)[:500]
        elif error:
            return str(error)[:500]
    return ""
