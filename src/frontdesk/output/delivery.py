"""Delivery with receipts (invariant 8).

The assistant message, its receipt (``sending``) and the planned platform calls (``pending``
parts) are written in the same transaction that marks the customer's messages answered,
*before* any platform call. Each call's outcome is recorded as it returns; at the end the receipt
becomes ``sent``, ``partial`` or ``failed`` with counts (``sent_text``, ``sent_image``) and
errors. A process killed between two calls leaves ``sending`` and ``pending`` parts: visible,
never resent by itself. ``replay`` is the deliberate resend of exactly the parts that did not go
out.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.errors import ConflictError, NotFoundError
from frontdesk.output.blocks import Block, blocks_adapter
from frontdesk.output.receipts import FAILED, PARTIAL, SENDING, SENT, finish_only_part, finish_receipt
from frontdesk.output.rendering import DeliveryTarget, PlannedPart, Renderer
from frontdesk.platform.clock import Clock
from frontdesk.platform.observability.tracing import DELIVER, Attributes, failed, stage
from frontdesk.platform.store.engine import Database, rows_affected, unsynced_update
from frontdesk.platform.store.schema import ChannelAccount, Contact, Conversation, DeliveryPart, Message, Receipt
from frontdesk.platform.store.thread_index import index_message

log = logging.getLogger(__name__)

# How often "typing…" is renewed, unless a renderer says otherwise with a ``typing_every_s``
# attribute (Telegram's lasts 5 s; WhatsApp's 25 s, and each call also marks the message read).
TYPING_EVERY_S = 4.0
REPLAYABLE = (FAILED, PARTIAL)
# A caller's last words in the delivery's final transaction, given the receipt's final status.
Finish = Callable[[AsyncSession, str], Awaitable[None]]

__all__ = ["FAILED", "PARTIAL", "SENDING", "SENT", "Deliverer", "DeliveryTarget", "Finish", "StagedReply"]


_MESSAGES = cast(Table, Message.__table__)
_RECEIPTS = cast(Table, Receipt.__table__)
_PARTS = cast(Table, DeliveryPart.__table__)
_INSERT_MESSAGE = insert(_MESSAGES).returning(_MESSAGES.c.id)
_INSERT_RECEIPT = insert(_RECEIPTS).returning(_RECEIPTS.c.id)
# Ids in the order of the rows given (one statement for all of a reply's parts).
_INSERT_PARTS = insert(_PARTS).returning(_PARTS.c.id, sort_by_parameter_order=True)

# Written once per part sent (every turn's reply): built once, executed with its values.
_RECORD_PART = (
    unsynced_update(DeliveryPart)
    .where(DeliveryPart.id == bindparam("part"))
    .values(
        status=bindparam("outcome"),
        error=bindparam("failure"),
        platform_message_id=bindparam("platform_id"),
        platform_message_ids=bindparam("platform_ids"),
        attempts=DeliveryPart.attempts + 1,
        updated_at=bindparam("now"),
    )
)


@dataclass(frozen=True)
class StagedReply:
    target: DeliveryTarget
    receipt_id: int
    blocks: tuple[Block, ...]
    parts: tuple[tuple[int, PlannedPart], ...] = ()  # (delivery_parts id, the call), in order


class Deliverer:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        renderers: Mapping[str, Renderer],
        *,
        on_finished: Callable[[str], None] | None = None,
    ) -> None:
        """``on_finished``: told the conversation's id once a delivery's outcome is committed
        (sent, partial or failed; a replay too): the runtime wakes the console's live views."""
        self._db = db
        self._clock = clock
        self._renderers = dict(renderers)
        self._on_finished = on_finished

    async def stage(
        self,
        session: AsyncSession,
        target_base: DeliveryTarget,
        blocks: Sequence[Block],
        *,
        turn_id: int | None,
        origin: str,
    ) -> StagedReply:
        """Insert the assistant message, its ``sending`` receipt and its planned calls in the
        caller's transaction."""
        now = self._clock.now()
        # Core on the session's connection: every reply is staged here, and the ORM's unit of
        # work cost more CPU than these inserts.
        connection = await session.connection()
        content = blocks_adapter.dump_json(list(blocks)).decode()
        message = {
            "conversation_id": target_base.conversation_id,
            "channel_account_id": target_base.channel_account_id,
            "channel_message_id": None,
            "role": "assistant",
            "content_type": "blocks",
            "content": content,
            "metadata": {"origin": origin},  # the column (the mapped attribute is ``meta``)
            "status": "ready",
            "processed_at": now,
            "turn_id": turn_id,
            "created_at": now,
        }
        message_id: int = (await connection.execute(_INSERT_MESSAGE, message)).scalar_one()
        await index_message(connection, target_base.conversation_id, message_id, "blocks", content)
        target = dataclasses.replace(target_base, message_id=message_id)
        plan, errors = self._plan(target, blocks)  # planned first: the receipt is inserted complete
        receipt = {
            "kind": "delivery",
            "message_id": message_id,
            "conversation_id": target.conversation_id,
            "channel_account_id": target.channel_account_id,
            "status": SENDING,
            "parts_total": len(plan),
            "parts_sent": 0,
            "errors": errors,
            "created_at": now,
        }
        receipt_id: int = (await connection.execute(_INSERT_RECEIPT, receipt)).scalar_one()
        parts = await self._insert_parts(session, receipt_id, target, plan)
        return StagedReply(target=target, receipt_id=receipt_id, blocks=tuple(blocks), parts=tuple(parts))

    def _plan(self, target: DeliveryTarget, blocks: Sequence[Block]) -> tuple[list[PlannedPart], list[dict[str, str]]]:
        """The platform calls for ``blocks``, or the receipt's errors when none can be planned."""
        renderer = self._renderers.get(target.channel)
        if renderer is None:
            return [], [{"error": f"no renderer for {target.channel!r}"}]
        try:
            return list(renderer.plan(target, blocks)), []
        except Exception as exc:  # a plan that cannot be made is a failed delivery, not a lost turn
            log.exception("cannot plan a %s delivery", target.channel)
            return [], [{"error": f"cannot plan: {type(exc).__name__}: {exc}"[:500]}]

    async def _add_parts(
        self, session: AsyncSession, receipt: Receipt, target: DeliveryTarget, blocks: Sequence[Block]
    ) -> list[tuple[int, PlannedPart]]:
        """Plan the parts of an existing receipt (one staged before parts existed)."""
        plan, errors = self._plan(target, blocks)
        if errors:
            receipt.errors = errors
        receipt.parts_total = len(plan)
        return await self._insert_parts(session, receipt.id, target, plan)

    async def _insert_parts(
        self, session: AsyncSession, receipt_id: int, target: DeliveryTarget, plan: Sequence[PlannedPart]
    ) -> list[tuple[int, PlannedPart]]:
        if not plan:
            return []
        now = self._clock.now()
        rows: list[dict[str, Any]] = [
            {
                "receipt_id": receipt_id,
                "channel_account_id": target.channel_account_id,
                "seq": seq,
                "block_index": part.block_index,
                "kind": part.kind,
                "texts": part.texts,
                "images": part.images,
                "request": part.request,
                "status": "pending",
                "platform_message_ids": [],
                "attempts": 0,
                "updated_at": now,
            }
            for seq, part in enumerate(plan)
        ]
        connection = await session.connection()
        ids = (await connection.execute(_INSERT_PARTS, rows)).scalars().all()
        return list(zip(ids, plan, strict=True))

    async def deliver(self, staged: StagedReply, *, then: Finish | None = None) -> str:
        """Send the staged parts; the receipt's final status is committed with the last part's.
        ``then``: more of the caller's bookkeeping for that same transaction (the turn's trace
        timings), given the final status: one write fewer per turn."""
        return await self._send(staged.receipt_id, staged.target, staged.parts, replay=False, then=then)

    async def replay(self, receipt_id: int, *, include_sending: bool = False) -> str:
        """Resend the parts of a ``failed``/``partial`` delivery that did not go out (``sending``
        too with ``include_sending``: a process died mid-delivery and an operator has checked)."""
        allowed = (*REPLAYABLE, SENDING) if include_sending else REPLAYABLE
        async with self._db.transaction() as session:
            claimed = await session.execute(
                update(Receipt)
                .where(Receipt.id == receipt_id, Receipt.kind == "delivery", Receipt.status.in_(allowed))
                .values(status=SENDING, replays=Receipt.replays + 1, finished_at=None)
            )
            if not rows_affected(claimed):
                receipt = await session.get(Receipt, receipt_id)
                if receipt is None:
                    raise NotFoundError(f"no receipt {receipt_id}")
                raise ConflictError(
                    f"receipt {receipt_id} is {receipt.status}; only {'/'.join(allowed)} can be replayed"
                )
            target = await self._target_of(session, receipt_id)
            if (
                await session.scalar(select(DeliveryPart.id).where(DeliveryPart.receipt_id == receipt_id).limit(1))
                is None
            ):
                # A delivery planned before parts existed, or one that could not be planned: plan it now.
                receipt = await session.get(Receipt, receipt_id)
                message = await session.get(Message, target.message_id)
                if receipt is not None and message is not None:
                    await self._add_parts(session, receipt, target, blocks_adapter.validate_json(message.content))
        return await self._send_unsent(receipt_id, target, replay=True)

    async def _target_of(self, session: AsyncSession, receipt_id: int) -> DeliveryTarget:
        row = (
            await session.execute(
                select(Receipt, ChannelAccount, Contact)
                .join(ChannelAccount, ChannelAccount.id == Receipt.channel_account_id)
                .join(Conversation, Conversation.id == Receipt.conversation_id)
                .join(Contact, Contact.id == Conversation.contact_id)
                .where(Receipt.id == receipt_id)
            )
        ).one()
        receipt, account, contact = row
        return DeliveryTarget(
            channel=account.channel,
            channel_account_id=account.id,
            conversation_id=receipt.conversation_id,
            contact_external_id=contact.external_id,
            message_id=receipt.message_id or 0,
            account_config=account.config,
        )

    async def _send_unsent(self, receipt_id: int, target: DeliveryTarget, *, replay: bool) -> str:
        async with self._db.read() as session:
            rows = list(
                await session.scalars(
                    select(DeliveryPart)
                    .where(DeliveryPart.receipt_id == receipt_id, DeliveryPart.status != SENT)
                    .order_by(DeliveryPart.seq)
                )
            )
        parts = [(r.id, PlannedPart(r.block_index, r.kind, r.request, texts=r.texts, images=r.images)) for r in rows]
        return await self._send(receipt_id, target, parts, replay=replay)

    async def _send(
        self,
        receipt_id: int,
        target: DeliveryTarget,
        parts: Sequence[tuple[int, PlannedPart]],
        *,
        replay: bool,
        then: Finish | None = None,
    ) -> str:
        attributes: Attributes = {
            "frontdesk.channel": target.channel,
            "frontdesk.receipt_id": receipt_id,
            "frontdesk.parts": len(parts),
            "frontdesk.replay": replay,
        }
        with stage(DELIVER, attributes) as span:
            status = await self._send_parts(receipt_id, target, parts, replay=replay, then=then)
            if self._on_finished is not None:
                self._on_finished(target.conversation_id)
            span.set_attribute("frontdesk.receipt_status", status)
            if status != SENT:
                failed(span, f"delivery {status}")
            return status

    async def _send_parts(
        self,
        receipt_id: int,
        target: DeliveryTarget,
        parts: Sequence[tuple[int, PlannedPart]],
        *,
        replay: bool,
        then: Finish | None,
    ) -> str:
        """One platform call per part, in order; each outcome is committed before the next call
        (the last one together with the receipt's final state, and ``then``)."""
        renderer = self._renderers.get(target.channel)

        async def finish(session: AsyncSession) -> str:
            status = await finish_receipt(session, receipt_id, self._clock.now())
            if then is not None:
                await then(session, status)
            return status

        if not parts:
            async with self._db.transaction() as session:
                return await finish(session)
        for position, (part_id, part) in enumerate(parts):
            status, error = SENT, None
            ids: tuple[str, ...] = ()
            try:
                if renderer is None:
                    raise LookupError(f"no renderer for {target.channel!r}")
                ids = (await renderer.send(target, part, replay=replay)).platform_message_ids
            except Exception as exc:  # recorded on the part; the other parts still go out
                log.warning("%s delivery part %s of receipt %s failed: %s", target.channel, position, receipt_id, exc)
                status, error = FAILED, f"{type(exc).__name__}: {exc}"[:1000]
            async with self._db.transaction() as session:
                outcome = {
                    "part": part_id,
                    "outcome": status,
                    "failure": error,
                    "platform_id": ids[0] if ids else None,
                    "platform_ids": list(ids),
                    "now": self._clock.now(),
                }
                await session.execute(_RECORD_PART, outcome)
                if position == len(parts) - 1:
                    if len(parts) == 1 and not replay:  # the whole delivery was this one part
                        final = await finish_only_part(session, receipt_id, part, status, error, self._clock.now())
                        if then is not None:
                            await then(session, final)
                        return final
                    return await finish(session)
        raise AssertionError("unreachable")

    @asynccontextmanager
    async def typing_while(self, target: DeliveryTarget) -> AsyncIterator[None]:
        """Keep the platform's typing indicator on while the body runs (best effort)."""
        renderer = self._renderers.get(target.channel)
        if renderer is None:
            yield
            return

        async def keep_typing() -> None:
            while True:
                try:
                    await renderer.typing(target)
                except Exception as exc:  # a typing indicator is never worth failing a turn
                    log.debug("typing indicator on %s failed: %s", target.channel, exc)
                await asyncio.sleep(float(getattr(renderer, "typing_every_s", TYPING_EVERY_S)))

        task = asyncio.create_task(keep_typing())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
