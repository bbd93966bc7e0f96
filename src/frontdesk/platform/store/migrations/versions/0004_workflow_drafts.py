"""workflow drafts

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

A new ``workflow_drafts`` table holds the state of multi-step flows (``frontdesk.workflows``).
Nothing existing changes, so databases with data upgrade without a backfill.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workflow_drafts",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("workflow", sa.String(length=100), nullable=False),
        sa.Column("phase", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("open_slot", sa.Boolean(), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(length=200), nullable=False),
        sa.Column("idempotency_key", sa.String(length=200), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("expires_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("submitted_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"], name=op.f("fk_workflow_drafts_conversation_id_conversations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_drafts")),
        sa.UniqueConstraint(
            "conversation_id",
            "workflow",
            "open_slot",
            name=op.f("uq_workflow_drafts_conversation_id_workflow_open_slot"),
        ),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_workflow_drafts_idempotency_key")),
    )
    with op.batch_alter_table("workflow_drafts", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_drafts_sweep", ["status", "expires_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("workflow_drafts", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_drafts_sweep")

    op.drop_table("workflow_drafts")
