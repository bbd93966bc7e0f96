"""Loading what one turn knows about its conversation, in one read: the tenant's pack and policy
edits, the contact's profile, open tasks, the episodic snapshot and the ledger windows.
Nothing is kept in memory between turns (invariant 1)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from frontdesk.context.episodic import EpisodicSnapshot
from frontdesk.context.ledgers import LedgerStore, WorkingState
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Contact, Conversation, Message, Task, Tenant, TurnTrace
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


class ContextLoader:
    def __init__(self, db: Database, ledgers: LedgerStore | None = None) -> None:
        self._db = db
        self.ledgers = ledgers or LedgerStore()

    async def load(self, conversation_id: str, now: datetime) -> ConversationContext:
        # The conversation, its contact and tenant, its memory snapshot, its reply count and the
        # last turn's route in one statement; then its open tasks and its ledgers.
        reply_count = (
            select(func.count())
            .select_from(Message)
            .where(Message.conversation_id == Conversation.id, Message.role == "assistant")
            .scalar_subquery()
        )
        route_of_last_turn = (
            select(TurnTrace.route)
            .where(TurnTrace.conversation_id == Conversation.id)
            .order_by(TurnTrace.id.desc())
            .limit(1)
            .scalar_subquery()
        )
        async with self._db.read() as session:
            row = (
                await session.execute(
                    select(Conversation, Contact, Tenant, SnapshotRow, reply_count, route_of_last_turn)
                    .join(Contact, Contact.id == Conversation.contact_id)
                    .join(Tenant, Tenant.id == Conversation.tenant_id)
                    .outerjoin(SnapshotRow, SnapshotRow.conversation_id == Conversation.id)
                    .where(Conversation.id == conversation_id)
                )
            ).one()
            conversation, contact, tenant, snapshot, replies, last_route = row
            tasks = list(
                await session.scalars(
                    select(Task)
                    .where(Task.conversation_id == conversation_id, Task.status == "open")
                    .order_by(Task.created_at)
                )
            )
            ledgers = await self.ledgers.load(session, conversation_id, now, tenant.data_revision)
        return ConversationContext(
            tenant_id=conversation.tenant_id,
            pack=tenant.pack,
            policy_overrides=dict(tenant.policy or {}),
            contact=ContactProfile(contact.name, contact.phone, contact.email, contact.notes, contact.display_name),
            open_tasks=[OpenTask(t.id, t.kind, t.priority, t.title, dict(t.details)) for t in tasks],
            episodic=EpisodicSnapshot.model_validate(snapshot.data) if snapshot else None,
            ledgers=_with_open_tasks(ledgers, tasks),
            assistant_replies=int(replies or 0),
            snapshot_replies_covered=snapshot.replies_covered if snapshot else 0,
            snapshot_updated_at=snapshot.updated_at if snapshot else None,
            last_language=(last_route or {}).get("language"),
            languages=tuple(str(x) for x in (tenant.languages or ["en"])) or ("en",),
            data_revision=int(tenant.data_revision or 0),
        )


def _with_open_tasks(state: WorkingState, tasks: list[Task]) -> WorkingState:
    state.open_references = frozenset(t.id for t in tasks)
    return state
