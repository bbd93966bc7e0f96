"""notifications

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30

Notification routing (``frontdesk.humans.notifications``): ``notification_events`` (the typed
payload of a ``notifications`` row), ``notification_webhooks`` (outgoing webhooks; secrets stay in
the vault), ``notification_subscriptions`` (kind level), ``notification_assignments`` (entity
level) and ``notification_attempts`` (the attempt trail). Existing ``notifications`` rows stay as
they are: they were recorded before any route existed and are never dispatched.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

UTC_DATETIME = frontdesk.platform.store.schema.UTCDateTime(timezone=True)
AUTO_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "notification_events",
        sa.Column("notification_id", AUTO_ID, autoincrement=False, nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("recipients", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["notification_id"],
            ["notifications.id"],
            name=op.f("fk_notification_events_notification_id_notifications"),
        ),
        sa.PrimaryKeyConstraint("notification_id", name=op.f("pk_notification_events")),
    )
    op.create_table(
        "notification_webhooks",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("secret_name", sa.String(length=120), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_notification_webhooks_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notification_webhooks")),
    )
    with op.batch_alter_table("notification_webhooks", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_notification_webhooks_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "notification_subscriptions",
        sa.Column("id", AUTO_ID, autoincrement=True, nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=True),
        sa.Column("webhook_id", sa.String(length=40), nullable=True),
        sa.Column("route", sa.String(length=16), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_notification_subscriptions_operator_id_operators")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_notification_subscriptions_tenant_id_tenants")
        ),
        sa.ForeignKeyConstraint(
            ["webhook_id"],
            ["notification_webhooks.id"],
            name=op.f("fk_notification_subscriptions_webhook_id_notification_webhooks"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notification_subscriptions")),
        sa.UniqueConstraint(
            "kind", "operator_id", "route", name=op.f("uq_notification_subscriptions_kind_operator_id_route")
        ),
        sa.UniqueConstraint(
            "kind", "webhook_id", "route", name=op.f("uq_notification_subscriptions_kind_webhook_id_route")
        ),
    )
    with op.batch_alter_table("notification_subscriptions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_notification_subscriptions_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "notification_assignments",
        sa.Column("id", AUTO_ID, autoincrement=True, nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=True),
        sa.Column("task_id", sa.String(length=40), nullable=True),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_notification_assignments_conversation_id_conversations"),
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_notification_assignments_operator_id_operators")
        ),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name=op.f("fk_notification_assignments_task_id_tasks")),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_notification_assignments_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notification_assignments")),
        sa.UniqueConstraint(
            "operator_id", "conversation_id", name=op.f("uq_notification_assignments_operator_id_conversation_id")
        ),
        sa.UniqueConstraint("operator_id", "task_id", name=op.f("uq_notification_assignments_operator_id_task_id")),
    )
    with op.batch_alter_table("notification_assignments", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_notification_assignments_conversation_id"), ["conversation_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_notification_assignments_task_id"), ["task_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_notification_assignments_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "notification_attempts",
        sa.Column("id", AUTO_ID, autoincrement=True, nullable=False),
        sa.Column("notification_id", AUTO_ID, nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("subscriber", sa.String(length=60), nullable=False),
        sa.Column("route", sa.String(length=16), nullable=False),
        sa.Column("level", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("claimed_until", UTC_DATETIME, nullable=True),
        sa.Column("sent_at", UTC_DATETIME, nullable=True),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("updated_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["notification_id"],
            ["notifications.id"],
            name=op.f("fk_notification_attempts_notification_id_notifications"),
        ),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_notification_attempts_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notification_attempts")),
        sa.UniqueConstraint(
            "notification_id",
            "subscriber",
            "route",
            name=op.f("uq_notification_attempts_notification_id_subscriber_route"),
        ),
    )
    with op.batch_alter_table("notification_attempts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_notification_attempts_tenant_id"), ["tenant_id"], unique=False)


def downgrade() -> None:
    for table, indexes in (
        ("notification_attempts", ["ix_notification_attempts_tenant_id"]),
        (
            "notification_assignments",
            [
                "ix_notification_assignments_tenant_id",
                "ix_notification_assignments_task_id",
                "ix_notification_assignments_conversation_id",
            ],
        ),
        ("notification_subscriptions", ["ix_notification_subscriptions_tenant_id"]),
        ("notification_webhooks", ["ix_notification_webhooks_tenant_id"]),
    ):
        with op.batch_alter_table(table, schema=None) as batch_op:
            for index in indexes:
                batch_op.drop_index(batch_op.f(index))
        op.drop_table(table)
    op.drop_table("notification_events")
