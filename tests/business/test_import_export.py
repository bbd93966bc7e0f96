"""Business files in and out: a dry run shows the changes and writes nothing, a bad row is named
with its line and nothing is half-written, and export → import changes nothing (YAML, JSON, CSV),
on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from frontdesk.business import Actor, BusinessStore, Importer, read_business_file
from frontdesk.business.files import document, render
from frontdesk.demo import DEMO_BUSINESS_FILE, DEMO_LANGUAGES, DEMO_TENANT, seed_demo
from frontdesk.errors import PayloadError
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.media import LocalMediaStore
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Tenant
from frontdesk.platform.store.schema_business import CatalogItemRow, CatalogPhotoRow
from frontdesk.platform.store.schema_console import AuditEntry

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
CLOCK = SystemClock()
BAKERY = """\
version: 1
profile:
  name: Tiệm bánh Hoa Mai
  address: 12 Lý Tự Trọng, Quận 1, TP. Hồ Chí Minh
  phone: +84 28 3822 1234
  timezone: Asia/Ho_Chi_Minh
  hours: {mon: "06:30-20:00", tue: "06:30-20:00", sun: closed}
items:
  - id: banh-mi-thit
    name: {vi: Bánh mì thịt, en: Pork banh mi}
    price: {currency: VND, unit: {vi: ổ, en: sandwich}, amount: 25000}
    synonyms: {vi: [bánh mì], en: [banh mi]}
    photos:
      - {id: banh-mi-1, file: photos/banh-mi.png, caption: {vi: Bánh mì nóng giòn}}
  - id: banh-kem
    name: {vi: Bánh kem, en: Birthday cake}
    price: on_request
"""


@pytest.fixture
async def bakery(db: Database, tmp_path: Path) -> tuple[Database, Path]:
    """A tenant speaking Vietnamese then English, and its business file with one photo."""
    async with db.transaction() as session:
        session.add(
            Tenant(
                id="hoa-mai", name="Hoa Mai", pack="catalog", policy={}, languages=["vi", "en"], created_at=CLOCK.now()
            )
        )
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "banh-mi.png").write_bytes(PNG)
    path = tmp_path / "hoa-mai.yaml"
    path.write_text(BAKERY, encoding="utf-8")
    return db, path


def importer(db: Database, tmp_path: Path) -> Importer:
    return Importer(db, CLOCK, LocalMediaStore(tmp_path / "media"))


async def rows(db: Database, tenant: str) -> tuple[int, int, int]:
    async with db.read() as session:
        items = await session.scalar(
            select(func.count()).select_from(CatalogItemRow).where(CatalogItemRow.tenant_id == tenant)
        )
        photos = await session.scalar(
            select(func.count()).select_from(CatalogPhotoRow).where(CatalogPhotoRow.tenant_id == tenant)
        )
        audit = await session.scalar(select(func.count()).select_from(AuditEntry).where(AuditEntry.tenant_id == tenant))
    return int(items or 0), int(photos or 0), int(audit or 0)


async def test_a_dry_run_lists_the_changes_and_writes_nothing_then_the_import_writes_them_all(bakery, tmp_path):
    db, path = bakery
    loaded = read_business_file(path, ["vi", "en"])

    preview = [c.line() for c in await importer(db, tmp_path).preview("hoa-mai", loaded)]

    assert await rows(db, "hoa-mai") == (0, 0, 0)
    assert preview[0].startswith("~ profile: name: — → Tiệm bánh Hoa Mai")
    assert preview[1:] == ["+ banh-mi-thit: new item", "+ banh-kem: new item"]
    applied = await importer(db, tmp_path).apply("hoa-mai", loaded, Actor(via="import"))
    assert [c.line() for c in applied] == preview
    assert await rows(db, "hoa-mai") == (2, 1, 3)  # an audit row per change
    data = await BusinessStore(db, CLOCK).read("hoa-mai")
    assert data.profile is not None
    assert data.profile.phone == "+842838221234"
    assert data.timezone == "Asia/Ho_Chi_Minh"  # the tenant's one time zone
    assert [i.price_texts("vi", "vi") for i in data.items] == [["25.000 ₫ / ổ"], []]
    assert await importer(db, tmp_path).preview("hoa-mai", loaded) == []  # nothing left to change


@pytest.mark.parametrize(
    ("edit", "problems"),
    [
        (
            lambda t: t.replace("amount: 25000", "amount: 25000.5"),
            ["line 9, item 'banh-mi-thit': price: 25000.5 VND: at most 0 decimals"],
        ),
        (
            lambda t: t.replace(
                "  - id: banh-kem\n    name: {vi: Bánh kem, en: Birthday cake}",
                "  - id: banh-kem\n    name: {en: Birthday cake}",
            ),
            ["line 15, item 'banh-kem': name: no name in vi, the business's default language"],
        ),
        (
            lambda t: t.replace("id: banh-kem", "id: banh-mi-thit"),
            ["line 15, item 'banh-mi-thit': the id 'banh-mi-thit' is used by line 9, item 'banh-mi-thit' too"],
        ),
        (
            lambda t: t.replace("photos/banh-mi.png", "photos/missing.png"),
            [
                "line 9, item 'banh-mi-thit': photo banh-mi-1: "
                "cannot read photos/missing.png (No such file or directory)"
            ],
        ),
        (
            lambda t: t.replace("{vi: ổ, en: sandwich}", "{vi: ổ, fr: sandwich}"),
            ["line 9, item 'banh-mi-thit': price.unit: written in fr, which this business does not speak (vi, en)"],
        ),
    ],
    ids=["dong-with-cents", "no-default-name", "duplicate-id", "missing-photo", "foreign-language"],
)
async def test_a_bad_row_is_named_with_its_line_and_nothing_is_imported(bakery, tmp_path, edit, problems):
    db, path = bakery
    path.write_text(edit(BAKERY), encoding="utf-8")

    with pytest.raises(PayloadError) as refused:
        read_business_file(path, ["vi", "en"])

    assert refused.value.details == problems
    assert "nothing was imported" in refused.value.message
    assert await rows(db, "hoa-mai") == (0, 0, 0)


def test_a_photo_is_judged_by_its_bytes_and_its_size(bakery, tmp_path):
    _, path = bakery
    (tmp_path / "photos" / "banh-mi.png").write_bytes(b"<html>not a picture</html>")
    with pytest.raises(PayloadError, match=r"not a PNG, JPEG, WebP or GIF image \(judged from its content\)"):
        read_business_file(path, ["vi", "en"])
    (tmp_path / "photos" / "banh-mi.png").write_bytes(PNG + b"\x00" * (5 * 1024 * 1024))
    with pytest.raises(PayloadError, match="over the limit of 5,242,880 bytes per photo"):
        read_business_file(path, ["vi", "en"])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("items: [\n  {id: a, name: {vi: A}, price: on_request, price: on_request}\n]\n", "line 2"),
        ("profile: {name: X\nitems: []\n", "not valid YAML"),
        ("- just a list\n", "holds one mapping"),
        ("items: []\nprices: []\n", "unknown top-level keys prices"),
    ],
)
def test_an_unreadable_file_is_refused_with_where_it_went_wrong(tmp_path, text, problem):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(PayloadError, match=problem):
        read_business_file(path, ["vi"])


async def test_items_missing_from_the_file_are_deactivated_not_deleted_unless_the_import_is_partial(bakery, tmp_path):
    db, path = bakery
    await importer(db, tmp_path).apply("hoa-mai", read_business_file(path, ["vi", "en"]), Actor())
    path.write_text(BAKERY.split("  - id: banh-kem")[0], encoding="utf-8")
    only_banh_mi = read_business_file(path, ["vi", "en"])

    partial = await importer(db, tmp_path).preview("hoa-mai", only_banh_mi, partial=True)
    whole = await importer(db, tmp_path).apply("hoa-mai", only_banh_mi, Actor())

    assert partial == []
    assert [c.line() for c in whole] == ["- banh-kem: deactivated (not in the file)"]
    data = await BusinessStore(db, CLOCK).read("hoa-mai")
    assert [(i.id, i.active) for i in data.items] == [("banh-mi-thit", True), ("banh-kem", False)]


@pytest.mark.parametrize("kind", ["yaml", "json", "csv"])
async def test_the_demo_business_exported_and_imported_again_changes_nothing(db, tmp_path, kind):
    media = LocalMediaStore(tmp_path / "media")
    await seed_demo(db, CLOCK, media)
    data = await BusinessStore(db, CLOCK).read(DEMO_TENANT)
    out = tmp_path / "export" / f"shop.{kind}"
    (out.parent / "photos").mkdir(parents=True)
    files: dict[str, str] = {}
    for item in data.items:
        for photo in item.photos:
            picture, _ = await media.get(photo.media_key)
            (out.parent / "photos" / f"{photo.id}.png").write_bytes(picture)
            files[photo.id] = f"photos/{photo.id}.png"
    out.write_text(render(document(data.profile, list(data.items), files), kind), encoding="utf-8")

    again = read_business_file(out, list(DEMO_LANGUAGES))
    changes = await Importer(db, CLOCK, media).preview(DEMO_TENANT, again)

    # CSV carries the catalog only: the profile stays as it is, which is no change either.
    assert changes == []
    assert len(again.items) == len(data.items) == 15
    if kind == "json":
        assert json.loads(out.read_text(encoding="utf-8"))["profile"]["phone"] == "+15550100123"


async def test_the_shipped_demo_file_reads_cleanly():
    loaded = read_business_file(DEMO_BUSINESS_FILE, list(DEMO_LANGUAGES))

    assert loaded.profile is not None
    assert loaded.profile.name == "Demo Print Shop"
    assert sum(len(i.photos) for i in loaded.items) == 28
