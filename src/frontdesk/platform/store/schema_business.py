"""Tables of a tenant's own business data (``frontdesk.business``), kept beside ``schema.py`` so
that feature's owner edits one file.

The validated models live in ``frontdesk.business``; rows keep them as JSON (``data``), with the
columns a query filters or orders on beside it. Every change bumps ``tenants.data_revision`` in
the same transaction: the tool ledger drops evidence read before it, so a price quoted before an
edit cannot prove the same price after it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from frontdesk.platform.store.schema import Base


class BusinessProfileRow(Base):
    """One per tenant: name, description, address, contacts, hours, exceptions (the time zone is
    the tenant's, in ``tenants.policy``)."""

    __tablename__ = "business_profiles"
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), primary_key=True)
    data: Mapped[dict[str, Any]] = mapped_column(default=dict)
    updated_at: Mapped[datetime]


class CatalogItemRow(Base):
    """An item of a tenant's catalog; ``id`` is its stable slug, unique per tenant."""

    __tablename__ = "catalog_items"
    __table_args__ = (Index("ix_catalog_items_order", "tenant_id", "position"),)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), primary_key=True)
    id: Mapped[str] = mapped_column(String(60), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    data: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class CatalogPhotoRow(Base):
    """A photo of an item's gallery: the bytes are in the media store under ``media_key``; the
    public route ``/media/catalog/<tenant>/<photo id>`` serves only keys named by a row here."""

    __tablename__ = "catalog_photos"
    __table_args__ = (Index("ix_catalog_photos_item", "tenant_id", "item_id", "position"),)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), primary_key=True)
    id: Mapped[str] = mapped_column(String(60), primary_key=True)
    item_id: Mapped[str] = mapped_column(String(60))
    position: Mapped[int] = mapped_column(Integer)
    media_key: Mapped[str] = mapped_column(String(200))
    mime_type: Mapped[str] = mapped_column(String(40))
    caption: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime]
