"""The owner edits the business in the console: the profile (/console/business), catalog items
(/console/catalog, /new, /{item_id}) and their photo galleries. Each change is an owner's, behind
the CSRF token, audited by ``BusinessStore`` with before and after, and is what the next read
returns; a refused form is shown again (422) and saves nothing; an agent reads but gets 403."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from console_kit import AGENT, OWNER, build_console, client, csrf_of, form_fields, png, sign_in
from sqlalchemy import select

from frontdesk.business import BusinessData, BusinessStore
from frontdesk.business.photos import MAX_PHOTO_BYTES
from frontdesk.humans.console.pages_catalog_edit import UPLOAD_LIMIT
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema_console import AuditEntry, Operator

PROFILE, CARDS = "/console/business", "/console/catalog/business-cards"


async def read(db: Database) -> BusinessData:
    return await BusinessStore(db, SystemClock()).read("demo")


async def audit(db: Database) -> list[AuditEntry]:
    """The demo tenant's business and catalog changes, oldest first."""
    async with db.read() as session:
        rows = await session.scalars(
            select(AuditEntry)
            .where(
                AuditEntry.tenant_id == "demo",
                AuditEntry.action.like("business.%") | AuditEntry.action.like("catalog.%"),
            )
            .order_by(AuditEntry.id)
        )
        return list(rows)


async def operator_id(db: Database, email: str) -> str:
    async with db.read() as session:
        found = await session.scalar(select(Operator.id).where(Operator.email == email))
    assert found is not None
    return found


async def shown_form(http: httpx2.AsyncClient, path: str, form_id: str) -> dict[str, str]:
    """What the owner's browser posts when they save the page's form as it is shown."""
    page = await http.get(path)
    assert page.status_code == 200, page.text
    return form_fields(page.text, form_id)


def media_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


@pytest.fixture
async def console(db):
    return await build_console(db)


@pytest.fixture
async def owner(console) -> AsyncIterator[httpx2.AsyncClient]:
    async with client(console) as http:
        await sign_in(http, OWNER)
        yield http


# -- the profile -------------------------------------------------------------------------------


async def test_an_owner_edits_the_profile_and_the_audit_row_keeps_before_and_after(console, owner, db):
    form = await shown_form(owner, PROFILE, "business-form")
    before = await read(db)
    form |= {
        "address": "12 Lý Tự Trọng, District 1",
        "hours.mon": "08:00-12:00, 13:30-18:00",
        "hours.sun": "",
        "description.es": "Una imprenta de barrio.",
        "new_exception.date": "2031-01-01",
        "new_exception.closed": "true",
        "new_exception.note.en": "New Year's Day",
    }

    saved = await owner.post(PROFILE, data=form)
    again = await owner.post(PROFILE, data=await shown_form(owner, PROFILE, "business-form"))

    assert saved.status_code == 303
    assert saved.headers["location"] == f"{PROFILE}?notice=saved"
    assert again.headers["location"] == f"{PROFILE}?notice=unchanged"  # an unchanged form writes nothing
    after = await read(db)
    assert after.profile is not None
    assert before.profile is not None
    assert after.profile.address == "12 Lý Tự Trọng, District 1"
    assert after.profile.hours["mon"] == ["08:00-12:00", "13:30-18:00"]
    assert after.profile.description["es"] == "Una imprenta de barrio."
    assert [(d.date.isoformat(), d.closed, d.note) for d in after.profile.exceptions] == [
        ("2031-01-01", True, {"en": "New Year's Day"})
    ]
    assert after.revision == before.revision + 1
    [entry] = await audit(db)
    assert (entry.action, entry.operator_id) == ("business.profile", await operator_id(db, OWNER))
    changes = entry.details["changes"]
    assert entry.details["via"] == "console"
    assert sorted(changes) == ["address", "description", "exceptions", "hours"]
    assert changes["address"] == [before.profile.address, "12 Lý Tự Trọng, District 1"]
    assert changes["hours"][0]["mon"] == ["09:00-18:00"]
    page = await owner.get(f"{PROFILE}?notice=saved")
    assert 'id="notice"' in page.text
    assert 'data-exception="2031-01-01"' in page.text


async def test_a_ticked_special_day_is_removed_on_save(console, owner, db):
    form = await shown_form(owner, PROFILE, "business-form")
    await owner.post(PROFILE, data={**form, "new_exception.date": "2031-12-25", "new_exception.hours": "10:00-13:00"})
    form = await shown_form(owner, PROFILE, "business-form")

    removed = await owner.post(PROFILE, data={**form, "remove_exception": "2031-12-25"})

    assert removed.status_code == 303
    profile = (await read(db)).profile
    assert profile is not None
    assert profile.exceptions == []
    assert [e.details["changes"]["exceptions"][1] for e in await audit(db)] == [
        [{"date": "2031-12-25", "closed": False, "hours": ["10:00-13:00"], "note": {}}],
        [],
    ]


async def test_bad_profile_input_is_shown_again_with_each_problem_next_to_its_field(console, owner, db):
    form = await shown_form(owner, PROFILE, "business-form")
    before = await read(db)
    bad = form | {
        "phone": "12345",
        "hours.mon": "25:00-26:00",
        "timezone": "Mars/Olympus_Mons",
        "new_exception.date": "2031-05-01",  # neither closed nor hours
        "address": "kept as typed",
    }

    response = await owner.post(PROFILE, data=bad)

    assert response.status_code == 422
    assert response.headers["content-type"].startswith("text/html")
    assert 'id="form-errors"' in response.text
    shown = form_fields(response.text, "business-form")
    assert (shown["phone"], shown["address"], shown["new_exception.date"]) == ("12345", "kept as typed", "2031-05-01")
    for field, message in (
        ("phone", "is not an international phone number"),
        ("hours.mon", "is not a time of day"),
        ("timezone", "unknown time zone"),
        ("new_exception", "say closed: true, or give its hours"),
    ):
        assert f'data-error-for="{field}">' in response.text
        errors = response.text.split(f'data-error-for="{field}">', 1)[1].split("</span>", 1)[0]
        assert message in errors, (field, errors)
    assert await read(db) == before
    assert await audit(db) == []


async def test_an_agent_reads_the_profile_but_cannot_change_it(console, db):
    before = await read(db)
    async with client(console) as http:
        await sign_in(http, AGENT)
        page = await http.get(PROFILE)
        token = await csrf_of(http, PROFILE)
        refused = await http.post(PROFILE, data={"csrf": token, "name": "Taken over", "timezone": "UTC"})

    assert page.status_code == 200
    assert "Demo Print Shop" in page.text
    assert 'id="owner-only"' in page.text
    assert 'id="save-business"' not in page.text
    assert form_fields(page.text, "business-form") == {"csrf": token}  # every field is disabled
    assert refused.status_code == 403
    assert await read(db) == before
    assert await audit(db) == []


async def test_a_profile_post_without_the_csrf_token_is_refused(console, owner, db):
    form = await shown_form(owner, PROFILE, "business-form")
    before = await read(db)

    missing = await owner.post(PROFILE, data={k: v for k, v in form.items() if k != "csrf"} | {"name": "Forged"})
    forged = await owner.post(PROFILE, data=form | {"csrf": "forged", "name": "Forged"})

    assert (missing.status_code, forged.status_code) == (403, 403)
    assert await read(db) == before


# -- catalog items -------------------------------------------------------------------------------

NEW_MUGS = {
    "id": "mugs",
    "category": "merch",
    "name.en": "Printed mugs",
    "name.vi": "Cốc in hình",
    "summary.en": "Ceramic mugs with your logo.",
    "price.kind": "amounts",
    "price.currency": "USD",
    "price.unit.en": "mugs",
    "tiers.0.quantity": "12",
    "tiers.0.amount": "96",
    "tiers.2.quantity": "48",  # an empty row between them is ignored
    "tiers.2.amount": "336",
    "turnaround_days": "5",
    "min_quantity": "12",
    "synonyms.en": "mug, coffee mug ,  ",
    "active": "true",
}


async def test_an_owner_creates_edits_deactivates_and_moves_an_item(console, owner, db):
    token = await csrf_of(owner, "/console/catalog/new")
    created = await owner.post("/console/catalog/new", data={"csrf": token, **NEW_MUGS})
    form = await shown_form(owner, "/console/catalog/mugs", "item-form")
    unchanged = await owner.post("/console/catalog/mugs", data=form)
    edited = await owner.post("/console/catalog/mugs", data=form | {"tiers.0.amount": "99.50", "name.es": "Tazas"})
    deactivated = await owner.post("/console/catalog/mugs/active", data={"csrf": token, "active": "false"})
    moved = await owner.post("/console/catalog/mugs/move", data={"csrf": token, "direction": "up"})
    listing = await owner.get("/console/catalog")

    assert created.headers["location"] == "/console/catalog/mugs?notice=saved"
    assert unchanged.headers["location"] == "/console/catalog/mugs?notice=unchanged"
    assert edited.headers["location"] == "/console/catalog/mugs?notice=saved"
    assert (deactivated.status_code, moved.status_code) == (303, 303)
    data = await read(db)
    mugs = data.item("mugs")
    assert mugs is not None
    assert mugs.name == {"en": "Printed mugs", "es": "Tazas", "vi": "Cốc in hình"}
    assert mugs.price_texts("en", "en") == ["$99.50 / 12 mugs", "$336 / 48 mugs"]
    assert (mugs.turnaround_days, mugs.min_quantity, mugs.synonyms) == (5, 12, {"en": ["mug", "coffee mug"]})
    assert mugs.active is False
    order = [i.id for i in data.items]
    assert order.index("mugs") == len(order) - 2  # created last, then one step up
    entries = await audit(db)
    assert [(e.action, e.target) for e in entries] == [
        ("catalog.item_create", "mugs"),
        ("catalog.item_update", "mugs"),
        ("catalog.item_deactivate", "mugs"),
        ("catalog.reorder", None),
    ]
    assert entries[1].details["changes"]["name"] == [
        {"en": "Printed mugs", "vi": "Cốc in hình"},
        {"en": "Printed mugs", "es": "Tazas", "vi": "Cốc in hình"},
    ]
    assert entries[1].details["changes"]["price"][1]["tiers"][0]["amount"] == "99.50"
    section = listing.text.split('data-service="mugs"', 1)[1].split("</section>", 1)[0]
    assert "inactive" in section
    assert "Activate" in section


async def test_an_item_price_can_be_quoted_on_request(console, owner, db):
    form = await shown_form(owner, CARDS, "item-form")

    saved = await owner.post(CARDS, data=form | {"price.kind": "on_request"})

    assert saved.status_code == 303
    cards = (await read(db)).item("business-cards")
    assert cards is not None
    assert cards.price == "on_request"
    assert "Quoted on request" in (await owner.get("/console/catalog")).text


async def test_a_bad_item_form_is_shown_again_with_its_problems_and_nothing_is_created(console, owner, db):
    token = await csrf_of(owner, "/console/catalog/new")
    bad = NEW_MUGS | {
        "csrf": token,
        "id": "Mugs & Cups",
        "name.en": "",
        "name.vi": "",
        "tiers.2.amount": "three hundred",
        "turnaround_days": "-1",
    }
    before = await read(db)

    response = await owner.post("/console/catalog/new", data=bad)
    taken = await owner.post("/console/catalog/new", data=NEW_MUGS | {"csrf": token, "id": "business-cards"})
    reserved = await owner.post("/console/catalog/new", data=NEW_MUGS | {"csrf": token, "id": "new"})
    no_price = await owner.post(
        "/console/catalog/new",
        data={k: v for k, v in NEW_MUGS.items() if not k.startswith("tiers.")} | {"csrf": token},
    )

    assert response.status_code == 422
    for field, message in (
        ("id", "use lowercase letters, digits and single dashes"),
        ("name", "an item needs a name"),
        ("price", "price row 3 amount"),
        ("turnaround_days", "greater than or equal to 0"),
    ):
        errors = response.text.split(f'data-error-for="{field}">', 1)[1].split("</span>", 1)[0]
        assert message in errors, (field, errors)
    assert form_fields(response.text, "item-form")["id"] == "Mugs & Cups"  # shown as typed
    assert (taken.status_code, reserved.status_code, no_price.status_code) == (422, 422, 422)
    assert "exists already" in taken.text
    assert "&#39;new&#39; is reserved" in reserved.text
    assert "give at least one price row" in no_price.text
    assert await read(db) == before
    assert await audit(db) == []


async def test_the_catalog_search_matches_names_synonyms_ids_and_categories_without_accents(console, owner):
    async def found(q: str) -> list[str]:
        page = await owner.get("/console/catalog", params={"q": q})
        assert page.status_code == 200
        return [part.split('"', 1)[0] for part in page.text.split('data-service="')[1:]]

    assert await found("danh thiep") == ["business-cards"]  # a Vietnamese synonym, typed without accents
    assert await found("TẤM") == []
    assert "flyers" in await found("Tờ Rơi")
    assert await found("business-cards") == ["business-cards"]
    assert "business-cards" in await found("cards")
    assert await found("nothing like this") == []
    nothing = await owner.get("/console/catalog", params={"q": "nothing like this"})
    assert 'id="no-match"' in nothing.text


async def test_an_agent_reads_items_but_every_catalog_change_is_403(console, db):
    before = await read(db)
    async with client(console) as http:
        await sign_in(http, AGENT)
        listing = await http.get("/console/catalog")
        page = await http.get(CARDS)
        token = await csrf_of(http, CARDS)
        posts = {
            "/console/catalog/new": NEW_MUGS,
            CARDS: {"name.en": "Taken over", "price.kind": "on_request"},
            f"{CARDS}/active": {"active": "false"},
            f"{CARDS}/move": {"direction": "down"},
            f"{CARDS}/photos/business-cards-1/caption": {"caption.en": "Taken over"},
            f"{CARDS}/photos/business-cards-1/move": {"direction": "down"},
            f"{CARDS}/photos/business-cards-1/remove": {},
        }
        answers = [(await http.post(path, data={"csrf": token, **form})).status_code for path, form in posts.items()]
        upload = await http.post(
            f"{CARDS}/photos", data={"csrf": token}, files={"photo": ("a.png", png(3), "image/png")}
        )

    assert listing.status_code == 200
    assert 'data-service="business-cards"' in listing.text
    for control in ('id="new-item"', "/active", "/move"):
        assert control not in listing.text
    assert page.status_code == 200
    assert form_fields(page.text, "item-form") == {"csrf": token}  # every field is disabled
    assert 'id="save-item"' not in page.text
    assert 'id="upload-form"' not in page.text
    assert answers == [403] * len(posts)
    assert upload.status_code == 403
    assert await read(db) == before
    assert await audit(db) == []


# -- photos -------------------------------------------------------------------------------------


async def test_an_uploaded_photo_is_added_last_and_served_at_its_public_url(console, owner, db):
    token = await csrf_of(owner, CARDS)
    picture = png(42, size=4)

    uploaded = await owner.post(
        f"{CARDS}/photos",
        data={"csrf": token, "caption.en": "Cards on a desk", "caption.es": "Tarjetas en un escritorio"},
        files={"photo": ("desk.png", picture, "image/png")},
    )

    assert uploaded.status_code == 303
    cards = (await read(db)).item("business-cards")
    assert cards is not None
    photo = cards.photos[-1]
    assert (photo.id, photo.caption, photo.mime_type) == (
        "business-cards-4",
        {"en": "Cards on a desk", "es": "Tarjetas en un escritorio"},
        "image/png",
    )
    served = await owner.get(f"/media/catalog/demo/{photo.file_name}")
    assert served.status_code == 200
    assert served.headers["content-type"] == "image/png"
    assert served.content == picture
    assert f"/media/catalog/demo/{photo.file_name}" in (await owner.get(CARDS)).text
    [entry] = await audit(db)
    assert (entry.action, entry.target, entry.details["changes"]["item"]) == (
        "catalog.photo_add",
        "business-cards-4",
        "business-cards",
    )


async def test_a_text_file_named_png_is_refused_and_nothing_is_stored(console, owner, db, tmp_path):
    token = await csrf_of(owner, CARDS)
    before, files_before = await read(db), media_files(tmp_path / "media")

    refused = await owner.post(
        f"{CARDS}/photos",
        data={"csrf": token, "caption.en": "not a picture"},
        files={"photo": ("photo.png", b"just some text, honestly\n", "image/png")},
    )

    assert refused.status_code == 422
    assert 'id="upload-error"' in refused.text
    assert "not a PNG, JPEG, WebP or GIF image (judged from its content)" in refused.text
    assert await read(db) == before
    assert media_files(tmp_path / "media") == files_before
    assert await audit(db) == []


@pytest.mark.parametrize("size", [MAX_PHOTO_BYTES + 1, UPLOAD_LIMIT + 1])
async def test_an_oversized_upload_is_refused_with_413_and_nothing_is_stored(console, owner, db, tmp_path, size):
    token = await csrf_of(owner, CARDS)
    before, files_before = await read(db), media_files(tmp_path / "media")
    huge = png(1) + b"\0" * (size - len(png(1)))

    refused = await owner.post(f"{CARDS}/photos", data={"csrf": token}, files={"photo": ("big.png", huge, "image/png")})

    assert refused.status_code == 413
    assert "The photo is over the 5 MB limit: nothing was uploaded." in refused.text
    assert await read(db) == before
    assert media_files(tmp_path / "media") == files_before
    assert await audit(db) == []


async def test_a_huge_upload_is_refused_before_it_is_all_read(console, owner, db):
    """A chunked body declares no length: the cap stops reading it once past the limit."""
    token = await csrf_of(owner, CARDS)
    boundary = "frontdesk-test-boundary"
    chunk, total = b"\0" * 65536, 16 * 1024 * 1024
    sent = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal sent
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n{token}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="photo"; filename="huge.png"\r\n'
            "Content-Type: image/png\r\n\r\n"
        ).encode()
        for part in (head + png(1), *(chunk for _ in range(total // len(chunk))), f"\r\n--{boundary}--\r\n".encode()):
            sent += len(part)
            yield part

    refused = await owner.post(
        f"{CARDS}/photos", content=body(), headers={"Content-Type": f"multipart/form-data; boundary={boundary}"}
    )

    assert refused.status_code == 413
    assert sent < UPLOAD_LIMIT + 2 * len(chunk) < total
    assert await audit(db) == []


async def test_a_caption_is_edited_a_photo_moved_and_another_removed(console, owner, db):
    token = await csrf_of(owner, CARDS)
    before = (await read(db)).item("business-cards")
    assert before is not None
    kept_url, removed_url = (f"/media/catalog/demo/{p.file_name}" for p in before.photos[1:])

    captioned = await owner.post(
        f"{CARDS}/photos/business-cards-1/caption",
        data={"csrf": token, "caption.en": "Matte cards, rounded corners", "caption.vi": "Danh thiếp mờ"},
    )
    moved = await owner.post(f"{CARDS}/photos/business-cards-1/move", data={"csrf": token, "direction": "down"})
    at_the_top = await owner.post(f"{CARDS}/photos/business-cards-2/move", data={"csrf": token, "direction": "up"})
    removed = await owner.post(f"{CARDS}/photos/business-cards-3/remove", data={"csrf": token})
    kept, gone = await owner.get(kept_url), await owner.get(removed_url)

    assert [r.status_code for r in (captioned, moved, at_the_top, removed)] == [303] * 4
    cards = (await read(db)).item("business-cards")
    assert cards is not None
    assert [(p.id, p.caption) for p in cards.photos] == [
        ("business-cards-2", {"en": "Double-sided gloss cards in a fan"}),
        ("business-cards-1", {"en": "Matte cards, rounded corners", "vi": "Danh thiếp mờ"}),
    ]
    assert (kept.status_code, gone.status_code) == (200, 404)
    assert [(e.action, e.target) for e in await audit(db)] == [
        ("catalog.photo_caption", "business-cards-1"),
        ("catalog.photo_reorder", "business-cards"),  # moving the first photo up changed nothing
        ("catalog.photo_remove", "business-cards-3"),
    ]


async def test_a_caption_too_long_is_refused_and_the_catalog_still_reads(console, owner, db):
    token = await csrf_of(owner, CARDS)

    refused = await owner.post(
        f"{CARDS}/photos/business-cards-1/caption", data={"csrf": token, "caption.en": "x" * 201}
    )

    assert refused.status_code == 422
    assert "at most 200 characters" in refused.json()["error"]["message"]
    assert (await owner.get("/console/catalog")).status_code == 200
    assert await audit(db) == []


async def test_an_item_with_the_longest_id_gets_photo_ids_that_fit(console, owner, db):
    long_id = "a" * 29 + "-" + "b" * 30
    token = await csrf_of(owner, "/console/catalog/new")
    created = await owner.post("/console/catalog/new", data=NEW_MUGS | {"csrf": token, "id": long_id})
    uploaded = await owner.post(
        f"/console/catalog/{long_id}/photos", data={"csrf": token}, files={"photo": ("a.png", png(9), "image/png")}
    )

    assert (created.status_code, uploaded.status_code) == (303, 303)
    item = (await read(db)).item(long_id)
    assert item is not None
    [photo] = item.photos
    assert len(photo.id) <= 60
    assert (await owner.get(f"/media/catalog/demo/{photo.file_name}")).status_code == 200
    assert (await owner.get("/console/catalog")).status_code == 200


async def test_the_business_pages_render_in_every_language(console, db):
    for language, heading in (("en", "Business profile"), ("es", "Perfil del negocio"), ("vi", "Hồ sơ doanh nghiệp")):
        async with db.transaction() as session:
            for operator in await session.scalars(select(Operator).where(Operator.tenant_id == "demo")):
                operator.language = language
        async with client(console) as http:
            await sign_in(http, OWNER)
            pages = [await http.get(path) for path in (PROFILE, "/console/catalog", "/console/catalog/new", CARDS)]

        assert [p.status_code for p in pages] == [200] * 4
        assert f"<h1>{heading}</h1>" in pages[0].text
        for page in pages:
            assert f'lang="{language}"' in page.text
