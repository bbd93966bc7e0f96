"""Tables of the vault feature (kept beside ``schema.py`` so that feature's owner edits one file)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from frontdesk.platform.store.schema import AutoId, Base


class Credential(Base):
    """One sealed secret (``platform.vault``). ``envelope`` is AES-256-GCM ciphertext whose
    associated data is ``(tenant_id, name)``: moving it to another row makes it unreadable.
    ``key_id`` repeats the envelope's key id so ``frontdesk vault rotate`` can count old rows."""

    __tablename__ = "credentials"
    __table_args__ = (UniqueConstraint("tenant_id", "name", name="uq_credentials_tenant_id_name"),)
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    envelope: Mapped[str] = mapped_column(Text)
    key_id: Mapped[str] = mapped_column(String(16), index=True)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
