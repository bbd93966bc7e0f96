"""Tables of the operator console (kept beside ``schema.py`` so that feature's owner edits one file)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from frontdesk.platform.store.schema import AutoId, Base


class Operator(Base):
    """A person who works a tenant's inbox. ``role``: ``owner`` (configures the brain) or
    ``agent`` (monitors, replies, takes over). Notification routes read ``email`` and
    ``telegram_chat_id``; ``language`` is the language the console and notifications use."""

    __tablename__ = "operators"
    __table_args__ = (UniqueConstraint("email", name="uq_operators_email"),)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    email: Mapped[str] = mapped_column(String(254))
    name: Mapped[str] = mapped_column(String(120))
    role: Mapped[str] = mapped_column(String(16))
    password_hash: Mapped[str] = mapped_column(String(200))
    language: Mapped[str] = mapped_column(String(8), default="en")
    telegram_chat_id: Mapped[str | None] = mapped_column(String(64))
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime]
    last_login_at: Mapped[datetime | None]


class ConsoleSession(Base):
    """A signed-in browser. ``id`` is the SHA-256 of the cookie's token, so a copy of this table
    cannot be replayed as cookies. ``csrf_token`` is the synchronizer token every form posts back."""

    __tablename__ = "console_sessions"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"), index=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"))
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]


class ConsoleLoginAttempt(Base):
    """One sign-in attempt; failures per (email, client address) in a window are rate limited."""

    __tablename__ = "console_login_attempts"
    __table_args__ = (Index("ix_console_login_attempts_lookup", "email", "ip", "created_at"),)
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(String(254))
    ip: Mapped[str] = mapped_column(String(64))
    ok: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime]


class ConsoleLoginCounter(Base):
    """Sign-in attempts counted in a fixed window, per key: ``ip:<address>``, ``account:<email>``
    (browsers the operator has not signed in from) or ``device:<id>`` (one they have). Claimed
    with a conditional UPDATE before the password is checked, so parallel guesses queue on the row
    and get no more tries than serial ones."""

    __tablename__ = "console_login_counters"
    key: Mapped[str] = mapped_column(String(300), primary_key=True)
    window_start: Mapped[datetime]
    attempts: Mapped[int] = mapped_column(Integer)


class ConsoleDevice(Base):
    """A browser an operator has signed in from. ``id`` is the SHA-256 of the device cookie's
    token. Its sign-in attempts are counted apart from strangers', so guessing an operator's
    password from elsewhere never locks them out of a browser they already use."""

    __tablename__ = "console_devices"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"), index=True)
    created_at: Mapped[datetime]
    last_used_at: Mapped[datetime]


class AuditEntry(Base):
    """Every operator action (sign-in, policy edit, AI switch, reply, replay, task change).
    ``operator_id`` is NULL for actions taken from the command line."""

    __tablename__ = "console_audit"
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    operator_id: Mapped[str | None] = mapped_column(ForeignKey("operators.id"))
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str | None] = mapped_column(String(200))
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime]
