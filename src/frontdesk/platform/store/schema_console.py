"""Tables of the operator console (kept beside ``schema.py`` so that feature's owner edits one file)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from frontdesk.platform.store.schema import Base


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
