"""sign-in limits

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02

``console_login_counters``: sign-in attempts per client address, per operator from unknown
browsers and per known browser, claimed before the password is checked.
``console_devices``: the browsers each operator has signed in from.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

UTC_DATETIME = frontdesk.platform.store.schema.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "console_login_counters",
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("window_start", UTC_DATETIME, nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_console_login_counters")),
    )
    op.create_table(
        "console_devices",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("last_used_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_console_devices_operator_id_operators")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_console_devices")),
    )
    op.create_index(op.f("ix_console_devices_operator_id"), "console_devices", ["operator_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_console_devices_operator_id"), table_name="console_devices")
    op.drop_table("console_devices")
    op.drop_table("console_login_counters")
