"""vault

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30

A new ``credentials`` table holds sealed secrets (``platform.vault``). Nothing existing changes
here: plaintext ``channel_accounts.secrets`` are moved into the vault by the application at start
when a master key is configured (``ingestion.accounts.seal_plaintext_secrets``), because a
migration has no key and must not need one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "credentials",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("envelope", sa.Text(), nullable=False),
        sa.Column("key_id", sa.String(length=16), nullable=False),
        sa.Column("created_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", frontdesk.platform.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_credentials_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_credentials")),
        sa.UniqueConstraint("tenant_id", "name", name="uq_credentials_tenant_id_name"),
    )
    with op.batch_alter_table("credentials", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_credentials_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_credentials_key_id"), ["key_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("credentials", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_credentials_key_id"))
        batch_op.drop_index(batch_op.f("ix_credentials_tenant_id"))

    op.drop_table("credentials")
