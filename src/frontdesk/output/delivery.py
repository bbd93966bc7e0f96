"""Delivery with receipts (invariant 8).

The assistant message and its receipt (``sending``) are written in the same transaction that
marks the customer's messages answered, *before* any platform call. After the renderer returns,
the receipt becomes ``sent``, ``partial`` or ``failed`` with counts and errors. A crash between
the two leaves ``sending`` in place: visible, never silently resent (no automatic retry; a
deliberate replay belongs to the operator console).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.output.blocks import Block, blocks_adapter
from frontdesk.platform.clock import Clock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Message, Receipt

log = logging.getLogger(__name__)

SENDING, SENT, PARTIAL, FAILED = "sending", "sent", "partial", "failed"


@dataclass(frozen=True)
class DeliveryTarget:
    """Where a reply goes, in channel-neutral terms; renderers read their own ids from it."""

    channel: str
    channel_account_id: str
    conversation_id: str
    contact_external_id: str
    message_id: int
    account_config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RenderResult:
    parts_total: int
    parts_sent: int
    errors: list[dict[str, Any]] = field(default_factory=list)


class Renderer(Protocol):
    """Compiles reply blocks to one platform's native calls and performs them."""

    async def render(self, target: DeliveryTarget, blocks: Sequence[Block]) -> RenderResult: ...


@dataclass(frozen=True)
class StagedReply:
    target: DeliveryTarget
    receipt_id: int
    blocks: tuple[Block, ...]


async def stage_reply(
    session: AsyncSession,
    target_base: DeliveryTarget,
    blocks: Sequence[Block],
    *,
    turn_id: int | None,
    origin: str,
    clock: Clock,
) -> StagedReply:
    """Insert the assistant message and its ``sending`` receipt in the caller's transaction."""
    now = clock.now()
    message = Message(
        conversation_id=target_base.conversation_id,
        channel_account_id=target_base.channel_account_id,
        channel_message_id=None,
        role="assistant",
        content_type="blocks",
        content=blocks_adapter.dump_json(list(blocks)).decode(),
        meta={"origin": origin},
        status="ready",
        processed_at=now,
        turn_id=turn_id,
        created_at=now,
    )
    session.add(message)
    await session.flush()
    receipt = Receipt(
        kind="delivery",
        message_id=message.id,
        conversation_id=target_base.conversation_id,
        channel_account_id=target_base.channel_account_id,
        status=SENDING,
        parts_total=0,
        parts_sent=0,
        errors=[],
        created_at=now,
    )
    session.add(receipt)
    await session.flush()
    target = DeliveryTarget(
        channel=target_base.channel,
        channel_account_id=target_base.channel_account_id,
        conversation_id=target_base.conversation_id,
        contact_external_id=target_base.contact_external_id,
        message_id=message.id,
        account_config=target_base.account_config,
    )
    return StagedReply(target=target, receipt_id=receipt.id, blocks=tuple(blocks))


class Deliverer:
    def __init__(self, db: Database, clock: Clock, renderers: Mapping[str, Renderer]) -> None:
        self._db = db
        self._clock = clock
        self._renderers = dict(renderers)

    async def deliver(self, staged: StagedReply) -> str:
        renderer = self._renderers.get(staged.target.channel)
        if renderer is None:
            result = RenderResult(len(staged.blocks), 0, [{"error": f"no renderer for {staged.target.channel!r}"}])
        else:
            try:
                result = await renderer.render(staged.target, staged.blocks)
            except Exception as exc:  # the receipt must end; the error is recorded on it
                log.exception("renderer %s failed", staged.target.channel)
                result = RenderResult(len(staged.blocks), 0, [{"error": f"{type(exc).__name__}: {exc}"[:500]}])
        status = SENT if result.parts_sent == result.parts_total else PARTIAL if result.parts_sent else FAILED
        async with self._db.transaction() as session:
            receipt = await session.get(Receipt, staged.receipt_id)
            if receipt is not None:
                receipt.status = status
                receipt.parts_total = result.parts_total
                receipt.parts_sent = result.parts_sent
                receipt.errors = result.errors
                receipt.finished_at = self._clock.now()
        return status
