"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("run_after", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("locked_by", sa.String(length=200), nullable=True),
        sa.Column("locked_until", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
    )
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.create_index("ix_jobs_claim", ["status", "run_after"], unique=False)
        batch_op.create_index(batch_op.f("ix_jobs_key"), ["key"], unique=False)

    op.create_table(
        "tenants",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenants")),
    )
    op.create_table(
        "channel_accounts",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("channel", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_channel_accounts_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_channel_accounts")),
    )
    with op.batch_alter_table("channel_accounts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_channel_accounts_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "contacts",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("channel_account_id", sa.String(length=40), nullable=False),
        sa.Column("external_id", sa.String(length=200), nullable=False),
        sa.Column("display_name", sa.String(length=200), nullable=True),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["channel_account_id"],
            ["channel_accounts.id"],
            name=op.f("fk_contacts_channel_account_id_channel_accounts"),
        ),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_contacts_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_contacts")),
        sa.UniqueConstraint(
            "channel_account_id", "external_id", name=op.f("uq_contacts_channel_account_id_external_id")
        ),
    )
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_contacts_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "conversations",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("channel_account_id", sa.String(length=40), nullable=False),
        sa.Column("contact_id", sa.String(length=40), nullable=False),
        sa.Column("ai_enabled", sa.Boolean(), nullable=False),
        sa.Column("lock_owner", sa.String(length=200), nullable=True),
        sa.Column("lock_until", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["channel_account_id"],
            ["channel_accounts.id"],
            name=op.f("fk_conversations_channel_account_id_channel_accounts"),
        ),
        sa.ForeignKeyConstraint(["contact_id"], ["contacts.id"], name=op.f("fk_conversations_contact_id_contacts")),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_conversations_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversations")),
        sa.UniqueConstraint(
            "channel_account_id", "contact_id", name=op.f("uq_conversations_channel_account_id_contact_id")
        ),
    )
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_conversations_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "turn_traces",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=False),
        sa.Column("started_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=True),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("batch_span_ms", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("tool_calls", sa.JSON(), nullable=False),
        sa.Column("usage", sa.JSON(), nullable=False),
        sa.Column("latency_ms", sa.JSON(), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"], name=op.f("fk_turn_traces_conversation_id_conversations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_turn_traces")),
    )
    with op.batch_alter_table("turn_traces", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_turn_traces_conversation_id"), ["conversation_id"], unique=False)

    op.create_table(
        "messages",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("channel_account_id", sa.String(length=40), nullable=False),
        sa.Column("channel_message_id", sa.String(length=300), nullable=True),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("content_type", sa.String(length=32), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("processed_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=True),
        sa.Column("turn_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["channel_account_id"],
            ["channel_accounts.id"],
            name=op.f("fk_messages_channel_account_id_channel_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"], name=op.f("fk_messages_conversation_id_conversations")
        ),
        sa.ForeignKeyConstraint(["turn_id"], ["turn_traces.id"], name=op.f("fk_messages_turn_id_turn_traces")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
        sa.UniqueConstraint(
            "channel_account_id", "channel_message_id", name=op.f("uq_messages_channel_account_id_channel_message_id")
        ),
    )
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.create_index("ix_messages_unprocessed", ["conversation_id", "role", "processed_at"], unique=False)

    op.create_table(
        "receipts",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("message_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("channel_account_id", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("parts_total", sa.Integer(), nullable=False),
        sa.Column("parts_sent", sa.Integer(), nullable=False),
        sa.Column("errors", sa.JSON(), nullable=False),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["channel_account_id"],
            ["channel_accounts.id"],
            name=op.f("fk_receipts_channel_account_id_channel_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"], name=op.f("fk_receipts_conversation_id_conversations")
        ),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], name=op.f("fk_receipts_message_id_messages")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_receipts")),
        sa.UniqueConstraint("message_id", name=op.f("uq_receipts_message_id")),
    )
    with op.batch_alter_table("receipts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_receipts_conversation_id"), ["conversation_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("receipts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_receipts_conversation_id"))

    op.drop_table("receipts")
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.drop_index("ix_messages_unprocessed")

    op.drop_table("messages")
    with op.batch_alter_table("turn_traces", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_turn_traces_conversation_id"))

    op.drop_table("turn_traces")
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_conversations_tenant_id"))

    op.drop_table("conversations")
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_contacts_tenant_id"))

    op.drop_table("contacts")
    with op.batch_alter_table("channel_accounts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_channel_accounts_tenant_id"))

    op.drop_table("channel_accounts")
    op.drop_table("tenants")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_jobs_key"))
        batch_op.drop_index("ix_jobs_claim")

    op.drop_table("jobs")
