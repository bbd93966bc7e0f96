"""Reading and changing a tenant's business data: one read for a turn's tools, one transaction per
change, each change audited (who, when, before and after) and bumping the tenant's
``data_revision`` in that same transaction.

Reads never cache: a change is what the next turn reads. Writes validate the text languages
against the tenant's own (``tenants.languages``) before touching anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.business._problems import problems
from frontdesk.business.catalog import CatalogItem, ItemFields, Photo, item_fields
from frontdesk.business.photos import checked_photo
from frontdesk.business.profile import BusinessProfile
from frontdesk.business.text import ShortText, language_problems
from frontdesk.errors import NotFoundError, PayloadError
from frontdesk.platform.clock import Clock
from frontdesk.platform.ids import TenantId
from frontdesk.platform.media import MediaStore
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Tenant
from frontdesk.platform.store.schema_business import BusinessProfileRow, CatalogItemRow, CatalogPhotoRow
from frontdesk.platform.store.schema_console import AuditEntry


@dataclass(frozen=True)
class Actor:
    """Who makes a change, for the audit trail: an operator of the console, or the command line."""

    operator_id: str | None = None
    via: str = "cli"  # cli | console | import


@dataclass(frozen=True)
class BusinessData:
    """A tenant's business data as one turn (or one page) reads it."""

    tenant_id: str
    name: str
    languages: tuple[str, ...]
    revision: int
    timezone: str
    profile: BusinessProfile | None
    items: tuple[CatalogItem, ...]

    @property
    def default_language(self) -> str:
        return self.languages[0]

    @property
    def active_items(self) -> tuple[CatalogItem, ...]:
        return tuple(i for i in self.items if i.active)

    def item(self, item_id: str) -> CatalogItem | None:
        return next((i for i in self.items if i.id == item_id), None)


def tenant_languages(tenant: Tenant) -> list[str]:
    return [str(x) for x in (tenant.languages or ["en"])] or ["en"]


def _timezone(tenant: Tenant) -> str:
    return str((tenant.policy or {}).get("timezone") or "UTC")


def _profile(row: BusinessProfileRow | None, tenant: Tenant) -> BusinessProfile | None:
    if row is None:
        return None
    return BusinessProfile.model_validate({**row.data, "timezone": _timezone(tenant)})


def _item(row: CatalogItemRow, photos: Sequence[CatalogPhotoRow]) -> CatalogItem:
    return CatalogItem.model_validate(
        {
            **row.data,
            "id": row.id,
            "active": row.active,
            "photos": [
                {"id": p.id, "caption": p.caption, "media_key": p.media_key, "mime_type": p.mime_type} for p in photos
            ],
        }
    )


class BusinessStore:
    def __init__(self, db: Database, clock: Clock, media: MediaStore | None = None) -> None:
        self._db = db
        self._clock = clock
        self._media = media

    # -- reads

    async def read(self, tenant_id: str) -> BusinessData:
        """Everything of one tenant, in one read transaction (``NotFoundError``: no such tenant)."""
        async with self._db.read() as session:
            return await self.read_in(session, tenant_id)

    async def read_in(self, session: AsyncSession, tenant_id: str) -> BusinessData:
        """``read`` inside the caller's transaction."""
        tenant = await session.get(Tenant, tenant_id)
        if tenant is None:
            raise NotFoundError(f"no tenant {tenant_id!r}")
        profile = await session.get(BusinessProfileRow, tenant_id)
        rows = list(
            await session.scalars(
                select(CatalogItemRow)
                .where(CatalogItemRow.tenant_id == tenant_id)
                .order_by(CatalogItemRow.position, CatalogItemRow.id)
            )
        )
        photos: dict[str, list[CatalogPhotoRow]] = {}
        for photo in await session.scalars(
            select(CatalogPhotoRow)
            .where(CatalogPhotoRow.tenant_id == tenant_id)
            .order_by(CatalogPhotoRow.position, CatalogPhotoRow.id)
        ):
            photos.setdefault(photo.item_id, []).append(photo)
        return BusinessData(
            tenant_id=tenant_id,
            name=tenant.name,
            languages=tuple(tenant_languages(tenant)),
            revision=int(tenant.data_revision or 0),
            timezone=_timezone(tenant),
            profile=_profile(profile, tenant),
            items=tuple(_item(row, photos.get(row.id, [])) for row in rows),
        )

    async def photo(self, tenant_id: str, photo_id: str) -> Photo:
        """One gallery photo (the public photo route): ``NotFoundError`` for any other tenant's."""
        async with self._db.read() as session:
            row = await session.get(CatalogPhotoRow, (tenant_id, photo_id))
        if row is None:
            raise NotFoundError(f"no photo {photo_id!r}")
        return Photo(id=row.id, caption=row.caption, media_key=row.media_key, mime_type=row.mime_type)

    # -- the profile

    async def save_profile(self, tenant_id: str, profile: BusinessProfile, actor: Actor) -> bool:
        """Replace the profile (its time zone is the tenant's); False when nothing changed."""
        async with self._db.transaction() as session:
            tenant = await self._tenant(session, tenant_id)
            _refuse(profile.language_problems(tenant_languages(tenant)))
            row = await session.get(BusinessProfileRow, tenant_id)
            before = _profile(row, tenant)
            if before == profile:
                return False
            await write_profile(session, tenant, profile, self._clock.now())
            self._audit(session, tenant, actor, "business.profile", None, _changes(_dump(before), _dump(profile)))
            return True

    # -- catalog items

    async def save_item(self, tenant_id: str, fields: ItemFields, actor: Actor, *, create: bool) -> bool:
        """Create an item (``create``: its id must be new) or change one (its photos stay)."""
        async with self._db.transaction() as session:
            tenant = await self._tenant(session, tenant_id)
            languages = tenant_languages(tenant)
            _refuse(fields.language_problems(languages, languages[0]))
            row = await session.get(CatalogItemRow, (tenant_id, fields.id))
            if create and row is not None:
                raise PayloadError(f"an item with the id {fields.id!r} exists already: choose another id")
            if not create and row is None:
                raise NotFoundError(f"no item {fields.id!r}")
            before = None if row is None else {**row.data, "active": row.active}
            after = {**item_fields(fields), "active": fields.active}
            if before == after:
                return False
            if row is None:
                position = await self._next_position(session, tenant_id)
                session.add(self._item_row(tenant_id, fields, position))
            else:
                row.data, row.active, row.updated_at = item_fields(fields), fields.active, self._clock.now()
            action = "catalog.item_create" if row is None else "catalog.item_update"
            self._audit(session, tenant, actor, action, fields.id, _changes(before or {}, after))
            return True

    async def set_active(self, tenant_id: str, item_id: str, active: bool, actor: Actor) -> bool:
        async with self._db.transaction() as session:
            tenant = await self._tenant(session, tenant_id)
            row = await self._item_row_of(session, tenant_id, item_id)
            if row.active == active:
                return False
            row.active, row.updated_at = active, self._clock.now()
            action = "catalog.item_activate" if active else "catalog.item_deactivate"
            self._audit(session, tenant, actor, action, item_id, {"active": [not active, active]})
            return True

    async def reorder_items(self, tenant_id: str, ordered: Sequence[str], actor: Actor) -> None:
        """Put the items in this order (every item of the catalog, each once)."""
        async with self._db.transaction() as session:
            tenant = await self._tenant(session, tenant_id)
            rows = {
                r.id: r
                for r in await session.scalars(select(CatalogItemRow).where(CatalogItemRow.tenant_id == tenant_id))
            }
            before = _apply_order(rows, ordered, "every item of the catalog")
            if before is not None:
                self._audit(session, tenant, actor, "catalog.reorder", None, {"order": [before, list(ordered)]})

    # -- photos

    async def add_photo(
        self, tenant_id: str, item_id: str, data: bytes, caption: dict[str, str], actor: Actor
    ) -> Photo:
        """Check the bytes, store them in the media store, and add them last to the item's gallery."""
        if self._media is None:
            raise PayloadError("photo uploads need a media store")
        caption = _checked_caption(caption)
        mime = checked_photo(data, "the photo")
        async with self._db.read() as session:  # refuse an unknown item before storing any byte
            await self._item_row_of(session, tenant_id, item_id)
        stored = await self._media.put(TenantId(tenant_id), data, mime)
        async with self._db.transaction() as session:
            tenant = await self._tenant(session, tenant_id)
            languages = tenant_languages(tenant)
            _refuse(language_problems("caption", caption, languages))
            await self._item_row_of(session, tenant_id, item_id)
            existing = list(
                await session.scalars(
                    select(CatalogPhotoRow).where(
                        CatalogPhotoRow.tenant_id == tenant_id, CatalogPhotoRow.item_id == item_id
                    )
                )
            )
            if len(existing) >= 20:
                raise PayloadError(f"{item_id} has 20 photos already: remove one first")
            taken = set(await session.scalars(select(CatalogPhotoRow.id).where(CatalogPhotoRow.tenant_id == tenant_id)))
            # A photo id is a slug of at most 60 characters, like the item's: a long item id is cut.
            stem = item_id[:54].rstrip("-")
            photo_id = next(f"{stem}-{n}" for n in range(1, 10_000) if f"{stem}-{n}" not in taken)
            position = max((r.position for r in existing), default=-1) + 1
            session.add(
                CatalogPhotoRow(
                    tenant_id=tenant_id,
                    id=photo_id,
                    item_id=item_id,
                    position=position,
                    media_key=stored.key,
                    mime_type=mime,
                    caption=caption,
                    created_at=self._clock.now(),
                )
            )
            self._audit(session, tenant, actor, "catalog.photo_add", photo_id, {"item": item_id, "caption": caption})
        return Photo(id=photo_id, caption=caption, media_key=stored.key, mime_type=mime)

    async def remove_photo(self, tenant_id: str, photo_id: str, actor: Actor) -> None:
        async with self._db.transaction() as session:
            tenant = await self._tenant(session, tenant_id)
            row = await session.get(CatalogPhotoRow, (tenant_id, photo_id))
            if row is None:
                raise NotFoundError(f"no photo {photo_id!r}")
            await session.delete(row)
            self._audit(session, tenant, actor, "catalog.photo_remove", photo_id, {"item": row.item_id})

    async def set_photo_caption(self, tenant_id: str, photo_id: str, caption: dict[str, str], actor: Actor) -> None:
        caption = _checked_caption(caption)
        async with self._db.transaction() as session:
            tenant = await self._tenant(session, tenant_id)
            _refuse(language_problems("caption", caption, tenant_languages(tenant)))
            row = await session.get(CatalogPhotoRow, (tenant_id, photo_id))
            if row is None:
                raise NotFoundError(f"no photo {photo_id!r}")
            if row.caption == caption:
                return
            self._audit(session, tenant, actor, "catalog.photo_caption", photo_id, {"caption": [row.caption, caption]})
            row.caption = caption

    async def reorder_photos(self, tenant_id: str, item_id: str, ordered: Sequence[str], actor: Actor) -> None:
        async with self._db.transaction() as session:
            tenant = await self._tenant(session, tenant_id)
            rows = {
                r.id: r
                for r in await session.scalars(
                    select(CatalogPhotoRow).where(
                        CatalogPhotoRow.tenant_id == tenant_id, CatalogPhotoRow.item_id == item_id
                    )
                )
            }
            before = _apply_order(rows, ordered, f"every photo of {item_id}")
            if before is not None:
                changes = {"order": [before, list(ordered)]}
                self._audit(session, tenant, actor, "catalog.photo_reorder", item_id, changes)

    # -- helpers shared with the importer

    async def _tenant(self, session: AsyncSession, tenant_id: str) -> Tenant:
        tenant = await session.get(Tenant, tenant_id, with_for_update=True)
        if tenant is None:
            raise NotFoundError(f"no tenant {tenant_id!r}")
        return tenant

    async def _item_row_of(self, session: AsyncSession, tenant_id: str, item_id: str) -> CatalogItemRow:
        row = await session.get(CatalogItemRow, (tenant_id, item_id))
        if row is None:
            raise NotFoundError(f"no item {item_id!r}")
        return row

    async def _next_position(self, session: AsyncSession, tenant_id: str) -> int:
        positions = await session.scalars(select(CatalogItemRow.position).where(CatalogItemRow.tenant_id == tenant_id))
        return max(positions, default=-1) + 1

    def _item_row(self, tenant_id: str, fields: ItemFields, position: int) -> CatalogItemRow:
        now = self._clock.now()
        return CatalogItemRow(
            tenant_id=tenant_id,
            id=fields.id,
            position=position,
            active=fields.active,
            data=item_fields(fields),
            created_at=now,
            updated_at=now,
        )

    def _audit(
        self, session: AsyncSession, tenant: Tenant, actor: Actor, action: str, target: str | None, changes: Any
    ) -> None:
        record_change(session, tenant, actor, action, target, changes, self._clock.now())


async def write_profile(session: AsyncSession, tenant: Tenant, profile: BusinessProfile, now: datetime) -> None:
    """Store ``profile`` (its time zone goes to the tenant's policy, the one place it lives)."""
    data = profile.model_dump(mode="json", exclude={"timezone"})
    row = await session.get(BusinessProfileRow, tenant.id)
    if row is None:
        session.add(BusinessProfileRow(tenant_id=tenant.id, data=data, updated_at=now))
    else:
        row.data, row.updated_at = data, now
    tenant.policy = {**(tenant.policy or {}), "timezone": profile.timezone}


def record_change(
    session: AsyncSession, tenant: Tenant, actor: Actor, action: str, target: str | None, changes: Any, now: datetime
) -> None:
    """The audit row (who, when, before and after), and the revision bump that makes every
    earlier quote of this tenant stale; in the caller's transaction."""
    tenant.data_revision = int(tenant.data_revision or 0) + 1
    session.add(
        AuditEntry(
            tenant_id=tenant.id,
            operator_id=actor.operator_id,
            action=action,
            target=target,
            details={"via": actor.via, "changes": changes},
            created_at=now,
        )
    )


def _apply_order(
    rows: Mapping[str, CatalogItemRow | CatalogPhotoRow], ordered: Sequence[str], what: str
) -> list[str] | None:
    """Give ``rows`` the positions of ``ordered`` (naming each exactly once); the order before,
    or None when it was already this one."""
    if sorted(ordered) != sorted(rows):
        raise PayloadError(f"the new order must name {what} exactly once")
    before = [r.id for r in sorted(rows.values(), key=lambda r: (r.position, r.id))]
    if before == list(ordered):
        return None
    for position, row_id in enumerate(ordered):
        rows[row_id].position = position
    return before


def _dump(profile: BusinessProfile | None) -> dict[str, Any]:
    return profile.model_dump(mode="json") if profile is not None else {}


def _changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Any]]:
    """Field -> [before, after], for the fields that differ."""
    return {k: [before.get(k), after.get(k)] for k in sorted({*before, *after}) if before.get(k) != after.get(k)}


_CAPTION: TypeAdapter[dict[str, str]] = TypeAdapter(ShortText)


def _checked_caption(caption: dict[str, str]) -> dict[str, str]:
    """The caption as ``Photo`` reads it back (trimmed, at most 200 characters per language, no
    NUL): stored unchecked, one bad caption would make every later read of the catalog fail."""
    try:
        return _CAPTION.validate_python(caption)
    except ValidationError as exc:
        found = [f"caption: {p}" for p in problems(exc)]
        raise PayloadError("; ".join(found), details=found) from exc


def _refuse(problems: list[str]) -> None:
    if problems:
        raise PayloadError("; ".join(problems), details=problems)
