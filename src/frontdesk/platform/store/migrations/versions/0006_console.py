"""operator console

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30

``operators``: the people who sign in to the console and receive notifications.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "operators",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=False),
        sa.Column("language", sa.String(length=8), nullable=False),
        sa.Column("telegram_chat_id", sa.String(length=64), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_login_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("email", name="uq_operators_email"),
    )
    op.create_index(op.f("ix_operators_tenant_id"), "operators", ["tenant_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_operators_tenant_id"), table_name="operators")
    op.drop_table("operators")
