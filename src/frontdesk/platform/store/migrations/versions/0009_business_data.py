"""business data

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01

A tenant's own business data (``frontdesk.business``): ``business_profiles``, ``catalog_items``
and ``catalog_photos``; ``tenants.languages`` and ``tenants.data_revision``. The print shop pack
became the ``catalog`` pack, which reads these tables instead of files shipped in the code, so
tenants of ``printshop`` move to ``catalog``; their catalog is empty until imported
(``frontdesk catalog import``), and every start names such tenants.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

UTC_DATETIME = frontdesk.platform.store.schema.UTCDateTime(timezone=True)


def upgrade() -> None:
    # Plain ADD COLUMN with a default: on SQLite, batch mode would copy ``tenants``, and dropping
    # the old copy fails once conversations point at it (foreign keys are on).
    op.add_column("tenants", sa.Column("languages", sa.JSON(), nullable=False, server_default='["en"]'))
    op.add_column("tenants", sa.Column("data_revision", sa.Integer(), nullable=False, server_default="0"))
    op.execute("UPDATE tenants SET pack = 'catalog' WHERE pack = 'printshop'")
    if op.get_context().dialect.name == "postgresql":  # SQLite cannot change a default in place
        op.alter_column("tenants", "pack", existing_type=sa.String(length=40), server_default="catalog")

    op.create_table(
        "business_profiles",
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("updated_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_business_profiles_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_business_profiles")),
    )
    op.create_table(
        "catalog_items",
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("id", sa.String(length=60), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("updated_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_catalog_items_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("tenant_id", "id", name=op.f("pk_catalog_items")),
    )
    op.create_index("ix_catalog_items_order", "catalog_items", ["tenant_id", "position"], unique=False)
    op.create_table(
        "catalog_photos",
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("id", sa.String(length=60), nullable=False),
        sa.Column("item_id", sa.String(length=60), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("media_key", sa.String(length=200), nullable=False),
        sa.Column("mime_type", sa.String(length=40), nullable=False),
        sa.Column("caption", sa.JSON(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_catalog_photos_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("tenant_id", "id", name=op.f("pk_catalog_photos")),
    )
    op.create_index("ix_catalog_photos_item", "catalog_photos", ["tenant_id", "item_id", "position"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_catalog_photos_item", table_name="catalog_photos")
    op.drop_table("catalog_photos")
    op.drop_index("ix_catalog_items_order", table_name="catalog_items")
    op.drop_table("catalog_items")
    op.drop_table("business_profiles")
    op.execute("UPDATE tenants SET pack = 'printshop' WHERE pack = 'catalog'")
    if op.get_context().dialect.name == "postgresql":
        op.alter_column("tenants", "pack", existing_type=sa.String(length=40), server_default="printshop")
    op.drop_column("tenants", "data_revision")
    op.drop_column("tenants", "languages")
