"""grounded replies

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

Existing rows get defaults: tenants are served by the print-shop pack with an empty policy
(the pack's own policy text applies), old traces get empty route/claims.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "episodic_snapshots",
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("replies_covered", sa.Integer(), nullable=False),
        sa.Column("updated_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"], name=op.f("fk_episodic_snapshots_conversation_id_conversations")
        ),
        sa.PrimaryKeyConstraint("conversation_id", name=op.f("pk_episodic_snapshots")),
    )
    op.create_table(
        "ledger_entries",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("ledger", sa.String(length=16), nullable=False),
        sa.Column("tool_name", sa.String(length=100), nullable=False),
        sa.Column("state_key", sa.String(length=200), nullable=True),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"], name=op.f("fk_ledger_entries_conversation_id_conversations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger_entries")),
    )
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.create_index("ix_ledger_entries_window", ["conversation_id", "ledger", "id"], unique=False)

    op.create_table(
        "tasks",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("priority", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("title", sa.String(length=300), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"], name=op.f("fk_tasks_conversation_id_conversations")
        ),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_tasks_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tasks")),
    )
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tasks_conversation_id"), ["conversation_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_tasks_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "claim_rejections",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("turn_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("claims", sa.JSON(), nullable=False),
        sa.Column("failures", sa.JSON(), nullable=False),
        sa.Column("reply_text", sa.Text(), nullable=False),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"], name=op.f("fk_claim_rejections_conversation_id_conversations")
        ),
        sa.ForeignKeyConstraint(["turn_id"], ["turn_traces.id"], name=op.f("fk_claim_rejections_turn_id_turn_traces")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_claim_rejections")),
    )
    with op.batch_alter_table("claim_rejections", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_claim_rejections_conversation_id"), ["conversation_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_claim_rejections_turn_id"), ["turn_id"], unique=False)

    op.create_table(
        "notifications",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=True),
        sa.Column("task_id", sa.String(length=40), nullable=True),
        sa.Column("dedupe_key", sa.String(length=200), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"], name=op.f("fk_notifications_conversation_id_conversations")
        ),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name=op.f("fk_notifications_task_id_tasks")),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_notifications_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notifications")),
        sa.UniqueConstraint("dedupe_key", name=op.f("uq_notifications_dedupe_key")),
    )
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_notifications_tenant_id"), ["tenant_id"], unique=False)

    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("name", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("phone", sa.String(length=60), nullable=True))
        batch_op.add_column(sa.Column("email", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("notes", sa.Text(), nullable=True))

    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pack", sa.String(length=40), nullable=False, server_default="printshop"))
        batch_op.add_column(sa.Column("policy", sa.JSON(), nullable=False, server_default="{}"))

    with op.batch_alter_table("turn_traces", schema=None) as batch_op:
        batch_op.add_column(sa.Column("route", sa.JSON(), nullable=False, server_default="{}"))
        batch_op.add_column(sa.Column("tools_offered", sa.JSON(), nullable=False, server_default="[]"))
        batch_op.add_column(sa.Column("prefix_hash", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("prompt_size", sa.JSON(), nullable=False, server_default="{}"))
        batch_op.add_column(sa.Column("claims", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("turn_traces", schema=None) as batch_op:
        batch_op.drop_column("claims")
        batch_op.drop_column("prompt_size")
        batch_op.drop_column("prefix_hash")
        batch_op.drop_column("tools_offered")
        batch_op.drop_column("route")

    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.drop_column("policy")
        batch_op.drop_column("pack")

    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.drop_column("notes")
        batch_op.drop_column("email")
        batch_op.drop_column("phone")
        batch_op.drop_column("name")

    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_notifications_tenant_id"))

    op.drop_table("notifications")
    with op.batch_alter_table("claim_rejections", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_claim_rejections_turn_id"))
        batch_op.drop_index(batch_op.f("ix_claim_rejections_conversation_id"))

    op.drop_table("claim_rejections")
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tasks_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_tasks_conversation_id"))

    op.drop_table("tasks")
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.drop_index("ix_ledger_entries_window")

    op.drop_table("ledger_entries")
    op.drop_table("episodic_snapshots")
