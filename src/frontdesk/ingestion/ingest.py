"""Writing an inbound message: contact, conversation, message row and its turn job, atomically.

The unique index on ``(channel_account_id, channel_message_id)`` is the last line of
idempotency: a redelivered message finds its earlier row and changes nothing.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, cast

from sqlalchemy import Insert, Table, bindparam, insert, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from frontdesk.errors import NotFoundError
from frontdesk.ingestion.events import InboundMessage
from frontdesk.platform.clock import Clock
from frontdesk.platform.ids import ConversationId, MessageId, new_id
from frontdesk.platform.jobs import JobQueue
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, Contact, Conversation, Message
from frontdesk.platform.store.thread_index import contact_row, index_rows, message_row

PROCESS_CONVERSATION = "process_conversation"
PREPARE_MEDIA = "prepare_media"  # ``ingestion.preparation``: re-host, transcribe, mark ready
_ATTEMPTS = 3  # concurrent first messages of a new contact can collide on its unique keys
# Messages whose redelivery is recognised in memory (about 200 bytes each): platforms redeliver
# within minutes, so the last tens of thousands cover a storm.
RECENT_DELIVERIES = 50_000
_DeliveryKey = tuple[str | None, str, str]
_ACCOUNTS, _CONTACTS = cast(Table, ChannelAccount.__table__), cast(Table, Contact.__table__)
_CONVERSATIONS, _MESSAGES = cast(Table, Conversation.__table__), cast(Table, Message.__table__)


# The statements every webhook runs, built once: their values are parameters of each execution
# (building them cost more CPU than SQLite took to run them).
_FIND_ACCOUNT_CONTACT_CONVERSATION = (
    select(_ACCOUNTS.c.tenant_id, _ACCOUNTS.c.channel, _CONTACTS.c.id, _CONVERSATIONS.c.id)
    .select_from(
        _ACCOUNTS.outerjoin(
            _CONTACTS,
            (_CONTACTS.c.channel_account_id == _ACCOUNTS.c.id) & (_CONTACTS.c.external_id == bindparam("external")),
        ).outerjoin(
            _CONVERSATIONS,
            (_CONVERSATIONS.c.contact_id == _CONTACTS.c.id) & (_CONVERSATIONS.c.channel_account_id == _ACCOUNTS.c.id),
        )
    )
    .where(_ACCOUNTS.c.id == bindparam("account"))
)
_INSERT_CONTACT = insert(_CONTACTS)
_INSERT_CONVERSATION = insert(_CONVERSATIONS)


@cache
def _insert_message(dialect: str) -> Insert:
    upsert = sqlite_insert if dialect == "sqlite" else postgresql_insert
    return (
        upsert(_MESSAGES)
        .on_conflict_do_nothing(index_elements=["channel_account_id", "channel_message_id"])
        .returning(_MESSAGES.c.id)
    )


CONVERSATION_JOB_KEY_PREFIX = "conversation:"


def conversation_job_key(conversation_id: str) -> str:
    return f"{CONVERSATION_JOB_KEY_PREFIX}{conversation_id}"


async def queue_turn(queue: JobQueue, session: AsyncSession, conversation_id: str, *, delay_s: float = 0.0) -> None:
    """Ask for a ``process_conversation`` run, in the caller's transaction. One queued job per
    conversation stands for all requests; it is due at the earliest time anyone asked for."""
    await queue.enqueue(
        session,
        PROCESS_CONVERSATION,
        {"conversation_id": conversation_id},
        key=conversation_job_key(conversation_id),
        coalesce=True,
        delay_s=delay_s,
    )


@dataclass(frozen=True)
class IngestResult:
    message_id: MessageId
    conversation_id: ConversationId
    duplicate: bool
    # For a duplicate: whether the redelivery carried the same content as the stored row.
    same_content: bool = True
    # This message started the conversation (a live view waiting for it may look it up now).
    new_conversation: bool = False


class Ingestor:
    def __init__(
        self,
        db: Database,
        queue: JobQueue,
        clock: Clock,
        *,
        turn_delay_s: float = 0.0,
        on_stored: Callable[[str], None] | None = None,
    ) -> None:
        """``turn_delay_s`` (the quiet window) schedules a message's turn job for when the window
        would close, so a burst costs one job run, not one per message. ``on_stored``: told the
        conversation's id once a new message is committed (the console's live views wake)."""
        self._on_stored = on_stored
        self._db = db
        self._queue = queue
        self._clock = clock
        self._turn_delay_s = turn_delay_s
        # (channel, account, platform message id) -> (row id, conversation id, text digest) of
        # the messages this process stored last, oldest first.
        self._recent: collections.OrderedDict[_DeliveryKey, tuple[MessageId, ConversationId, bytes]] = (
            collections.OrderedDict()
        )

    async def channel_account(self, channel_account_id: str, channel: str) -> ChannelAccount:
        async with self._db.read() as session:
            account = await session.get(ChannelAccount, channel_account_id)
        if account is None or account.channel != channel:
            raise NotFoundError(f"no {channel} channel account {channel_account_id!r}")
        return account

    async def ingest(self, event: InboundMessage, *, channel: str | None = None) -> IngestResult:
        """Store ``event`` and queue its turn, in one write transaction. ``channel``: refuse (404)
        an account of another channel.

        A redelivery of a message this process stored is answered from memory, without the
        database: on SQLite every write waits for one lock, and a storm of redeliveries (a
        platform retrying what it sent while we were slow) would queue behind new messages and
        turns. Any other redelivery (stored by another instance, or before a restart) is found by
        the unique index in the write transaction."""
        key = (channel, event.channel_account_id, event.channel_message_id)
        known = self._recent.get(key)
        if known is not None:
            self._recent.move_to_end(key)
            message_id, conversation_id, digest = known
            return IngestResult(message_id, conversation_id, duplicate=True, same_content=digest == _digest(event.text))
        for attempt in range(_ATTEMPTS):
            try:
                async with self._db.transaction() as session:
                    result = await self._ingest(session, event, channel)
            except IntegrityError:
                if attempt == _ATTEMPTS - 1:
                    raise
                continue  # another writer inserted the same contact/conversation/message: re-read
            if not result.duplicate:
                self._queue.notify()
                self._remember(key, result, event.text)
                if self._on_stored is not None:
                    self._on_stored(result.conversation_id)
            return result
        raise AssertionError("unreachable")

    def _remember(self, key: _DeliveryKey, result: IngestResult, text: str | None) -> None:
        self._recent[key] = (result.message_id, result.conversation_id, _digest(text))
        if len(self._recent) > RECENT_DELIVERIES:
            self._recent.popitem(last=False)

    async def _ingest(self, session: AsyncSession, event: InboundMessage, channel: str | None) -> IngestResult:
        # SQLAlchemy Core on the session's connection: the ORM's identity map and unit of work
        # cost more CPU than the four statements themselves, on the path every webhook waits on.
        connection = await session.connection()
        # One round trip for the account and, when they exist, the contact and its conversation.
        found = (
            await connection.execute(
                _FIND_ACCOUNT_CONTACT_CONVERSATION,
                {"account": event.channel_account_id, "external": event.contact_external_id},
            )
        ).first()
        if found is None or (channel is not None and found[1] != channel):
            raise NotFoundError(f"no {channel or 'such'} channel account {event.channel_account_id!r}")
        tenant_id, _channel, contact_id, conversation_id = found
        dialect = connection.dialect.name
        if conversation_id is not None and dialect == "postgresql":
            # Stamp the message under a share lock on its conversation: the turn's lease UPDATE
            # waits for it, so no turn judges the conversation quiet while a message stamped
            # earlier is still uncommitted (see ingestion/lease.py). SQLite's write lock does this.
            # Never UPDATE the conversation after this in the same transaction: two ingests
            # upgrading their share locks would deadlock each other.
            await connection.execute(
                select(_CONVERSATIONS.c.id).where(_CONVERSATIONS.c.id == conversation_id).with_for_update(read=True)
            )
        now = self._clock.now()
        if contact_id is None:
            contact_id = new_id("ct")
            contact = {
                "id": contact_id,
                "tenant_id": tenant_id,
                "channel_account_id": event.channel_account_id,
                "external_id": event.contact_external_id,
                "display_name": event.contact_name,
                "created_at": now,
            }
            await connection.execute(_INSERT_CONTACT, contact)
        started = conversation_id is None
        if conversation_id is None:
            conversation_id = new_id("conv")
            conversation = {
                "id": conversation_id,
                "tenant_id": tenant_id,
                "channel_account_id": event.channel_account_id,
                "contact_id": contact_id,
                "ai_enabled": True,
                "version": 0,
                "created_at": now,
                "updated_at": now,
            }
            await connection.execute(_INSERT_CONVERSATION, conversation)
        meta = dict(event.metadata)
        if event.media is not None:
            meta["media"] = event.media.model_dump(exclude_none=True)
        row = {
            "conversation_id": conversation_id,
            "channel_account_id": event.channel_account_id,
            "channel_message_id": event.channel_message_id,
            "role": "user",
            "content_type": event.content_type,
            "content": event.text,
            "metadata": meta,  # the column (the mapped attribute is ``meta``)
            "status": event.status,
            "created_at": now,
        }
        # The unique index decides: a redelivery inserts nothing (and logs no database error).
        message_id = (await connection.execute(_insert_message(dialect), row)).scalar()
        if message_id is None:
            return await self._duplicate(connection, event)
        words = [message_row(tenant_id, conversation_id, message_id, event.content_type, event.text)]
        if started:  # the console finds a new thread by its contact too
            words.append(contact_row(tenant_id, conversation_id, event.contact_name, event.contact_external_id))
        await index_rows(connection, words)  # (its newest-message mark: a trigger, migration 0012)
        if event.status == "pending" and event.media is not None:
            # Pending-first (invariant 4): the row and the job that resolves it commit together.
            await self._queue.enqueue(session, PREPARE_MEDIA, {"message_id": message_id}, key=f"media:{message_id}")
        await queue_turn(self._queue, session, conversation_id, delay_s=self._turn_delay_s)
        return IngestResult(
            MessageId(message_id), ConversationId(conversation_id), duplicate=False, new_conversation=started
        )

    async def _duplicate(self, connection: AsyncConnection, event: InboundMessage) -> IngestResult:
        """The earlier row of a redelivered message."""
        existing = (
            await connection.execute(
                select(_MESSAGES.c.id, _MESSAGES.c.conversation_id, _MESSAGES.c.content).where(
                    _MESSAGES.c.channel_account_id == event.channel_account_id,
                    _MESSAGES.c.channel_message_id == event.channel_message_id,
                )
            )
        ).first()
        if existing is None:  # the conflict was on this very key, so the row exists
            raise AssertionError(f"conflict without a row for {event.channel_message_id!r}")
        return _redelivery(existing.id, existing.conversation_id, existing.content, event)

    async def find_conversation(self, channel_account_id: str, contact_external_id: str) -> str | None:
        async with self._db.read() as session:
            return await session.scalar(
                select(Conversation.id)
                .join(Contact, Contact.id == Conversation.contact_id)
                .where(Contact.channel_account_id == channel_account_id, Contact.external_id == contact_external_id)
            )

    async def mark_ready(
        self, message_id: int, text: str | None = None, *, meta_updates: dict[str, Any] | None = None
    ) -> None:
        """Resolve a pending media placeholder and let its conversation's turn run now
        (the readiness gate had deferred it up to the media timeout).

        Media later than that timeout was answered as its placeholder by then ("[voice note:
        being transcribed]"): the row is opened again, so what the customer really sent gets a
        turn of its own instead of never being answered."""
        async with self._db.transaction() as session:
            # Locked: a turn committing this row right now is waited for, so its answer is seen
            # here, or (``TurnAssembler``) this readiness is seen by its commit.
            message = await session.get(Message, message_id, with_for_update=True, populate_existing=True)
            if message is None:
                raise NotFoundError(f"no message {message_id}")
            # A turn already answered it as its placeholder; unless a person has the thread now
            # (they read it in the console), it gets a turn of its own.
            answered_by = message.turn_id if message.status == "pending" else None
            if answered_by is not None and not await ai_answers(session, message.conversation_id):
                answered_by = None
            message.status = "ready"
            if text is not None:
                message.content = text
            if meta_updates:
                message.meta = {**(message.meta or {}), **meta_updates}
            if answered_by is not None:
                reopen_late_media(message, answered_by, self._clock.now())
            await queue_turn(self._queue, session, message.conversation_id)
        self._queue.notify()


def reopen_late_media(message: Message, answered_by: int, now: datetime) -> None:
    """Give media that a turn answered as its placeholder a turn of its own: unanswered again,
    and (``arrived``) arrived now, so the quiet window, the cap and the outage budget count from
    here and not from the placeholder's arrival."""
    message.meta = {**(message.meta or {}), "answered_as_placeholder_by": answered_by, "reopened_at": now.isoformat()}
    message.processed_at, message.turn_id = None, None


def arrived(message: Message) -> datetime:
    """When ``message`` became the customer's to be answered: its arrival, or the moment late
    media was opened again (``reopen_late_media``)."""
    reopened = (message.meta or {}).get("reopened_at")
    return datetime.fromisoformat(reopened) if isinstance(reopened, str) else message.created_at


def reopened(message: Message) -> bool:
    """Late media a turn already answered as its placeholder."""
    return "reopened_at" in (message.meta or {})


async def ai_answers(session: AsyncSession, conversation_id: str) -> bool:
    """The AI answers this conversation (no person has taken it), as of this transaction."""
    return bool(await session.scalar(select(Conversation.ai_enabled).where(Conversation.id == conversation_id)))


def _digest(text: str | None) -> bytes:
    return hashlib.blake2b((text or "").encode(), digest_size=16).digest()


def _redelivery(message_id: int, conversation_id: str, content: str | None, event: InboundMessage) -> IngestResult:
    """The stored row of a message delivered again; a different text under the same id is the
    caller's to refuse (web chat answers 409)."""
    return IngestResult(
        MessageId(message_id), ConversationId(conversation_id), duplicate=True, same_content=content == event.text
    )
