"""Collecting a turn's batch: the conversation's unanswered customer messages with its thread (who
and where to answer) and, when the batch is to be answered, the history, in one read."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.context.budget import drop_partial_first_turn
from frontdesk.context.conversation import ConversationRow, conversation_query, conversation_row
from frontdesk.output.rendering import DeliveryTarget
from frontdesk.output.transcript import message_text
from frontdesk.platform.model_budget import Claimed, Spent
from frontdesk.platform.store.schema import Conversation, Message
from frontdesk.reasoning.turn import TurnMessage

# The most stored messages one turn reads. The chat slot's memory budget decides how many of
# them the model sees (whole turns, newest first); this only keeps the query bounded.
HISTORY_LOAD_LIMIT = 200


@dataclass(frozen=True)
class Thread:
    """The conversation being answered, as read with its unanswered messages, and where to answer."""

    row: ConversationRow
    target: DeliveryTarget

    @classmethod
    def of(cls, row: ConversationRow) -> Thread:
        target = DeliveryTarget(
            channel=row.account.channel,
            channel_account_id=row.account.id,
            conversation_id=row.conversation.id,
            contact_external_id=row.contact.external_id,
            message_id=0,
            account_config=row.account.config,
        )
        return cls(row, target)

    @property
    def conversation(self) -> Conversation:
        return self.row.conversation

    @property
    def tenant_name(self) -> str:
        return self.row.tenant.name


@dataclass(frozen=True)
class Batch:
    """What one turn answers. ``waits`` go to the trace (how long it waited, pending media);
    ``courtesy``: the rows of a turn that handed the thread to a person but never committed its
    reply, owed the hold message rather than silence; ``claim``: the tenant's model budget for this
    turn (``Spent``: the turn is held without the model)."""

    thread: Thread
    rows: list[Message]
    waits: dict[str, Any]
    history: tuple[TurnMessage, ...]
    courtesy: bool = False
    claim: Claimed | Spent | None = None  # the model budget, claimed when the batch was collected

    @property
    def target(self) -> DeliveryTarget:
        """The thread's target, carrying the newest customer message's metadata (a LINE reply
        token, the message a typing indicator marks as read)."""
        return dataclasses.replace(self.thread.target, reply_context=dict(self.rows[-1].meta or {}))


# The hot statements are built once, with the conversation as a parameter: building a SELECT of
# this size costs more CPU than SQLite takes to run it.
@cache
def _unanswered_with_thread() -> Select[Any]:
    return (
        conversation_query()
        .add_columns(Message)
        .join(Message, Message.conversation_id == Conversation.id)
        .where(Conversation.id == bindparam("conversation_id"), Message.role == "user", Message.processed_at.is_(None))
        .order_by(Message.id)
    )


@cache
def _history() -> Select[Message]:
    return (
        select(Message)
        .where(Message.conversation_id == bindparam("conversation_id"), Message.processed_at.is_not(None))
        .order_by(Message.processed_at.desc(), Message.id.desc())
        .limit(HISTORY_LOAD_LIMIT)
    )


async def unanswered_with_thread(session: AsyncSession, conversation_id: str) -> tuple[list[Message], Thread | None]:
    """The conversation's unanswered customer messages (oldest first), each read with the
    conversation's row, in one statement; no thread when nothing waits."""
    found = (await session.execute(_unanswered_with_thread(), {"conversation_id": conversation_id})).all()
    if not found:
        return [], None
    return [columns[-1] for columns in found], Thread.of(conversation_row(found[0]))


async def history_of(session: AsyncSession, conversation_id: str) -> tuple[TurnMessage, ...]:
    """The conversation so far, in the order it was answered: a message that arrived while a
    reply was being written has a smaller id than that reply but comes after it. When the limit
    cut the conversation, its oldest turn may be missing its start and is left out."""
    rows = list(await session.scalars(_history(), {"conversation_id": conversation_id}))
    history = [turn_message(m) for m in reversed(rows)]
    if len(rows) == HISTORY_LOAD_LIMIT:
        history = drop_partial_first_turn(history, lambda m: m.role == "user")
    return tuple(history)


async def unanswered(session: AsyncSession, conversation_id: str) -> list[Message]:
    """The conversation's customer messages no turn has answered yet, oldest first."""
    rows = await session.scalars(
        select(Message)
        .where(Message.conversation_id == conversation_id, Message.role == "user", Message.processed_at.is_(None))
        .order_by(Message.id)
    )
    return list(rows)


def turn_message(message: Message) -> TurnMessage:
    meta = message.meta or {}
    transcript = meta.get("transcript")
    return TurnMessage(
        id=message.id,
        role=message.role,
        content_type=message.content_type,
        text=message_text(message),
        created_at=message.created_at,
        image_key=meta.get("media_key") if message.content_type == "image" else None,
        transcript_quality=transcript.get("quality") if isinstance(transcript, dict) else None,
    )
