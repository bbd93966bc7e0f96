"""A ``TurnStore`` in memory: the turn's unit tests run on it, without a database.

It keeps the store's rules, not its tables: the conversation lease (taken when free, ours or run
out; renewed and fenced only by its holder; let go with the delivery when nothing waits), the
processed marks (a commit that finds its batch answered by another turn writes nothing), late
media opened again, the reply in the history once committed. The contract tests
(``tests/turns/test_store_contract.py``) run the same checks on it and on the database.

What it leaves out: the model budget (it claims nothing), the tasks a hold opens and the ledgers
(the committed ``TurnRecord`` says what would be written: see ``records``), the delivery's
platform calls (``sent`` lists what went out, in order).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from frontdesk.context.conversation import ContactProfile, ConversationContext, ConversationRow
from frontdesk.context.ledgers import WorkingState
from frontdesk.ingestion.ingest import reopen_late_media
from frontdesk.ingestion.quiet_window import Ready
from frontdesk.output.blocks import Block, blocks_adapter
from frontdesk.output.delivery import StagedReply
from frontdesk.output.rendering import DeliveryTarget
from frontdesk.platform.clock import Clock
from frontdesk.platform.model_budget import Claimed
from frontdesk.platform.periodic import every
from frontdesk.platform.store.schema import ChannelAccount, Contact, Conversation, Message, Tenant
from frontdesk.reasoning.turn import TurnMessage
from frontdesk.turns.batch import Thread, turn_message
from frontdesk.turns.commit import Committed, LeaseLost
from frontdesk.turns.ports import RENEW, TAKE, Found, Judge, Latency, LeaseStep
from frontdesk.turns.record import Reply, TurnRecord


@dataclass(frozen=True)
class Sent:
    """A reply that went out: its conversation, its blocks and the trace of its turn."""

    conversation_id: str
    blocks: tuple[Block, ...]
    trace_id: int

    @property
    def text(self) -> str:
        return "\n".join(b.text if b.type == "text" else (b.caption or "") for b in self.blocks)


@dataclass
class _Thread:
    conversation: Conversation
    account: ChannelAccount
    contact: Contact
    tenant: Tenant
    messages: list[Message] = field(default_factory=list)
    handoffs: list[datetime] = field(default_factory=list)  # when each open hand-off task was opened


class InMemoryTurnStore:
    def __init__(self, clock: Clock, lease_ttl_s: float = 30.0) -> None:
        self._clock = clock
        self.lease_ttl_s = lease_ttl_s
        self._threads: dict[str, _Thread] = {}
        self._ids = itertools.count(1)
        self.records: list[TurnRecord] = []  # every committed turn, in commit order
        self.sent: list[Sent] = []  # every delivered reply, in order
        self.latency: dict[int, dict[str, Any]] = {}  # by trace id, as the delivery recorded it
        self.come_backs: list[tuple[str, float]] = []  # (conversation, delay) of each re-queued job
        self.given_back: list[Claimed] = []

    # -- arranging a test

    def open_conversation(self, *, channel: str = "terminal", tenant_name: str = "Print shop") -> str:
        now = self._clock.now()
        n = next(self._ids)
        tenant = Tenant(id=f"tenant-{n}", name=tenant_name, pack="catalog", policy={}, languages=["en"])
        tenant.data_revision, tenant.created_at = 0, now
        account = ChannelAccount(id=f"account-{n}", tenant_id=tenant.id, channel=channel, name=channel, config={})
        contact = Contact(id=f"contact-{n}", tenant_id=tenant.id, channel_account_id=account.id, external_id=f"c{n}")
        conversation = Conversation(
            id=f"conversation-{n}",
            tenant_id=tenant.id,
            channel_account_id=account.id,
            contact_id=contact.id,
            ai_enabled=True,
            lock_owner=None,
            lock_until=None,
            version=0,
            created_at=now,
            updated_at=now,
        )
        self._threads[conversation.id] = _Thread(conversation, account, contact, tenant)
        return conversation.id

    def receive(self, conversation_id: str, text: str, *, pending: bool = False) -> int:
        """A customer message arrives (``pending``: media still being prepared). Returns its id."""
        thread = self._threads[conversation_id]
        message = Message(
            id=next(self._ids),
            conversation_id=conversation_id,
            channel_account_id=thread.account.id,
            role="user",
            content_type="image" if pending else "text",
            content=text,
            meta={},
            status="pending" if pending else "ready",
            processed_at=None,
            turn_id=None,
            created_at=self._clock.now(),
        )
        thread.messages.append(message)
        return message.id

    def media_ready(self, message_id: int) -> None:
        self._message(message_id).status = "ready"

    def take_over(self, conversation_id: str, *, handoff_task: bool = False) -> None:
        """A person takes the thread (``handoff_task``: by a hand-off task opened now)."""
        thread = self._threads[conversation_id]
        thread.conversation.ai_enabled = False
        if handoff_task:
            thread.handoffs.append(self._clock.now())

    def lease_holder(self, conversation_id: str) -> str | None:
        return self._threads[conversation_id].conversation.lock_owner

    def unanswered(self, conversation_id: str) -> list[int]:
        return [m.id for m in self._waiting(self._threads[conversation_id])]

    # -- the port

    @contextlib.asynccontextmanager
    async def kept_alive(self, conversation_id: str, owner: str) -> AsyncIterator[None]:
        async def renew() -> bool:
            return self._extend(self._threads[conversation_id].conversation, owner) is not None

        async with every(self.lease_ttl_s / 3, renew, what=f"lease renewal of {conversation_id}"):
            yield

    async def collect(self, conversation_id: str, owner: str, lease: LeaseStep, judge: Judge) -> Found | None:
        thread = self._threads[conversation_id]
        if lease == TAKE:
            settled = self._take(thread.conversation, owner)
        elif lease == RENEW:
            settled = self._extend(thread.conversation, owner)
        else:
            settled = lease
        if settled is None:
            return None
        rows = [_copy(m) for m in self._waiting(thread)]
        if not rows:
            return Found([], None, None)
        found_thread = Thread.of(self._row(thread))
        ready = judge(rows, found_thread, settled)
        if not isinstance(ready, Ready):
            return Found(rows, found_thread, ready)
        return Found(rows, found_thread, ready, self._history(thread))

    async def release(self, conversation_id: str, owner: str) -> None:
        conversation = self._threads[conversation_id].conversation
        if conversation.lock_owner == owner:
            conversation.lock_owner, conversation.lock_until = None, None

    async def context(self, thread: Thread, now: datetime) -> ConversationContext:
        row = thread.row
        return ConversationContext(
            tenant_id=row.tenant.id,
            pack=row.tenant.pack,
            policy_overrides=dict(row.tenant.policy or {}),
            contact=ContactProfile(display_name=row.contact.display_name),
            open_tasks=[],
            episodic=None,
            ledgers=WorkingState(now=now),
            assistant_replies=row.replies,
            snapshot_replies_covered=0,
            snapshot_updated_at=None,
        )

    async def commit(self, record: TurnRecord, target: DeliveryTarget) -> Committed:
        thread = self._threads[record.conversation_id]
        conversation = thread.conversation
        if conversation.lock_owner != record.worker:
            raise LeaseLost(record.conversation_id)
        batch = [self._message(i) for i in record.batch_ids]
        if any(m.processed_at is not None for m in batch):  # another turn answered them meanwhile
            raise LeaseLost(record.conversation_id)
        now = self._clock.now()
        reply = Reply.of(record, conversation.ai_enabled)
        trace_id = next(self._ids)
        for message in batch:
            message.processed_at, message.turn_id = now, trace_id
        if conversation.ai_enabled:
            for message in batch:
                if message.id in record.pending_media_ids and message.status == "ready":
                    reopen_late_media(message, trace_id, now)
        self.records.append(record)
        staged = None
        if reply.blocks:
            message = Message(
                id=next(self._ids),
                conversation_id=conversation.id,
                channel_account_id=thread.account.id,
                role="assistant",
                content_type="blocks",
                content=blocks_adapter.dump_json(list(reply.blocks)).decode(),
                meta={"origin": "agent"},
                status="ready",
                processed_at=now,
                turn_id=trace_id,
                created_at=now,
            )
            thread.messages.append(message)
            staged_target = dataclasses.replace(target, message_id=message.id)
            staged = StagedReply(staged_target, receipt_id=trace_id, blocks=tuple(reply.blocks))
        return Committed(trace_id, now, reply, staged)

    async def deliver(self, committed: Committed, conversation_id: str, owner: str, latency: Latency) -> bool:
        status = "not_sent"
        if committed.staged is not None:
            self.sent.append(Sent(conversation_id, committed.staged.blocks, committed.trace_id))
            status = "sent"
        self.latency[committed.trace_id] = latency(status)
        thread = self._threads[conversation_id]
        if thread.conversation.lock_owner != owner or self._waiting(thread):
            return False
        thread.conversation.lock_owner, thread.conversation.lock_until = None, None
        return True

    async def give_back(self, claim: Claimed) -> None:
        self.given_back.append(claim)

    async def waiting(self, conversation_id: str) -> bool:
        return bool(self._waiting(self._threads[conversation_id]))

    async def media_landed(self, message_ids: tuple[int, ...]) -> bool:
        return any(self._message(i).status != "pending" for i in message_ids)

    async def come_back(self, conversation_id: str, delay_s: float) -> None:
        self.come_backs.append((conversation_id, delay_s))

    async def handed_off_since(self, conversation_id: str, since: datetime) -> bool:
        return any(at >= since for at in self._threads[conversation_id].handoffs)

    async def history(self, conversation_id: str) -> tuple[TurnMessage, ...]:
        return self._history(self._threads[conversation_id])

    async def mark_seen_without_reply(self, conversation_id: str) -> None:
        now = self._clock.now()
        for message in self._waiting(self._threads[conversation_id]):
            message.processed_at = now

    # -- the rules

    def _take(self, conversation: Conversation, owner: str) -> datetime | None:
        now = self._clock.now()
        free = conversation.lock_owner in (None, owner)
        if not free and (conversation.lock_until is None or conversation.lock_until >= now):
            return None
        conversation.lock_owner, conversation.lock_until = owner, now + timedelta(seconds=self.lease_ttl_s)
        return now

    def _extend(self, conversation: Conversation, owner: str) -> datetime | None:
        if conversation.lock_owner != owner:
            return None
        now = self._clock.now()
        conversation.lock_until = now + timedelta(seconds=self.lease_ttl_s)
        return now

    def _waiting(self, thread: _Thread) -> list[Message]:
        return [m for m in thread.messages if m.role == "user" and m.processed_at is None]

    def _history(self, thread: _Thread) -> tuple[TurnMessage, ...]:
        answered = [m for m in thread.messages if m.processed_at is not None]
        answered.sort(key=lambda m: (m.processed_at, m.id))
        return tuple(turn_message(m) for m in answered)

    def _row(self, thread: _Thread) -> ConversationRow:
        replies = sum(m.role == "assistant" for m in thread.messages)
        conversation = _copy_conversation(thread.conversation)
        return ConversationRow(conversation, thread.account, thread.contact, thread.tenant, None, replies, None, False)

    def _message(self, message_id: int) -> Message:
        for thread in self._threads.values():
            for message in thread.messages:
                if message.id == message_id:
                    return message
        raise KeyError(message_id)


def _copy(message: Message) -> Message:
    """A row as a transaction reads it: later changes to the store do not show through."""
    columns = ("id", "conversation_id", "channel_account_id", "role", "content_type", "content", "status")
    copy = Message(**{c: getattr(message, c) for c in columns})
    copy.meta, copy.processed_at, copy.turn_id = dict(message.meta or {}), message.processed_at, message.turn_id
    copy.created_at = message.created_at
    return copy


def _copy_conversation(conversation: Conversation) -> Conversation:
    columns = ("id", "tenant_id", "channel_account_id", "contact_id", "ai_enabled", "lock_owner", "lock_until")
    copy = Conversation(**{c: getattr(conversation, c) for c in columns})
    copy.version, copy.created_at, copy.updated_at = (
        conversation.version,
        conversation.created_at,
        conversation.updated_at,
    )
    return copy
