"""saved scenarios

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07

``saved_scenarios``: bad replies operators turned into scenario files from the console.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

UTC_DATETIME = frontdesk.platform.store.schema.UTCDateTime(timezone=True)
AUTO_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "saved_scenarios",
        sa.Column("id", AUTO_ID, autoincrement=True, nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("turn_id", AUTO_ID, nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("sent", sa.Text(), nullable=False),
        sa.Column("checks", sa.JSON(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("saved_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"], ["conversations.id"], name=op.f("fk_saved_scenarios_conversation_id_conversations")
        ),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_saved_scenarios_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_saved_scenarios")),
    )
    op.create_index("ix_saved_scenarios_tenant", "saved_scenarios", ["tenant_id", "id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_saved_scenarios_tenant", table_name="saved_scenarios")
    op.drop_table("saved_scenarios")
