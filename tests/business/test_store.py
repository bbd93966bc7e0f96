"""Changing a tenant's business data: one transaction per change, each in the audit trail (who,
when, before and after) with the tenant's data revision bumped, nothing written when a change is
refused, and another tenant's ids unknown; on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from frontdesk.business import Actor, BusinessProfile, BusinessStore, ItemFields
from frontdesk.errors import NotFoundError, PayloadError
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.media import LocalMediaStore
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Tenant
from frontdesk.platform.store.schema_console import AuditEntry

CLOCK = SystemClock()
PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 64
OWNER = Actor(operator_id=None, via="console")


@pytest.fixture
async def store(db: Database, tmp_path: Path) -> BusinessStore:
    async with db.transaction() as session:
        for tenant_id in ("hoa-mai", "rival"):
            session.add(
                Tenant(
                    id=tenant_id,
                    name=tenant_id,
                    pack="catalog",
                    policy={},
                    languages=["vi", "en"],
                    created_at=CLOCK.now(),
                )
            )
    return BusinessStore(db, CLOCK, LocalMediaStore(tmp_path / "media"))


def cake(**fields: object) -> ItemFields:
    return ItemFields.model_validate(
        {"id": "banh-kem", "name": {"vi": "Bánh kem"}, "price": {"currency": "VND", "amount": 350000}, **fields}
    )


async def audit(db: Database, tenant: str = "hoa-mai") -> list[tuple[str, str | None, dict]]:
    async with db.read() as session:
        rows = await session.scalars(select(AuditEntry).where(AuditEntry.tenant_id == tenant).order_by(AuditEntry.id))
        return [(r.action, r.target, r.details) for r in rows]


async def test_a_profile_change_is_audited_with_before_and_after_and_an_unchanged_save_writes_nothing(store, db):
    first = BusinessProfile(name="Hoa Mai", phone="+84 28 3822 1234", timezone="Asia/Ho_Chi_Minh")
    moved = first.model_copy(update={"address": "12 Lý Tự Trọng"})

    assert await store.save_profile("hoa-mai", first, OWNER) is True
    assert await store.save_profile("hoa-mai", first, OWNER) is False
    assert await store.save_profile("hoa-mai", moved, OWNER) is True

    entries = await audit(db)
    assert [a for a, _, _ in entries] == ["business.profile", "business.profile"]
    assert entries[1][2] == {"via": "console", "changes": {"address": ["", "12 Lý Tự Trọng"]}}
    data = await store.read("hoa-mai")
    assert (data.revision, data.timezone, data.profile) == (2, "Asia/Ho_Chi_Minh", moved)


async def test_items_are_created_changed_deactivated_and_reordered_each_in_the_audit_trail(store, db):
    await store.save_item("hoa-mai", cake(), OWNER, create=True)
    await store.save_item("hoa-mai", cake(id="banh-mi", name={"vi": "Bánh mì"}), OWNER, create=True)
    await store.save_item("hoa-mai", cake(price={"currency": "VND", "amount": 380000}), OWNER, create=False)
    await store.set_active("hoa-mai", "banh-mi", False, OWNER)
    await store.reorder_items("hoa-mai", ["banh-mi", "banh-kem"], OWNER)

    entries = await audit(db)
    assert [(a, t) for a, t, _ in entries] == [
        ("catalog.item_create", "banh-kem"),
        ("catalog.item_create", "banh-mi"),
        ("catalog.item_update", "banh-kem"),
        ("catalog.item_deactivate", "banh-mi"),
        ("catalog.reorder", None),
    ]
    assert entries[2][2]["changes"]["price"][1]["tiers"] == [{"quantity": 1, "amount": "380000", "label": {}}]
    data = await store.read("hoa-mai")
    assert [(i.id, i.active) for i in data.items] == [("banh-mi", False), ("banh-kem", True)]
    assert data.revision == 5


async def test_refused_changes_write_nothing(store, db):
    await store.save_item("hoa-mai", cake(), OWNER, create=True)
    before = await store.read("hoa-mai")

    with pytest.raises(PayloadError, match="exists already"):
        await store.save_item("hoa-mai", cake(), OWNER, create=True)
    with pytest.raises(PayloadError, match="written in fr"):
        await store.save_item("hoa-mai", cake(name={"vi": "Bánh kem", "fr": "Gâteau"}), OWNER, create=False)
    with pytest.raises(PayloadError, match="not a PNG, JPEG, WebP or GIF image"):
        await store.add_photo("hoa-mai", "banh-kem", b"GIF86a not quite", {}, OWNER)
    with pytest.raises(PayloadError, match="every item of the catalog exactly once"):
        await store.reorder_items("hoa-mai", ["banh-kem", "banh-kem"], OWNER)

    assert await store.read("hoa-mai") == before
    assert len(await audit(db)) == 1


async def test_photos_are_added_in_order_captioned_reordered_and_removed(store, db, tmp_path):
    await store.save_item("hoa-mai", cake(), OWNER, create=True)

    first = await store.add_photo("hoa-mai", "banh-kem", PNG, {"vi": "Bánh kem dâu"}, OWNER)
    second = await store.add_photo("hoa-mai", "banh-kem", PNG + b"2", {}, OWNER)
    await store.set_photo_caption("hoa-mai", second.id, {"en": "Chocolate cake"}, OWNER)
    await store.reorder_photos("hoa-mai", "banh-kem", [second.id, first.id], OWNER)
    await store.remove_photo("hoa-mai", first.id, OWNER)

    (item,) = (await store.read("hoa-mai")).items
    assert [(p.id, p.caption) for p in item.photos] == [("banh-kem-2", {"en": "Chocolate cake"})]
    assert (tmp_path / "media" / first.media_key).read_bytes() == PNG  # stored, then unreferenced
    assert [a for a, _, _ in await audit(db)][1:] == [
        "catalog.photo_add",
        "catalog.photo_add",
        "catalog.photo_caption",
        "catalog.photo_reorder",
        "catalog.photo_remove",
    ]


async def test_another_tenants_items_and_photos_are_unknown(store, db):
    await store.save_item("rival", cake(), OWNER, create=True)
    photo = await store.add_photo("rival", "banh-kem", PNG, {}, OWNER)

    with pytest.raises(NotFoundError):
        await store.save_item("hoa-mai", cake(), OWNER, create=False)
    with pytest.raises(NotFoundError):
        await store.set_active("hoa-mai", "banh-kem", False, OWNER)
    with pytest.raises(NotFoundError):
        await store.add_photo("hoa-mai", "banh-kem", PNG, {}, OWNER)
    with pytest.raises(NotFoundError):
        await store.remove_photo("hoa-mai", photo.id, OWNER)
    with pytest.raises(NotFoundError):
        await store.photo("hoa-mai", photo.id)

    assert (await store.read("rival")).items[0].photos[0].id == photo.id
    assert await audit(db) == []
