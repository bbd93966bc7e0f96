"""inbox

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06

The operators' inbox:

- ``conversations.assignee_id``: the operator working the thread (NULL: unassigned), and the
  index the inbox lists threads by (tenant, newest first);
- ``thread_reads``: how far each operator has read each thread; ``thread_activity``: each
  thread's newest customer message, kept by a trigger on ``messages``;
- ``thread_terms``: the folded words of every message and contact, and their full-text index (on
  SQLite an FTS5 table with external content kept in sync by triggers; on PostgreSQL a GIN index
  over a 'simple' ``tsvector``). Threads that exist already are indexed here, in batches.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema
from frontdesk.platform.store.thread_index import backfill

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

UTC_DATETIME = frontdesk.platform.store.schema.UTCDateTime(timezone=True)
AUTO_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
# A copy of schema_inbox.THREAD_TSVECTOR as of this revision (a migration never changes later).
THREAD_TSVECTOR = "to_tsvector('simple'::regconfig, terms)"

SQLITE_FTS = [
    "CREATE VIRTUAL TABLE thread_terms_fts USING fts5("
    "terms, content='thread_terms', content_rowid='id', tokenize='unicode61')",
    "CREATE TRIGGER thread_terms_fts_insert AFTER INSERT ON thread_terms BEGIN "
    "INSERT INTO thread_terms_fts(rowid, terms) VALUES (new.id, new.terms); END",
    "CREATE TRIGGER thread_terms_fts_delete AFTER DELETE ON thread_terms BEGIN "
    "INSERT INTO thread_terms_fts(thread_terms_fts, rowid, terms) VALUES ('delete', old.id, old.terms); END",
    "CREATE TRIGGER thread_terms_fts_update AFTER UPDATE OF terms ON thread_terms BEGIN "
    "INSERT INTO thread_terms_fts(thread_terms_fts, rowid, terms) VALUES ('delete', old.id, old.terms); "
    "INSERT INTO thread_terms_fts(rowid, terms) VALUES (new.id, new.terms); END",
]


# Every customer message, whoever inserts it, moves its thread's newest customer message: a
# trigger, not a statement of the webhook path (one round trip fewer on the path every webhook
# waits on, and no writer can forget it).
SQLITE_ACTIVITY = [
    "CREATE TRIGGER messages_thread_activity AFTER INSERT ON messages WHEN new.role = 'user' BEGIN "
    "INSERT INTO thread_activity (conversation_id, last_customer_message_id) VALUES (new.conversation_id, new.id) "
    "ON CONFLICT (conversation_id) DO UPDATE SET "
    "last_customer_message_id = max(last_customer_message_id, excluded.last_customer_message_id); END",
]
POSTGRESQL_ACTIVITY = [
    "CREATE FUNCTION thread_activity_on_message() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "INSERT INTO thread_activity (conversation_id, last_customer_message_id) VALUES (NEW.conversation_id, NEW.id) "
    "ON CONFLICT (conversation_id) DO UPDATE SET last_customer_message_id = "
    "greatest(thread_activity.last_customer_message_id, EXCLUDED.last_customer_message_id); "
    "RETURN NULL; END $$",
    "CREATE TRIGGER messages_thread_activity AFTER INSERT ON messages FOR EACH ROW "
    "WHEN (NEW.role = 'user') EXECUTE FUNCTION thread_activity_on_message()",
]


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    # Plain ADD COLUMN, its reference inline: batch mode would copy ``conversations`` on SQLite,
    # and dropping the original fails while messages, receipts and tasks point at it (see 0009).
    if sqlite:  # alembic would ask for batch mode; SQLite itself takes an inline reference
        op.execute(
            "ALTER TABLE conversations ADD COLUMN assignee_id VARCHAR(40) "
            "CONSTRAINT fk_conversations_assignee_id_operators REFERENCES operators (id)"
        )
    else:
        fk = sa.ForeignKey("operators.id", name=op.f("fk_conversations_assignee_id_operators"))
        op.add_column("conversations", sa.Column("assignee_id", sa.String(length=40), fk, nullable=True))
    op.create_index("ix_conversations_tenant_updated", "conversations", ["tenant_id", "updated_at"], unique=False)
    op.create_table(
        "thread_reads",
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("message_id", AUTO_ID, nullable=False),
        sa.Column("read_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"], name=op.f("fk_thread_reads_conversation_id_conversations")
        ),
        sa.ForeignKeyConstraint(["operator_id"], ["operators.id"], name=op.f("fk_thread_reads_operator_id_operators")),
        sa.PrimaryKeyConstraint("operator_id", "conversation_id", name=op.f("pk_thread_reads")),
    )
    op.create_table(
        "thread_activity",
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("last_customer_message_id", AUTO_ID, nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"], name=op.f("fk_thread_activity_conversation_id_conversations")
        ),
        sa.PrimaryKeyConstraint("conversation_id", name=op.f("pk_thread_activity")),
    )
    op.execute(
        "INSERT INTO thread_activity (conversation_id, last_customer_message_id) "
        "SELECT conversation_id, max(id) FROM messages WHERE role = 'user' GROUP BY conversation_id"
    )
    for statement in SQLITE_ACTIVITY if sqlite else POSTGRESQL_ACTIVITY:
        op.execute(statement)
    op.create_table(
        "thread_terms",
        sa.Column("id", AUTO_ID, autoincrement=True, nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("source", sa.String(length=40), nullable=False),
        sa.Column("terms", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"], name=op.f("fk_thread_terms_conversation_id_conversations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_thread_terms")),
        sa.UniqueConstraint("conversation_id", "source", name="uq_thread_terms_conversation_id_source"),
    )
    op.create_index(op.f("ix_thread_terms_tenant_id"), "thread_terms", ["tenant_id"], unique=False)
    if sqlite:
        for statement in SQLITE_FTS:
            op.execute(statement)
    else:
        op.create_index("ix_thread_terms_fts", "thread_terms", [sa.text(THREAD_TSVECTOR)], postgresql_using="gin")
    backfill(op.get_bind())


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER IF EXISTS thread_terms_fts_{trigger}")
        op.execute("DROP TABLE IF EXISTS thread_terms_fts")
    else:
        op.drop_index("ix_thread_terms_fts", table_name="thread_terms")
    op.drop_index(op.f("ix_thread_terms_tenant_id"), table_name="thread_terms")
    op.drop_table("thread_terms")
    op.drop_table("thread_reads")
    op.execute("DROP TRIGGER IF EXISTS messages_thread_activity" + ("" if sqlite else " ON messages"))
    if not sqlite:
        op.execute("DROP FUNCTION IF EXISTS thread_activity_on_message()")
    op.drop_table("thread_activity")
    op.drop_index("ix_conversations_tenant_updated", table_name="conversations")
    # SQLite drops a column with a reference only by copying the table, which the rows pointing at
    # ``conversations`` forbid (see upgrade): there the unused, nullable column stays.
    if not sqlite:
        op.drop_constraint(op.f("fk_conversations_assignee_id_operators"), "conversations", type_="foreignkey")
        op.drop_column("conversations", "assignee_id")
