"""Loading what one turn knows about its conversation, in one read: the tenant's pack and policy
edits, the contact's profile, open tasks, the episodic snapshot and the ledger windows.
Nothing is kept in memory between turns (invariant 1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Select, exists, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.context.episodic import EpisodicSnapshot
from frontdesk.context.ledgers import LedgerStore, WorkingState
from frontdesk.errors import NotFoundError
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, Contact, Conversation, Message, Task, Tenant, TurnTrace
from frontdesk.platform.store.schema import EpisodicSnapshot as SnapshotRow


@dataclass(frozen=True)
class ContactProfile:
    name: str | None = None
    phone: str | None = None
    email: str | None = None
    notes: str | None = None
    display_name: str | None = None

    def lines(self) -> list[str]:
        fields = [("Name", self.name or self.display_name), ("Phone", self.phone), ("E-mail", self.email)]
        fields.append(("Notes", self.notes))
        return [f"{label}: {value}" for label, value in fields if value]


@dataclass(frozen=True)
class OpenTask:
    id: str
    kind: str
    priority: str
    title: str
    details: dict[str, Any]

    def line(self) -> str:
        quantity = self.details.get("quantity")
        extra = f" (quantity {quantity})" if quantity else ""
        label = "follow-up" if self.kind == "follow_up" else self.kind
        return f"{label} {self.id} [{self.priority}]: {self.title}{extra}"


@dataclass
class ConversationContext:
    tenant_id: str
    pack: str
    policy_overrides: dict[str, Any]
    contact: ContactProfile
    open_tasks: list[OpenTask]
    episodic: EpisodicSnapshot | None
    ledgers: WorkingState
    assistant_replies: int
    snapshot_replies_covered: int
    snapshot_updated_at: datetime | None
    last_language: str | None = None
    # The languages the business answers in, its default first (``tenants.languages``).
    languages: tuple[str, ...] = ("en",)
    # The revision of the tenant's business data (``tenants.data_revision``) at this load.
    data_revision: int = 0

    @property
    def language_so_far(self) -> str | None:
        """The last turn's language, else the one episodic memory learned."""
        if self.last_language:
            return self.last_language
        return self.episodic.preferred_language or None if self.episodic else None

    @property
    def likely_language(self) -> str:
        """The conversation's language so far, else the business's default: what a message that
        says nothing of its language is taken to be in (a bakery in Saigon is asked in Vietnamese)."""
        return self.language_so_far or self.languages[0]

    @property
    def open_follow_up(self) -> bool:
        return any(t.kind == "follow_up" for t in self.open_tasks)


@dataclass(frozen=True)
class ConversationRow:
    """A conversation as one statement reads it: with its channel account, contact and tenant,
    its memory snapshot, how many replies it has had and the last turn's route. A turn builds
    its thread (where to answer) and its context from it."""

    conversation: Conversation
    account: ChannelAccount
    contact: Contact
    tenant: Tenant
    snapshot: SnapshotRow | None
    replies: int
    last_route: dict[str, Any] | None
    has_open_tasks: bool


@cache
def conversation_query() -> Select[Any]:
    """The statement behind ``ConversationRow`` (its columns in that order), for a caller to
    narrow down or join its own rows to (the turn joins its unanswered messages). Built once: a
    statement is immutable, narrowing it makes a new one."""
    reply_count = (
        select(func.count())
        .select_from(Message)
        .where(Message.conversation_id == Conversation.id, Message.role == "assistant")
        .correlate(Conversation)  # never a caller's own messages joined to the row
        .scalar_subquery()
    )
    route_of_last_turn = (
        select(TurnTrace.route)
        .where(TurnTrace.conversation_id == Conversation.id)
        .order_by(TurnTrace.id.desc())
        .limit(1)
        .correlate(Conversation)
        .scalar_subquery()
    )
    # Most conversations have none: then ``ContextLoader.complete`` does not look for them.
    has_open_tasks = (
        exists().where(Task.conversation_id == Conversation.id, Task.status == "open").correlate(Conversation)
    )
    return (
        select(
            Conversation, ChannelAccount, Contact, Tenant, SnapshotRow, reply_count, route_of_last_turn, has_open_tasks
        )
        .join(ChannelAccount, ChannelAccount.id == Conversation.channel_account_id)
        .join(Contact, Contact.id == Conversation.contact_id)
        .join(Tenant, Tenant.id == Conversation.tenant_id)
        .outerjoin(SnapshotRow, SnapshotRow.conversation_id == Conversation.id)
    )


def conversation_row(columns: Sequence[Any]) -> ConversationRow:
    """The ``ConversationRow`` in the first eight columns of a ``conversation_query`` result."""
    conversation, account, contact, tenant, snapshot, replies, last_route, has_open_tasks = columns[:8]
    return ConversationRow(
        conversation, account, contact, tenant, snapshot, int(replies or 0), last_route, bool(has_open_tasks)
    )


class ContextLoader:
    def __init__(self, db: Database, ledgers: LedgerStore | None = None) -> None:
        self._db = db
        self.ledgers = ledgers or LedgerStore()

    async def load(self, conversation_id: str, now: datetime) -> ConversationContext:
        """The whole context in one read of its own."""
        async with self._db.read() as session:
            found = (await session.execute(conversation_query().where(Conversation.id == conversation_id))).first()
            if found is None:
                raise NotFoundError(f"no conversation {conversation_id}")
            return await self.complete(session, conversation_row(found), now)

    async def complete(self, session: AsyncSession, row: ConversationRow, now: datetime) -> ConversationContext:
        """The context of a conversation already read: its open tasks (if it has any) and its
        ledgers are read here."""
        conversation, contact, tenant, snapshot = row.conversation, row.contact, row.tenant, row.snapshot
        tasks: list[Task] = []
        if row.has_open_tasks:
            open_tasks = select(Task).where(Task.conversation_id == conversation.id, Task.status == "open")
            tasks = list(await session.scalars(open_tasks.order_by(Task.created_at)))
        ledgers = await self.ledgers.load(session, conversation.id, now, tenant.data_revision)
        return ConversationContext(
            tenant_id=conversation.tenant_id,
            pack=tenant.pack,
            policy_overrides=dict(tenant.policy or {}),
            contact=ContactProfile(contact.name, contact.phone, contact.email, contact.notes, contact.display_name),
            open_tasks=[OpenTask(t.id, t.kind, t.priority, t.title, dict(t.details)) for t in tasks],
            episodic=EpisodicSnapshot.model_validate(snapshot.data) if snapshot else None,
            ledgers=_with_open_tasks(ledgers, tasks),
            assistant_replies=row.replies,
            snapshot_replies_covered=snapshot.replies_covered if snapshot else 0,
            snapshot_updated_at=snapshot.updated_at if snapshot else None,
            last_language=(row.last_route or {}).get("language"),
            languages=tuple(str(x) for x in (tenant.languages or ["en"])) or ("en",),
            data_revision=int(tenant.data_revision or 0),
        )


def _with_open_tasks(state: WorkingState, tasks: list[Task]) -> WorkingState:
    state.open_references = frozenset(t.id for t in tasks)
    return state
