"""Tables of the operators' inbox (``humans/console``): what each operator has read, each
thread's newest customer message, and the words its search finds threads by. Kept beside
``schema.py`` so that feature's owner edits one file.

``thread_terms`` holds one row per message and one per contact, with the words already folded
(``platform.store.thread_index``). The full-text index over them depends on the backend:

- SQLite: the FTS5 table ``thread_terms_fts`` (external content = ``thread_terms``, kept in sync
  by triggers; created by migration 0012, since FTS5 tables cannot be declared here);
- PostgreSQL: the GIN index ``ix_thread_terms_fts`` over ``THREAD_TSVECTOR``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from frontdesk.platform.store.schema import AutoId, Base

# Queries repeat this exact expression, so the GIN index serves them.
THREAD_TSVECTOR = "to_tsvector('simple'::regconfig, terms)"

THREAD_FTS_TABLE = "thread_terms_fts"
THREAD_FTS_TABLES = frozenset(
    {THREAD_FTS_TABLE, *(f"{THREAD_FTS_TABLE}_{s}" for s in ("config", "data", "docsize", "idx"))}
)

CONTACT_SOURCE = "contact"


class ThreadTerm(Base):
    """The searchable words of one message (``source`` = ``message:<id>``) or of the thread's
    contact (``source`` = ``contact``: name, phone, e-mail, channel names). Unique per thread and
    source, so indexing again replaces the words."""

    __tablename__ = "thread_terms"
    __table_args__ = (
        UniqueConstraint("conversation_id", "source", name="uq_thread_terms_conversation_id_source"),
        Index("ix_thread_terms_fts", text(THREAD_TSVECTOR), postgresql_using="gin").ddl_if(dialect="postgresql"),
    )
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(String(40), index=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"))
    source: Mapped[str] = mapped_column(String(40))
    terms: Mapped[str] = mapped_column(Text)


class ThreadActivity(Base):
    """The newest customer message of each thread, kept by a trigger on ``messages`` (migration
    0012) in the transaction that stores it, so "unread" is one comparison per thread rather than
    a look through its messages. (A row of its own, not a column of ``conversations``: the
    webhook path holds a share lock on the conversation and must not update it; see
    ``ingestion/ingest.py``.)"""

    __tablename__ = "thread_activity"
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"), primary_key=True)
    last_customer_message_id: Mapped[int] = mapped_column(AutoId)


class ThreadRead(Base):
    """How far one operator has read one thread: the newest message id they had on screen."""

    __tablename__ = "thread_reads"
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"), primary_key=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"), primary_key=True)
    message_id: Mapped[int] = mapped_column(AutoId)
    read_at: Mapped[datetime]


class SavedScenario(Base):
    """A bad reply an operator turned into a scenario file ("save as scenario", ``humans/console/scenario_file.py``):
    the file, masked, stays here until the tenant's owner downloads it. ``saved_by`` is the
    operator's name then (an operator can be deleted; what they saved stays)."""

    __tablename__ = "saved_scenarios"
    __table_args__ = (Index("ix_saved_scenarios_tenant", "tenant_id", "id"),)
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"))
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"))
    turn_id: Mapped[int] = mapped_column(AutoId)
    note: Mapped[str] = mapped_column(Text)
    sent: Mapped[str] = mapped_column(Text)  # what the customer read (masked)
    checks: Mapped[dict[str, Any]] = mapped_column(default=dict)  # must_say / must_not_say
    content: Mapped[str] = mapped_column(Text)
    saved_by: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime]
