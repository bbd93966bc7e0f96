"""Writing an inbound message: contact, conversation, message row and its turn job, atomically.

The unique index on ``(channel_account_id, channel_message_id)`` is the last line of
idempotency: a redelivered message finds its earlier row and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.errors import NotFoundError
from frontdesk.ingestion.events import InboundMessage
from frontdesk.platform.clock import Clock
from frontdesk.platform.ids import ConversationId, MessageId, new_id
from frontdesk.platform.jobs import JobQueue
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, Contact, Conversation, Message

PROCESS_CONVERSATION = "process_conversation"
_ATTEMPTS = 3  # concurrent first messages of a new contact can collide on its unique keys


def conversation_job_key(conversation_id: str) -> str:
    return f"conversation:{conversation_id}"


@dataclass(frozen=True)
class IngestResult:
    message_id: MessageId
    conversation_id: ConversationId
    duplicate: bool
    # For a duplicate: whether the redelivery carried the same content as the stored row.
    same_content: bool = True


class Ingestor:
    def __init__(self, db: Database, queue: JobQueue, clock: Clock) -> None:
        self._db = db
        self._queue = queue
        self._clock = clock

    async def channel_account(self, channel_account_id: str, channel: str) -> ChannelAccount:
        async with self._db.transaction() as session:
            account = await session.get(ChannelAccount, channel_account_id)
        if account is None or account.channel != channel:
            raise NotFoundError(f"no {channel} channel account {channel_account_id!r}")
        return account

    async def ingest(self, event: InboundMessage) -> IngestResult:
        for attempt in range(_ATTEMPTS):
            try:
                async with self._db.transaction() as session:
                    result = await self._ingest(session, event)
            except IntegrityError:
                if attempt == _ATTEMPTS - 1:
                    raise
                continue  # another writer inserted the same contact/conversation/message: re-read
            if not result.duplicate:
                self._queue.notify()
            return result
        raise AssertionError("unreachable")

    async def _ingest(self, session: AsyncSession, event: InboundMessage) -> IngestResult:
        existing = await session.scalar(
            select(Message).where(
                Message.channel_account_id == event.channel_account_id,
                Message.channel_message_id == event.channel_message_id,
            )
        )
        if existing is not None:
            return IngestResult(
                MessageId(existing.id),
                ConversationId(existing.conversation_id),
                duplicate=True,
                same_content=existing.content == event.text,
            )
        account = await session.get(ChannelAccount, event.channel_account_id)
        if account is None:
            raise NotFoundError(f"no channel account {event.channel_account_id!r}")
        now = self._clock.now()
        contact = await session.scalar(
            select(Contact).where(
                Contact.channel_account_id == account.id, Contact.external_id == event.contact_external_id
            )
        )
        if contact is None:
            contact = Contact(
                id=new_id("ct"),
                tenant_id=account.tenant_id,
                channel_account_id=account.id,
                external_id=event.contact_external_id,
                display_name=event.contact_name,
                created_at=now,
            )
            session.add(contact)
            await session.flush()
        conversation = await session.scalar(
            select(Conversation).where(
                Conversation.channel_account_id == account.id, Conversation.contact_id == contact.id
            )
        )
        if conversation is None:
            conversation = Conversation(
                id=new_id("conv"),
                tenant_id=account.tenant_id,
                channel_account_id=account.id,
                contact_id=contact.id,
                ai_enabled=True,
                version=0,
                created_at=now,
                updated_at=now,
            )
            session.add(conversation)
        conversation.last_inbound_at = now
        conversation.updated_at = now
        message = Message(
            conversation_id=conversation.id,
            channel_account_id=account.id,
            channel_message_id=event.channel_message_id,
            role="user",
            content_type=event.content_type,
            content=event.text,
            meta=event.metadata,
            status=event.status,
            created_at=now,
        )
        session.add(message)
        await session.flush()
        await self._queue.enqueue(
            session,
            PROCESS_CONVERSATION,
            {"conversation_id": conversation.id},
            key=conversation_job_key(conversation.id),
            coalesce=True,
        )
        return IngestResult(MessageId(message.id), ConversationId(conversation.id), duplicate=False)

    async def find_conversation(self, channel_account_id: str, contact_external_id: str) -> str | None:
        async with self._db.transaction() as session:
            return await session.scalar(
                select(Conversation.id)
                .join(Contact, Contact.id == Conversation.contact_id)
                .where(Contact.channel_account_id == channel_account_id, Contact.external_id == contact_external_id)
            )

    async def mark_ready(self, message_id: int, text: str | None = None) -> None:
        """Resolve a pending media placeholder and let its conversation's turn run now
        (the readiness gate had deferred it up to the media timeout)."""
        async with self._db.transaction() as session:
            message = await session.get(Message, message_id)
            if message is None:
                raise NotFoundError(f"no message {message_id}")
            message.status = "ready"
            if text is not None:
                message.content = text
            await self._queue.enqueue(
                session,
                PROCESS_CONVERSATION,
                {"conversation_id": message.conversation_id},
                key=conversation_job_key(message.conversation_id),
                coalesce=True,
            )
        self._queue.notify()
