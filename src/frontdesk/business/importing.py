"""Importing a business file: the changes it would make (a dry run prints them), then all of them
in one transaction, each audited, or none.

The file is the whole catalog: items it does not name are deactivated (never deleted: the tool
ledger and old conversations still cite them), unless the import is ``partial``. Items take the
file's order. Photos are put in the media store before the transaction (content-addressed, so a
failed import leaves at most an unreferenced object) and named by rows written inside it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.business.catalog import CatalogItem, ItemFields, Price, item_fields
from frontdesk.business.files import BusinessFile, LoadedItem
from frontdesk.business.store import Actor, BusinessData, BusinessStore, record_change, write_profile
from frontdesk.errors import PayloadError
from frontdesk.platform.clock import Clock
from frontdesk.platform.ids import TenantId
from frontdesk.platform.media import MediaStore, media_key
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Tenant
from frontdesk.platform.store.schema_business import CatalogItemRow, CatalogPhotoRow


@dataclass(frozen=True)
class Change:
    """One change an import makes. ``kind``: profile, add, update, deactivate or order."""

    kind: str
    target: str | None
    changes: dict[str, list[Any]] = field(default_factory=dict)

    def line(self) -> str:
        mark = {"add": "+", "deactivate": "-"}.get(self.kind, "~")
        name = self.target or self.kind
        if self.kind == "add":
            return f"{mark} {name}: new item"
        if self.kind == "deactivate":
            return f"{mark} {name}: deactivated (not in the file)"
        details = "; ".join(f"{k}: {_short(v[0])} → {_short(v[1])}" for k, v in self.changes.items())
        return f"{mark} {name}: {details}"


def _short(value: Any) -> str:
    text = "—" if value in (None, "", [], {}) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _photos_of(item: CatalogItem | None) -> list[dict[str, Any]]:
    return [{"id": p.id, "caption": dict(p.caption), "key": p.media_key} for p in item.photos] if item else []


def _loaded_photos(tenant_id: str, item: LoadedItem) -> list[dict[str, Any]]:
    return [{"id": p.id, "caption": p.caption, "key": media_key(tenant_id, p.data, p.mime_type)} for p in item.photos]


def _fields(item: ItemFields | None) -> dict[str, Any]:
    if item is None:
        return {}
    data = item_fields(item)
    if isinstance(item.price, Price):  # shown as the customer would read it, not as JSON
        data["price"] = ", ".join(item.price.texts("", next(iter(item.name))))
    return {**data, "active": item.active}


def plan(current: BusinessData, file: BusinessFile, *, partial: bool = False) -> list[Change]:
    """The changes importing ``file`` would make to ``current``, in the order they are made."""
    changes: list[Change] = []
    if file.profile is not None and file.profile != current.profile:
        before = current.profile.model_dump(mode="json") if current.profile else {}
        after = file.profile.model_dump(mode="json")
        diff = {k: [before.get(k), after[k]] for k in after if before.get(k) != after[k]}
        changes.append(Change("profile", None, diff))
    for loaded in file.items:
        existing = current.item(loaded.spec.id)
        before = {**_fields(existing), "photos": _photo_summary(_photos_of(existing))}
        after = {**_fields(loaded.spec), "photos": _photo_summary(_loaded_photos(current.tenant_id, loaded))}
        diff = {k: [before.get(k), after[k]] for k in after if before.get(k) != after[k]}
        if existing is None:
            changes.append(Change("add", loaded.spec.id, diff))
        elif diff:
            changes.append(Change("update", loaded.spec.id, diff))
    named = {loaded.spec.id for loaded in file.items}
    if not partial:
        changes.extend(
            Change("deactivate", item.id, {"active": [True, False]})
            for item in current.items
            if item.active and item.id not in named
        )
        order_before = [i.id for i in current.items if i.id in named]
        order_after = [loaded.spec.id for loaded in file.items if current.item(loaded.spec.id) is not None]
        if order_before != order_after:
            changes.append(Change("order", None, {"order": [order_before, order_after]}))
    return changes


def _photo_summary(photos: list[dict[str, Any]]) -> list[str]:
    """Photos as a diff shows them: id, and a mark when the picture itself differs."""
    return [f"{p['id']} ({p['key'][-12:]})" for p in photos]


Recorder = Callable[[str, str | None, dict[str, list[Any]], datetime], None]


def _recorder(session: AsyncSession, tenant: Tenant, actor: Actor, audit: bool) -> Recorder:
    def record(action: str, target: str | None, changes: dict[str, list[Any]], now: datetime) -> None:
        if audit:
            record_change(session, tenant, actor, action, target, changes, now)
        else:
            tenant.data_revision = int(tenant.data_revision or 0) + 1

    return record


class Importer:
    def __init__(self, db: Database, clock: Clock, media: MediaStore) -> None:
        self._db = db
        self._clock = clock
        self._media = media
        self._store = BusinessStore(db, clock, media)

    async def preview(self, tenant_id: str, file: BusinessFile, *, partial: bool = False) -> list[Change]:
        return plan(await self._store.read(tenant_id), file, partial=partial)

    async def apply(
        self, tenant_id: str, file: BusinessFile, actor: Actor, *, partial: bool = False, audit: bool = True
    ) -> list[Change]:
        """Make the changes: photos stored first, then every row in one transaction. ``audit``
        False: seed data (the demo), which is nobody's change; the revision is bumped all the same."""
        if not await self.preview(tenant_id, file, partial=partial):
            return []
        for loaded in file.items:
            for photo in loaded.photos:
                await self._media.put(TenantId(tenant_id), photo.data, photo.mime_type)
        async with self._db.transaction() as session:
            tenant = await session.get(Tenant, tenant_id, with_for_update=True)
            if tenant is None:
                raise PayloadError(f"no tenant {tenant_id!r}")
            current = await self._store.read_in(session, tenant_id)
            changes = plan(current, file, partial=partial)
            record = _recorder(session, tenant, actor, audit)
            await self._write(session, tenant, current, file, changes, record, partial=partial)
        return changes

    async def _write(
        self,
        session: AsyncSession,
        tenant: Tenant,
        current: BusinessData,
        file: BusinessFile,
        changes: list[Change],
        record: Recorder,
        *,
        partial: bool,
    ) -> None:
        now = self._clock.now()
        by_kind = {(c.kind, c.target): c for c in changes}
        if file.profile is not None and ("profile", None) in by_kind:
            await write_profile(session, tenant, file.profile, now)
            record("business.profile", None, by_kind[("profile", None)].changes, now)
        rows = {
            r.id: r for r in await session.scalars(select(CatalogItemRow).where(CatalogItemRow.tenant_id == tenant.id))
        }
        photo_rows = {
            r.id: r
            for r in await session.scalars(select(CatalogPhotoRow).where(CatalogPhotoRow.tenant_id == tenant.id))
        }
        last = max((r.position for r in rows.values()), default=-1)
        for index, loaded in enumerate(file.items):
            change = by_kind.get(("add", loaded.spec.id)) or by_kind.get(("update", loaded.spec.id))
            if change is None:
                continue
            row = rows.get(loaded.spec.id)
            position = (last := last + 1) if partial and row is None else index
            if row is None:
                row = CatalogItemRow(tenant_id=tenant.id, id=loaded.spec.id, created_at=now)
                session.add(row)
                rows[row.id] = row
            row.data, row.active, row.updated_at = item_fields(loaded.spec), loaded.spec.active, now
            row.position = row.position if partial and row.position is not None else position
            await self._write_photos(session, tenant.id, loaded, photo_rows, file, now)
            action = "catalog.item_create" if change.kind == "add" else "catalog.item_update"
            record(action, loaded.spec.id, change.changes, now)
        if partial:
            return
        for index, loaded in enumerate(file.items):
            rows[loaded.spec.id].position = index
        for offset, item in enumerate(i for i in current.items if i.id not in {x.spec.id for x in file.items}):
            rows[item.id].position = len(file.items) + offset
            if ("deactivate", item.id) in by_kind:
                rows[item.id].active, rows[item.id].updated_at = False, now
                record("catalog.item_deactivate", item.id, {"active": [True, False]}, now)
        if ("order", None) in by_kind:
            record("catalog.reorder", None, by_kind[("order", None)].changes, now)

    async def _write_photos(
        self,
        session: AsyncSession,
        tenant_id: str,
        loaded: LoadedItem,
        photo_rows: dict[str, CatalogPhotoRow],
        file: BusinessFile,
        now: datetime,
    ) -> None:
        # A photo the file moves to another item is moved by that item's update, not removed.
        named = {p.id for item in file.items for p in item.photos}
        for gone in [r for r in photo_rows.values() if r.item_id == loaded.spec.id and r.id not in named]:
            photo_rows.pop(gone.id)
            await session.delete(gone)
        for position, photo in enumerate(loaded.photos):
            key = media_key(tenant_id, photo.data, photo.mime_type)
            row = photo_rows.get(photo.id)
            if row is None:
                row = CatalogPhotoRow(tenant_id=tenant_id, id=photo.id, created_at=now)
                session.add(row)
                photo_rows[photo.id] = row
            row.item_id, row.position, row.media_key = loaded.spec.id, position, key
            row.mime_type, row.caption = photo.mime_type, photo.caption
