"""operator console

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30

``operators``: the people who sign in to the console and receive notifications.
``console_sessions``, ``console_login_attempts``, ``console_audit``: sign-in and the audit trail.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

UTC_DATETIME = frontdesk.platform.store.schema.UTCDateTime(timezone=True)
AUTO_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


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
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("last_login_at", UTC_DATETIME, nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("email", name="uq_operators_email"),
    )
    op.create_index(op.f("ix_operators_tenant_id"), "operators", ["tenant_id"], unique=False)
    op.create_table(
        "console_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("expires_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(["operator_id"], ["operators.id"]),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_console_sessions_operator_id"), "console_sessions", ["operator_id"], unique=False)
    op.create_table(
        "console_login_attempts",
        sa.Column("id", AUTO_ID, autoincrement=True, nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("ip", sa.String(length=64), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_console_login_attempts_lookup", "console_login_attempts", ["email", "ip", "created_at"], unique=False
    )
    op.create_table(
        "console_audit",
        sa.Column("id", AUTO_ID, autoincrement=True, nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=True),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target", sa.String(length=200), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(["operator_id"], ["operators.id"]),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_console_audit_tenant_id"), "console_audit", ["tenant_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_console_audit_tenant_id"), table_name="console_audit")
    op.drop_table("console_audit")
    op.drop_index("ix_console_login_attempts_lookup", table_name="console_login_attempts")
    op.drop_table("console_login_attempts")
    op.drop_index(op.f("ix_console_sessions_operator_id"), table_name="console_sessions")
    op.drop_table("console_sessions")
    op.drop_index(op.f("ix_operators_tenant_id"), table_name="operators")
    op.drop_table("operators")
