"""model budget

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02

``model_budget_counters``: chat-model turns per tenant per hour and per day, claimed before the
model runs.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

UTC_DATETIME = frontdesk.platform.store.schema.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "model_budget_counters",
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("period", sa.String(length=8), nullable=False),
        sa.Column("window_start", UTC_DATETIME, nullable=False),
        sa.Column("turns", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "period", "window_start", name=op.f("pk_model_budget_counters")),
    )


def downgrade() -> None:
    op.drop_table("model_budget_counters")
