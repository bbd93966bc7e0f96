"""Tables of the notifications feature (kept beside ``schema.py`` so that feature's owner edits one file).

A notification is a ``notifications`` row (``schema.Notification``: kind, text, dedupe key) plus
its typed side here. Who receives it is resolved once and written as one ``notification_attempts``
row per (notification, subscriber, route): that unique key is what makes "each operator is told
once per route" hold however often the dispatch job runs. See ``docs/notifications.md``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from frontdesk.platform.store.schema import AutoId, Base


class NotificationEvent(Base):
    """The typed payload of a notification (``humans.notifications.events``) and the explicit
    recipients the caller named, if any."""

    __tablename__ = "notification_events"
    notification_id: Mapped[int] = mapped_column(
        AutoId, ForeignKey("notifications.id"), primary_key=True, autoincrement=False
    )
    payload: Mapped[dict[str, Any]]
    recipients: Mapped[list[Any]] = mapped_column(default=list)


class NotificationWebhook(Base):
    """An outgoing webhook of a tenant (a CRM, a chat bridge). The signing secret lives in the
    vault under ``secret_name``; this row never holds it."""

    __tablename__ = "notification_webhooks"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    name: Mapped[str] = mapped_column(String(120))
    url: Mapped[str] = mapped_column(String(2000))
    secret_name: Mapped[str] = mapped_column(String(120))
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime]


class NotificationSubscription(Base):
    """Kind level: "events of ``kind`` go to this operator (or webhook), on ``route``".
    Exactly one of ``operator_id`` / ``webhook_id`` is set; ``route`` is ``any`` (every route the
    operator can receive) or one route name. Each unique key holds for rows whose subscriber
    column is set (NULLs never collide)."""

    __tablename__ = "notification_subscriptions"
    __table_args__ = (
        UniqueConstraint("kind", "operator_id", "route"),
        UniqueConstraint("kind", "webhook_id", "route"),
    )
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    operator_id: Mapped[str | None] = mapped_column(ForeignKey("operators.id"))
    webhook_id: Mapped[str | None] = mapped_column(ForeignKey("notification_webhooks.id"))
    route: Mapped[str] = mapped_column(String(16), default="any")
    created_at: Mapped[datetime]


class NotificationAssignment(Base):
    """Entity level: an operator assigned to (or following) one conversation or one task."""

    __tablename__ = "notification_assignments"
    __table_args__ = (
        UniqueConstraint("operator_id", "conversation_id"),
        UniqueConstraint("operator_id", "task_id"),
    )
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    conversation_id: Mapped[str | None] = mapped_column(ForeignKey("conversations.id"), index=True)
    task_id: Mapped[str | None] = mapped_column(ForeignKey("tasks.id"), index=True)
    created_at: Mapped[datetime]


class NotificationAttempt(Base):
    """The attempt trail: one row per (notification, subscriber, route), planned when the
    notification is first dispatched. ``subscriber`` is ``operator:<id>`` or ``webhook:<id>``;
    ``level`` says which resolution level chose it; ``status`` is ``pending`` (planned or waiting
    for a retry), ``sending`` (claimed until ``claimed_until``), ``sent``, ``failed`` (refused, or
    out of attempts) or ``skipped`` (the route is not configured for this subscriber). ``error`` is
    the last failure, kept after a later success, and never holds a secret."""

    __tablename__ = "notification_attempts"
    __table_args__ = (UniqueConstraint("notification_id", "subscriber", "route"),)
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    notification_id: Mapped[int] = mapped_column(ForeignKey("notifications.id"))
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    subscriber: Mapped[str] = mapped_column(String(60))
    route: Mapped[str] = mapped_column(String(16))
    level: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    claimed_until: Mapped[datetime | None]
    sent_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
