"""messaging channels

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30

Channel accounts get write-only ``secrets``; receipts count what went out (``sent_text``,
``sent_image``) and how often an operator replayed them; every platform call of a delivery
becomes a ``delivery_parts`` row. Existing rows get empty secrets and zero counts.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "delivery_parts",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("receipt_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("channel_account_id", sa.String(length=40), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("block_index", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("texts", sa.Integer(), nullable=False),
        sa.Column("images", sa.Integer(), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("platform_message_id", sa.String(length=300), nullable=True),
        sa.Column("platform_message_ids", sa.JSON(), nullable=False),
        sa.Column("platform_status", sa.String(length=16), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("updated_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["channel_account_id"],
            ["channel_accounts.id"],
            name=op.f("fk_delivery_parts_channel_account_id_channel_accounts"),
        ),
        sa.ForeignKeyConstraint(["receipt_id"], ["receipts.id"], name=op.f("fk_delivery_parts_receipt_id_receipts")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_delivery_parts")),
        sa.UniqueConstraint("receipt_id", "seq", name=op.f("uq_delivery_parts_receipt_id_seq")),
    )
    with op.batch_alter_table("delivery_parts", schema=None) as batch_op:
        batch_op.create_index(
            "ix_delivery_parts_platform_message", ["channel_account_id", "platform_message_id"], unique=False
        )

    with op.batch_alter_table("channel_accounts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("secrets", sa.JSON(), nullable=False, server_default="{}"))

    with op.batch_alter_table("receipts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sent_text", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("sent_image", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("replays", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("receipts", schema=None) as batch_op:
        batch_op.drop_column("replays")
        batch_op.drop_column("sent_image")
        batch_op.drop_column("sent_text")

    with op.batch_alter_table("channel_accounts", schema=None) as batch_op:
        batch_op.drop_column("secrets")

    with op.batch_alter_table("delivery_parts", schema=None) as batch_op:
        batch_op.drop_index("ix_delivery_parts_platform_message")

    op.drop_table("delivery_parts")
