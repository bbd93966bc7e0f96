"""Reading and acting on a tenant's threads. Every query is scoped by the operator's tenant:
an id from another tenant is simply not found (404), never shown and never acted on."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import and_, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.errors import ConflictError, NotFoundError
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._render import audit
from frontdesk.humans.console.auth import Principal
from frontdesk.humans.tasks import set_ai_enabled
from frontdesk.output.blocks import Block, TextBlock, blocks_adapter
from frontdesk.output.delivery import DeliveryTarget
from frontdesk.platform.store.schema import (
    ChannelAccount,
    ClaimRejection,
    Contact,
    Conversation,
    Message,
    Receipt,
    TurnTrace,
)

ATTENTION_RECEIPTS = ("failed", "partial")


@dataclass(frozen=True)
class ThreadRow:
    conversation: Conversation
    contact: Contact
    account: ChannelAccount


@dataclass(frozen=True)
class MessageView:
    message: Message
    blocks: list[Block]
    receipt: Receipt | None
    origin: str
    photo: str | None = None  # a link to the photo the customer sent


@dataclass(frozen=True)
class TraceView:
    trace: TurnTrace
    rejections: list[ClaimRejection]


async def tenant_channels(deps: ConsoleDeps, me: Principal) -> list[str]:
    async with deps.db.read() as session:
        found = await session.scalars(
            select(ChannelAccount.channel).where(ChannelAccount.tenant_id == me.tenant_id).distinct()
        )
        return sorted(found)


async def get_thread(session: AsyncSession, me: Principal, conversation_id: str) -> ThreadRow:
    row = (
        await session.execute(
            select(Conversation, Contact, ChannelAccount)
            .join(Contact, Contact.id == Conversation.contact_id)
            .join(ChannelAccount, ChannelAccount.id == Conversation.channel_account_id)
            .where(Conversation.id == conversation_id, Conversation.tenant_id == me.tenant_id)
        )
    ).first()
    if row is None:
        raise NotFoundError("no such conversation")
    conversation, contact, account = row
    return ThreadRow(conversation, contact, account)


async def thread_messages(
    deps: ConsoleDeps, conversation_id: str, limit: int = 200, *, sign: Callable[[str], str] | None = None
) -> list[MessageView]:
    """``sign``: a short-lived link to a stored file (the media store's), so a photo the customer
    sent shows as a thumbnail; without it the photo is named, not shown."""
    async with deps.db.read() as session:
        rows = (
            await session.execute(
                select(Message, Receipt)
                .outerjoin(Receipt, Receipt.message_id == Message.id)
                .where(Message.conversation_id == conversation_id)
                .order_by(Message.id.desc())
                .limit(limit)
            )
        ).all()
    views = []
    for message, receipt in reversed(rows):
        if message.content_type == "blocks":
            blocks: list[Block] = list(blocks_adapter.validate_json(message.content))
        else:
            blocks = [TextBlock.model_construct(type="text", text=message.content or f"[{message.content_type}]")]
        meta = message.meta or {}
        origin = str(meta.get("origin") or ("customer" if message.role == "user" else "agent"))
        key = meta.get("media_key") if message.content_type == "image" else None
        photo = sign(key) if sign is not None and isinstance(key, str) else None
        if photo is not None and not message.content:
            blocks = []  # the photo is the message
        views.append(MessageView(message, blocks, receipt, origin, photo))
    return views


async def thread_traces(deps: ConsoleDeps, conversation_id: str, limit: int = 50) -> dict[int, TraceView]:
    async with deps.db.read() as session:
        traces = list(
            await session.scalars(
                select(TurnTrace)
                .where(TurnTrace.conversation_id == conversation_id)
                .order_by(TurnTrace.id.desc())
                .limit(limit)
            )
        )
        rejections = list(
            await session.scalars(
                select(ClaimRejection)
                .where(ClaimRejection.turn_id.in_([t.id for t in traces]))
                .order_by(ClaimRejection.id)
            )
        )
    return {t.id: TraceView(t, [r for r in rejections if r.turn_id == t.id]) for t in traces}


async def fingerprint(deps: ConsoleDeps, conversation_id: str) -> str:
    """Changes whenever what the thread view shows changes (a message, a receipt, the AI switch)."""
    async with deps.db.read() as session:
        last = await session.scalar(select(func.max(Message.id)).where(Message.conversation_id == conversation_id))
        receipts = (
            await session.execute(
                select(Receipt.id, Receipt.status, Receipt.parts_sent, Receipt.replays).where(
                    Receipt.conversation_id == conversation_id
                )
            )
        ).all()
        ai = await session.scalar(select(Conversation.ai_enabled).where(Conversation.id == conversation_id))
    digest = hashlib.sha256(repr(sorted(tuple(r) for r in receipts)).encode()).hexdigest()[:16]
    return f"{last or 0}.{int(bool(ai))}.{digest}"


async def switch_ai(deps: ConsoleDeps, me: Principal, conversation_id: str, enabled: bool) -> None:
    async with deps.db.transaction() as session:
        await get_thread(session, me, conversation_id)
        await set_ai_enabled(session, conversation_id, enabled, deps.clock.now())
        audit(
            session,
            me,
            me.tenant_id,
            "ai_enabled" if enabled else "ai_disabled",
            deps.clock.now(),
            target=conversation_id,
        )
    deps.signals.publish(conversation_id)


async def operator_reply(deps: ConsoleDeps, me: Principal, conversation_id: str, text: str) -> str:
    """Send ``text`` through the thread's channel renderer with a receipt, and pause the AI.

    In the same transaction, the customer rows still waiting for an answer are marked answered
    (by this reply): a turn already running over them then fails its compare-and-set on
    ``processed_at`` and discards its reply (``LeaseLost``) instead of talking over the operator."""
    now = deps.clock.now()
    async with deps.db.transaction() as session:
        thread = await get_thread(session, me, conversation_id)
        await set_ai_enabled(session, conversation_id, False, now)
        await claim_if_unassigned(session, me, conversation_id)
        await session.execute(
            update(Message)
            .where(
                and_(
                    Message.conversation_id == conversation_id,
                    Message.role == "user",
                    Message.processed_at.is_(None),
                )
            )
            .values(processed_at=now)
        )
        target = DeliveryTarget(
            channel=thread.account.channel,
            channel_account_id=thread.account.id,
            conversation_id=conversation_id,
            contact_external_id=thread.contact.external_id,
            message_id=0,
            account_config=thread.account.config,
        )
        block = TextBlock(type="text", text=text)
        staged = await deps.deliverer.stage(session, target, [block], turn_id=None, origin="operator")
        stored = await session.get(Message, staged.target.message_id)
        if stored is not None:
            stored.meta = {"origin": "operator", "operator_id": me.operator_id}
        audit(
            session,
            me,
            me.tenant_id,
            "replied",
            now,
            target=conversation_id,
            details={"receipt_id": staged.receipt_id, "chars": len(text)},
        )
    status = await deps.deliverer.deliver(staged)
    deps.signals.publish(conversation_id)
    return status


async def claim_if_unassigned(session: AsyncSession, me: Principal, conversation_id: str) -> None:
    """An operator who replies to an unassigned thread takes it (as in the inboxes they know)."""
    await session.execute(
        update(Conversation)
        .where(Conversation.id == conversation_id, Conversation.assignee_id.is_(None))
        .values(assignee_id=me.operator_id)
    )


async def replay(deps: ConsoleDeps, me: Principal, receipt_id: int) -> tuple[str, str]:
    """Resend what did not go out of one of this tenant's deliveries. Returns (conversation, status)."""
    async with deps.db.read() as session:
        conversation_id = await session.scalar(
            select(Receipt.conversation_id)
            .join(Conversation, Conversation.id == Receipt.conversation_id)
            .where(Receipt.id == receipt_id, Conversation.tenant_id == me.tenant_id)
        )
    if conversation_id is None:
        raise NotFoundError("no such receipt")
    outcome = "error"
    try:
        status = await deps.deliverer.replay(receipt_id)
        outcome = status
    except ConflictError:  # not failed/partial (any more): the refusal is audited too
        outcome = "refused"
        raise
    finally:
        async with deps.db.transaction() as session:
            audit(
                session,
                me,
                me.tenant_id,
                "replayed",
                deps.clock.now(),
                target=str(receipt_id),
                details={"conversation_id": conversation_id, "status": outcome},
            )
    deps.signals.publish(conversation_id)
    return conversation_id, status


def text_of(message: Message) -> str:
    if message.content_type != "blocks":
        return message.content or f"[{message.content_type}]"
    parts = [
        b.text if b.type == "text" else f"[{len(b.urls)} image(s)]"
        for b in blocks_adapter.validate_json(message.content)
    ]
    return " ".join(parts)
