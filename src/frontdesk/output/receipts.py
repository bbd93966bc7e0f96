"""Receipt states: rolled up from a delivery's parts, and moved by the platform's own callbacks."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.output.rendering import PlannedPart
from frontdesk.platform.observability.instruments import receipt_finished
from frontdesk.platform.store.engine import unsynced_update
from frontdesk.platform.store.schema import DeliveryPart, Receipt

SENDING, SENT, PARTIAL, FAILED = "sending", "sent", "partial", "failed"

# Platform callbacks can arrive out of order ("read" before "delivered"); a state never goes back.
_PROGRESS = {"sent": 1, "delivered": 2, "read": 3, "played": 4}


async def finish_receipt(session: AsyncSession, receipt_id: int, now: datetime) -> str:
    """Set the receipt's final state from its parts: ``sent`` (all out), ``partial`` (some),
    ``failed`` (none, or nothing could be planned)."""
    receipt = await session.get(Receipt, receipt_id, with_for_update=True)
    if receipt is None:
        return FAILED
    parts = list(await session.scalars(select(DeliveryPart).where(DeliveryPart.receipt_id == receipt_id)))
    sent = [p for p in parts if p.status == SENT]
    receipt.parts_total = len(parts)
    receipt.parts_sent = len(sent)
    receipt.sent_text = sum(p.texts for p in sent)
    receipt.sent_image = sum(p.images for p in sent)
    planning_errors = [e for e in receipt.errors or [] if "seq" not in e] if not parts else []
    receipt.errors = planning_errors + [
        {"seq": p.seq, "block": p.block_index, "kind": p.kind, "error": p.error}
        for p in sorted(parts, key=lambda p: p.seq)
        if p.status != SENT
    ]
    if parts and len(sent) == len(parts):
        receipt.status = SENT
    else:
        receipt.status = PARTIAL if sent else FAILED
    receipt.finished_at = now
    receipt_finished(receipt.status)
    return receipt.status


# Most replies are one part: this is every such turn's last write, built once.
_FINISH_ONLY_PART = (
    unsynced_update(Receipt)
    .where(Receipt.id == bindparam("receipt"))
    .values(
        status=bindparam("final"),
        parts_total=1,
        parts_sent=bindparam("sent"),
        sent_text=bindparam("texts"),
        sent_image=bindparam("images"),
        errors=bindparam("failures"),
        finished_at=bindparam("now"),
    )
)


async def finish_only_part(
    session: AsyncSession, receipt_id: int, part: PlannedPart, status: str, error: str | None, now: datetime
) -> str:
    """``finish_receipt`` for a fresh delivery of a single part, whose outcome is known here: the
    receipt is written without reading it and its part back (a platform callback cannot have
    touched the part yet: its platform id commits in this very transaction)."""
    sent = status == SENT
    final = SENT if sent else FAILED
    outcome = {
        "receipt": receipt_id,
        "final": final,
        "sent": int(sent),
        "texts": part.texts if sent else 0,
        "images": part.images if sent else 0,
        "failures": [] if sent else [{"seq": 0, "block": part.block_index, "kind": part.kind, "error": error}],
        "now": now,
    }
    await session.execute(_FINISH_ONLY_PART, outcome)
    receipt_finished(final)
    return final


async def record_platform_status(
    session: AsyncSession,
    channel_account_id: str,
    platform_message_id: str,
    status: str,
    error: str | None,
    now: datetime,
) -> bool:
    """Apply a platform's delivery callback to the part that sent ``platform_message_id``.
    ``failed`` after the platform first accepted the call means the customer never got it: the
    part and its receipt say so. Returns whether the id was one of our sends."""
    part = await session.scalar(
        select(DeliveryPart).where(
            DeliveryPart.channel_account_id == channel_account_id,
            DeliveryPart.platform_message_id == platform_message_id,
        )
    )
    if part is None:
        return False
    if status == FAILED:
        part.platform_status = FAILED
        part.status = FAILED
        part.error = error or "the platform reported the message as failed"
        part.updated_at = now
        await session.flush()
        receipt = await session.get(Receipt, part.receipt_id)
        if receipt is not None and receipt.status != SENDING:
            await finish_receipt(session, part.receipt_id, now)
        return True
    if part.platform_status != FAILED and _PROGRESS.get(status, 0) > _PROGRESS.get(part.platform_status or "", 0):
        part.platform_status = status
        part.updated_at = now
    return True
