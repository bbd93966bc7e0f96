"""The tables. One schema for SQLite and PostgreSQL; migrations in ``migrations/`` must match it
(``tests/platform/test_migrations.py`` compares them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a real bigint.
AutoId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes on both backends (SQLite stores naive text, so we restore the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime(), dict[str, Any]: JSON(), list[Any]: JSON()}


class Tenant(Base):
    """A business."""

    __tablename__ = "tenants"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    # The business pack that serves this tenant (``packs.PACKS``) and the operator's
    # plain-language policy fields (``context.identity.IdentityPolicy``).
    pack: Mapped[str] = mapped_column(String(40), default="catalog")
    policy: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # The languages the business answers and writes its catalog in; the first is its default.
    languages: Mapped[list[Any]] = mapped_column(default=lambda: ["en"])
    # Bumped by every change to the tenant's profile or catalog (``frontdesk.business``).
    data_revision: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]


class ChannelAccount(Base):
    """One connected channel of a tenant (a web chat widget, a bot, a page...)."""

    __tablename__ = "channel_accounts"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    channel: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(200))
    config: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # Credentials (bot tokens, app secrets...) of an instance without a vault key: write-only, never
    # serialised into a response, page, log or trace, read through ``ingestion.accounts``. With a
    # key they live sealed in the vault (``credentials``) and this column is emptied at start.
    secrets: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime]


class Contact(Base):
    """A customer as one channel account knows them (``external_id``: web chat session, chat id...)."""

    __tablename__ = "contacts"
    __table_args__ = (UniqueConstraint("channel_account_id", "external_id"),)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    channel_account_id: Mapped[str] = mapped_column(ForeignKey("channel_accounts.id"))
    external_id: Mapped[str] = mapped_column(String(200))
    display_name: Mapped[str | None] = mapped_column(String(200))
    # What the customer told us (``capture_lead`` / ``update_customer_info``), not the channel.
    name: Mapped[str | None] = mapped_column(String(200))
    phone: Mapped[str | None] = mapped_column(String(60))
    email: Mapped[str | None] = mapped_column(String(200))
    notes: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]


class Conversation(Base):
    """One thread with one contact. ``lock_owner``/``lock_until`` are the turn lease (invariant 5)."""

    __tablename__ = "conversations"
    __table_args__ = (
        UniqueConstraint("channel_account_id", "contact_id"),
        Index("ix_conversations_tenant_updated", "tenant_id", "updated_at"),  # the inbox's order
    )
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    channel_account_id: Mapped[str] = mapped_column(ForeignKey("channel_accounts.id"))
    contact_id: Mapped[str] = mapped_column(ForeignKey("contacts.id"))
    ai_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # The operator working this thread in the console (None: unassigned).
    assignee_id: Mapped[str | None] = mapped_column(ForeignKey("operators.id"))
    lock_owner: Mapped[str | None] = mapped_column(String(200))
    lock_until: Mapped[datetime | None]
    version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Message(Base):
    """A user or assistant message. ``status`` is ``ready`` or ``pending`` (media being prepared)."""

    __tablename__ = "messages"
    __table_args__ = (
        # The last line of idempotency: a redelivered platform message fails this insert.
        UniqueConstraint("channel_account_id", "channel_message_id"),
        Index("ix_messages_unprocessed", "conversation_id", "role", "processed_at"),
    )
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"))
    channel_account_id: Mapped[str] = mapped_column(ForeignKey("channel_accounts.id"))
    channel_message_id: Mapped[str | None] = mapped_column(String(300))
    role: Mapped[str] = mapped_column(String(16))
    content_type: Mapped[str] = mapped_column(String(32))
    content: Mapped[str] = mapped_column(Text)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    status: Mapped[str] = mapped_column(String(16), default="ready")
    processed_at: Mapped[datetime | None]
    turn_id: Mapped[int | None] = mapped_column(ForeignKey("turn_traces.id"))
    created_at: Mapped[datetime]


class Receipt(Base):
    """A side effect's record (invariant 8). ``kind='delivery'``: written ``sending`` before the
    platform is called, then ``sent | partial | failed`` with counts and errors."""

    __tablename__ = "receipts"
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(32))
    message_id: Mapped[int | None] = mapped_column(ForeignKey("messages.id"), unique=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"), index=True)
    channel_account_id: Mapped[str] = mapped_column(ForeignKey("channel_accounts.id"))
    status: Mapped[str] = mapped_column(String(16))
    parts_total: Mapped[int] = mapped_column(Integer, default=0)
    parts_sent: Mapped[int] = mapped_column(Integer, default=0)
    # What the customer really received: text messages and images that went out.
    sent_text: Mapped[int] = mapped_column(Integer, default=0)
    sent_image: Mapped[int] = mapped_column(Integer, default=0)
    replays: Mapped[int] = mapped_column(Integer, default=0)
    errors: Mapped[list[Any]] = mapped_column(default=list)
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]


class DeliveryPart(Base):
    """One platform call of a delivery, planned before the first call is made.

    ``pending`` until the call returns, then ``sent`` (with the platform's message ids) or
    ``failed`` (with the error). A replay resends exactly the parts that are not ``sent``.
    ``platform_status`` follows the platform's own callbacks (WhatsApp: delivered, read...)."""

    __tablename__ = "delivery_parts"
    __table_args__ = (
        UniqueConstraint("receipt_id", "seq"),
        Index("ix_delivery_parts_platform_message", "channel_account_id", "platform_message_id"),
    )
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    receipt_id: Mapped[int] = mapped_column(ForeignKey("receipts.id"))
    channel_account_id: Mapped[str] = mapped_column(ForeignKey("channel_accounts.id"))
    seq: Mapped[int] = mapped_column(Integer)
    block_index: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    texts: Mapped[int] = mapped_column(Integer, default=0)
    images: Mapped[int] = mapped_column(Integer, default=0)
    request: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    platform_message_id: Mapped[str | None] = mapped_column(String(300))
    platform_message_ids: Mapped[list[Any]] = mapped_column(default=list)
    platform_status: Mapped[str | None] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime]


class TurnTrace(Base):
    """One row per agent turn: every "why did it do that?" starts here."""

    __tablename__ = "turn_traces"
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"), index=True)
    worker: Mapped[str] = mapped_column(String(200))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    batch_size: Mapped[int] = mapped_column(Integer, default=0)
    batch_span_ms: Mapped[int] = mapped_column(Integer, default=0)
    model: Mapped[str | None] = mapped_column(String(200))
    steps: Mapped[int] = mapped_column(Integer, default=0)
    tool_calls: Mapped[list[Any]] = mapped_column(default=list)
    usage: Mapped[list[Any]] = mapped_column(default=list)
    latency_ms: Mapped[dict[str, Any]] = mapped_column(default=dict)
    outcome: Mapped[str] = mapped_column(String(32), default="running")
    detail: Mapped[str | None] = mapped_column(Text)
    route: Mapped[dict[str, Any]] = mapped_column(default=dict)
    tools_offered: Mapped[list[Any]] = mapped_column(default=list)
    prefix_hash: Mapped[str | None] = mapped_column(String(64))
    prompt_size: Mapped[dict[str, Any]] = mapped_column(default=dict)
    claims: Mapped[list[Any]] = mapped_column(default=list)


class ModelBudgetCounter(Base):
    """Chat-model turns a tenant has started in one window (``period`` ``hour`` or ``day``, from
    ``window_start``, aligned to the tenant's clock). Claimed with a conditional UPDATE before the
    model runs (``platform/model_budget.py``), so parallel turns never pass the limit."""

    __tablename__ = "model_budget_counters"
    tenant_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    period: Mapped[str] = mapped_column(String(8), primary_key=True)
    window_start: Mapped[datetime] = mapped_column(primary_key=True)
    turns: Mapped[int] = mapped_column(Integer)


class ClaimRejection(Base):
    """A reply the verification gate refused (invariant 3): what it claimed and why it failed."""

    __tablename__ = "claim_rejections"
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"), index=True)
    turn_id: Mapped[int] = mapped_column(ForeignKey("turn_traces.id"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    claims: Mapped[list[Any]] = mapped_column(default=list)
    failures: Mapped[list[Any]] = mapped_column(default=list)
    reply_text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]


class LedgerEntry(Base):
    """Working state: compact tool summaries (``ledger='tool'``, a short window) and proofs of
    side effects (``ledger='action'``, ``__action__*`` names, a longer window)."""

    __tablename__ = "ledger_entries"
    __table_args__ = (Index("ix_ledger_entries_window", "conversation_id", "ledger", "id"),)
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"))
    ledger: Mapped[str] = mapped_column(String(16))
    tool_name: Mapped[str] = mapped_column(String(100))
    state_key: Mapped[str | None] = mapped_column(String(200))
    summary: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime]


class EpisodicSnapshot(Base):
    """The utility model's running summary of a conversation (capped fields, names never ids)."""

    __tablename__ = "episodic_snapshots"
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"), primary_key=True)
    data: Mapped[dict[str, Any]] = mapped_column(default=dict)
    replies_covered: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime]


class Task(Base):
    """Work for the business's people: a follow-up on a lead, a hand-off. Text is in the
    operator's language."""

    __tablename__ = "tasks"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    priority: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), default="open")
    title: Mapped[str] = mapped_column(String(300))
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Notification(Base):
    """An operator ping, recorded as a row (delivery routes arrive with the console).
    ``dedupe_key`` makes a second ping of the same kind in the same run a no-op."""

    __tablename__ = "notifications"
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    conversation_id: Mapped[str | None] = mapped_column(ForeignKey("conversations.id"))
    task_id: Mapped[str | None] = mapped_column(ForeignKey("tasks.id"))
    dedupe_key: Mapped[str | None] = mapped_column(String(200), unique=True)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]


class Job(Base):
    """A unit of background work, claimed with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL."""

    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_claim", "status", "run_after"),)
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(64))
    key: Mapped[str | None] = mapped_column(String(200), index=True)
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, default=5)
    run_after: Mapped[datetime]
    locked_by: Mapped[str | None] = mapped_column(String(200))
    locked_until: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class WorkflowDraft(Base):
    """The state of a multi-step flow in one conversation (``workflows.WorkflowStore``): ``phase`` is
    the flow's own step, ``status`` the lifecycle (open → submitting → submitted, or cancelled /
    expired), ``version`` the compare-and-set counter.

    ``open_slot`` is TRUE while the draft is open or submitting and NULL afterwards. NULLs never
    collide in a unique constraint, so the constraint allows one live draft per (conversation,
    workflow) on both backends without a partial index. ``idempotency_key`` is unique: the last line
    against a second submit running the side effect again."""

    __tablename__ = "workflow_drafts"
    __table_args__ = (
        UniqueConstraint("conversation_id", "workflow", "open_slot"),
        Index("ix_workflow_drafts_sweep", "status", "expires_at"),
    )
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"))
    workflow: Mapped[str] = mapped_column(String(100))
    phase: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    open_slot: Mapped[bool | None] = mapped_column(Boolean)
    data: Mapped[dict[str, Any]] = mapped_column(default=dict)
    version: Mapped[int] = mapped_column(Integer)
    owner: Mapped[str] = mapped_column(String(200))
    idempotency_key: Mapped[str | None] = mapped_column(String(200), unique=True)
    result: Mapped[dict[str, Any] | None]
    expires_at: Mapped[datetime]
    submitted_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


# Feature tables live in their own modules; importing them here registers them on ``Base`` for
# every reader of the metadata (migrations, tests).
from frontdesk.platform.store import (  # noqa: E402, F401  # imported for their tables, after Base exists
    schema_business,
    schema_console,
    schema_inbox,
    schema_notifications,
    schema_search,
    schema_vault,
    thread_index,  # its mapper events index what the ORM writes
)
