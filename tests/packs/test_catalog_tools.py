"""The catalog pack's tools on the demo print shop's data: called directly as typed contracts, and
through the pipeline."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from sqlalchemy import select

from frontdesk.app import create_app
from frontdesk.capabilities.tools import Tool, ToolContext, ToolFailure, ToolResult
from frontdesk.demo import DemoAccounts, demo_business_file
from frontdesk.output.blocks import blocks_adapter
from frontdesk.packs import PackDeps
from frontdesk.packs.catalog import PACK
from frontdesk.platform.store.schema import Contact, Conversation, Notification, Task
from frontdesk.runtime import Runtime
from harness import count, make_runtime, message, replies, reply, reply_texts, traces

MEDIA = "http://media.test/p"
PUBLIC = "http://frontdesk.test"
ECHO = {"name": "echo", "default": [reply("got: {user_text}")]}
CARDS_PRICES = ("$45 / 250 cards", "$70 / 500 cards")
CARDS_PRICE = ", ".join(CARDS_PRICES)
PHOTO_FILE = r"-[0-9a-f]{8}\.png"  # a photo's URL ends in a piece of its content hash
LEAD = {
    "service": "business-cards",
    "customer_name": "Ana Ruiz",
    "phone": "+1 555 123 4567",
    "email": "Ana.Ruiz@Example.com",
    "quantity": 500,
    "details": "matte, double-sided",
    "summary_for_team": "500 matte business cards for Ana",
}


@dataclass
class Shop:
    runtime: Runtime
    accounts: DemoAccounts
    tools: dict[str, Tool]

    async def context(self, session: str = "s1") -> ToolContext:
        """A turn's context in a real conversation (created by ingesting one message)."""
        ingested = await self.runtime.ingestor.ingest(message(self.accounts.webchat_id, "hi", session=session))
        return ToolContext(
            tenant_id=self.accounts.tenant_id,
            conversation_id=ingested.conversation_id,
            channel_account_id=self.accounts.webchat_id,
            turn_key=f"run-{session}",
        )

    async def call(self, name: str, ctx: ToolContext, **args: Any) -> ToolResult:
        """As the loop calls a tool: arguments through its input model, then the handler."""
        tool = self.tools[name]
        return await tool.handler(tool.input_model.model_validate(args), ctx)


@pytest.fixture
async def shop(db) -> Shop:
    runtime, accounts = await make_runtime(db, ECHO)
    tools = PACK.build_tools(PackDeps(db, runtime.clock, MEDIA))
    return Shop(runtime, accounts, {t.name: t for t in tools})


async def contact_of(db, conversation_id: str) -> Contact:
    async with db.transaction() as session:
        contact = await session.scalar(
            select(Contact)
            .join(Conversation, Conversation.contact_id == Contact.id)
            .where(Conversation.id == conversation_id)
        )
    assert contact is not None
    return contact


async def tasks_of(db, conversation_id: str) -> list[Task]:
    async with db.transaction() as session:
        return list(await session.scalars(select(Task).where(Task.conversation_id == conversation_id)))


async def notifications_of(db, conversation_id: str) -> list[Notification]:
    async with db.transaction() as session:
        return list(await session.scalars(select(Notification).where(Notification.conversation_id == conversation_id)))


# -- retrievals


@pytest.mark.parametrize("query", ["business cards", "tarjetas de presentación", "danh thiếp"])
async def test_search_finds_business_cards_in_english_spanish_and_vietnamese(shop, query):
    ctx = await shop.context()

    result = await shop.call("search_services", ctx, query=query)

    assert result.output["results"][0]["id"] == "business-cards"
    assert result.output["results"][0]["price"] == CARDS_PRICE
    assert "business-cards" in result.evidence.references
    assert set(CARDS_PRICES) <= set(result.evidence.prices)


async def test_a_category_the_catalog_lacks_is_no_filter_and_the_real_ones_are_named(shop):
    ctx = await shop.context()
    services = demo_business_file().items

    guessed = await shop.call("search_services", ctx, query="", category="all")
    apparel = await shop.call("search_services", ctx, query="", category="Apparel")

    assert guessed.output["count"] == len(services)  # not "nothing on offer"
    assert "apparel" in guessed.output["categories"]
    assert {r["id"] for r in apparel.output["results"]} == {i.spec.id for i in services if i.spec.category == "apparel"}
    assert "categories" not in apparel.output


async def test_a_long_listing_names_and_prices_each_item_and_a_short_one_tells_all(shop):
    ctx = await shop.context()

    listing = await shop.call("search_services", ctx, query="")
    one = await shop.call("search_services", ctx, query="wedding invitations")

    assert all(set(row) == {"id", "name", "price"} for row in listing.output["results"])
    assert listing.evidence.prices  # every price listed is still evidence for the reply
    assert {"summary", "turnaround_days"} <= set(one.output["results"][0])


async def test_search_gives_price_evidence_only_for_services_whose_price_is_set(shop):
    ctx = await shop.context()
    services = [item.spec for item in demo_business_file().items]
    unset = [s for s in services if not s.priced]
    assert unset, "the demo catalog has services quoted on request"

    everything = await shop.call("search_services", ctx, query="")
    invitations = await shop.call("search_services", ctx, query="wedding invitations")

    assert everything.output["count"] == len(services)
    assert everything.evidence.references == frozenset(s.id for s in services)
    assert everything.evidence.prices == tuple(t for s in services for t in s.price_texts("en", "en"))
    assert {r["price"] for r in everything.output["results"] if r["id"] in {s.id for s in unset}} == {
        "not set: quoted on request"
    }
    assert [r["id"] for r in invitations.output["results"]] == ["wedding-invitations"]
    assert (invitations.evidence.references, invitations.evidence.prices) == (frozenset({"wedding-invitations"}), ())


async def test_service_detail_carries_its_price_as_evidence(shop):
    ctx = await shop.context()

    result = await shop.call("get_service_detail", ctx, service_id="business-cards")

    assert (result.output["id"], result.output["price"]) == ("business-cards", CARDS_PRICE)
    assert (result.evidence.references, result.evidence.prices) == (frozenset({"business-cards"}), CARDS_PRICES)


@pytest.mark.parametrize(
    ("asked", "language", "hours"),
    [
        ("are you open on Sunday?", "en", {"Sunday": "closed"}),
        ("chu nhat shop co mo cua ko", "vi", {"Sunday": "closed"}),
        ("¿qué horario tienen los sábados?", "es", {"Saturday": "10:00-14:00"}),
        # In English, as English writes it: a small model converted 18:00 itself, to "5 PM".
        ("open friday or saturday?", "en", {"Friday": "9 AM to 6 PM", "Saturday": "10 AM to 2 PM"}),
    ],
)
async def test_business_info_answers_the_weekday_the_customer_named_first(shop, asked, language, hours):
    ctx = dataclasses.replace(await shop.context(), customer_message=asked, customer_language=language)

    result = await shop.call("get_business_info", ctx)

    assert next(iter(result.output)) == "hours_of_the_days_asked"
    assert result.output["hours_of_the_days_asked"] == hours
    assert "weekly_hours" not in result.output  # only the days asked: no other day to state instead


@pytest.mark.parametrize(("asked", "label"), [("are you open today?", "(today)"), ("¿abren mañana?", "(tomorrow)")])
async def test_business_info_answers_today_or_tomorrow_by_its_weekday(shop, asked, label):
    ctx = dataclasses.replace(await shop.context(), customer_message=asked)

    result = await shop.call("get_business_info", ctx)

    ((day, _hours),) = result.output["hours_of_the_days_asked"].items()
    assert day.endswith(label)
    assert day.split()[0] in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@pytest.mark.parametrize(
    ("asked", "language", "answer"),
    [
        ("are you open on Sunday?", "en", "Our hours: Sunday: closed."),
        ("chu nhat shop co mo cua ko", "vi", "Giờ mở cửa của shop: Chủ nhật: nghỉ."),
        ("¿qué horario tienen los sábados?", "es", "Nuestro horario: sábado: 10:00-14:00."),
        ("what are your hours?", "en", None),  # no day named: the week is the model's to sum up
        ("chủ nhật có mở không?", "fr", None),  # no words for it: the hold message, not English
    ],
)
async def test_business_info_answers_the_days_asked_in_the_customers_own_words(shop, asked, language, answer):
    ctx = dataclasses.replace(await shop.context(), customer_message=asked, customer_language=language)

    result = await shop.call("get_business_info", ctx)

    assert result.answer == answer


async def test_a_listing_and_a_price_come_with_their_own_answer_and_a_short_search_does_not(shop):
    ctx = dataclasses.replace(await shop.context(), customer_language="es")

    listing = await shop.call("search_services", ctx, query="")
    one = await shop.call("search_services", ctx, query="wedding invitations")
    cards = await shop.call("get_service_detail", ctx, service_id="business-cards")
    on_request = await shop.call("get_service_detail", ctx, service_id="custom-t-shirts")

    assert listing.answer is not None
    assert listing.answer.startswith("Imprimimos: ")
    assert all(row["name"] in listing.answer for row in listing.output["results"])
    assert one.answer is None  # a few rows are the model's to read, not a listing
    assert cards.answer == f"Precios de Business cards: {CARDS_PRICE}. Listo en 3 días. Pedido mínimo: 250."
    assert on_request.answer is None  # quoted on request: the team's to price


async def test_business_info_without_a_weekday_named_has_no_such_part(shop):
    result = await shop.call("get_business_info", await shop.context())

    assert "hours_of_the_days_asked" not in result.output


@pytest.mark.parametrize("service_id", ["quantum-teleporter", "calendars"])
async def test_service_detail_of_an_unknown_id_tells_the_model_to_use_search_services(shop, service_id):
    ctx = await shop.context()

    with pytest.raises(ToolFailure, match="search_services") as failure:
        await shop.call("get_service_detail", ctx, service_id=service_id)

    assert service_id in str(failure.value)


@pytest.mark.parametrize("service_id", ["no-such-service", "unknown-service"])
async def test_made_up_id_sharing_a_generic_word_with_a_summary_is_still_unknown(shop, service_id):
    """A hallucinated id must not resolve to whatever service's summary mentions "services"
    (brochures), or the model would present and quote a service nobody asked for."""
    ctx = await shop.context()

    with pytest.raises(ToolFailure, match="search_services"):
        await shop.call("get_service_detail", ctx, service_id=service_id)


async def test_photos_are_urls_under_the_media_base_url_and_their_ids_are_the_evidence(shop):
    ctx = await shop.context()

    result = await shop.call("get_service_photos", ctx, service_id="business-cards")
    one = await shop.call("get_service_photos", ctx, service_id="business-cards", limit=1)

    photos = result.output["photos"]
    assert [p["id"] for p in photos] == [f"business-cards-{n}" for n in (1, 2, 3)]
    for n, photo in enumerate(photos, start=1):
        assert re.fullmatch(rf"{MEDIA}/demo/business-cards-{n}{PHOTO_FILE}", photo["url"]), photo["url"]
    assert dict(result.evidence.photos) == {p["id"]: p["url"] for p in photos}
    assert result.evidence.references == frozenset({"business-cards"})
    assert dict(one.evidence.photos) == {"business-cards-1": photos[0]["url"]}


# -- actions


async def test_capture_lead_saves_contact_follow_up_and_lead_notification_together(shop, db):
    ctx = await shop.context()

    result = await shop.call("capture_lead", ctx, **LEAD)

    contact = await contact_of(db, ctx.conversation_id)
    (task,) = await tasks_of(db, ctx.conversation_id)
    (note,) = await notifications_of(db, ctx.conversation_id)
    assert (contact.name, contact.phone, contact.email) == ("Ana Ruiz", "+1 555 123 4567", "ana.ruiz@example.com")
    assert (task.kind, task.status, task.priority) == ("follow_up", "open", "normal")
    assert task.details["service_id"] == "business-cards"
    assert task.details["quantity"] == 500
    assert (note.kind, note.task_id) == ("lead", task.id)
    assert result.output == {"follow_up_id": task.id, "service": "Business cards", "status": "saved", "new": True}
    assert result.evidence.events == (("lead_captured", task.id),)


async def test_second_capture_of_the_same_service_opens_nothing_and_returns_the_same_follow_up(shop, db):
    ctx = await shop.context()

    first = await shop.call("capture_lead", ctx, **LEAD)
    again = await shop.call("capture_lead", ctx, **{**LEAD, "quantity": 1000})

    assert again.output["follow_up_id"] == first.output["follow_up_id"]
    assert again.output["new"] is False
    assert len(await tasks_of(db, ctx.conversation_id)) == 1
    assert len(await notifications_of(db, ctx.conversation_id)) == 1
    # another service in the same conversation is another request
    flyers = await shop.call("capture_lead", ctx, **{**LEAD, "service": "flyers"})
    assert flyers.output["new"] is True
    assert flyers.output["follow_up_id"] != first.output["follow_up_id"]
    assert len(await tasks_of(db, ctx.conversation_id)) == 2


async def test_capture_lead_that_fails_midway_leaves_nothing_behind(shop, db, monkeypatch):
    ctx = await shop.context()

    async def notify_fails(*_args: Any, **_kwargs: Any) -> None:  # after the contact and the task were written
        raise RuntimeError("the notification insert failed")

    monkeypatch.setattr("frontdesk.packs.catalog.tools.notify", notify_fails)
    with pytest.raises(RuntimeError, match="notification"):
        await shop.call("capture_lead", ctx, **LEAD)

    contact = await contact_of(db, ctx.conversation_id)
    assert (contact.name, contact.phone, contact.email) == (None, None, None)
    assert await count(db, Task) == 0
    assert await count(db, Notification) == 0


async def test_capture_lead_of_an_unknown_service_writes_nothing(shop, db):
    ctx = await shop.context()

    with pytest.raises(ToolFailure, match="search_services"):
        await shop.call("capture_lead", ctx, **{**LEAD, "service": "quantum-teleporter"})

    assert (await contact_of(db, ctx.conversation_id)).name is None
    assert await count(db, Task) == 0


async def test_capture_lead_without_phone_or_email_is_refused_by_its_arguments_with_a_request_to_ask(shop):
    args = {k: v for k, v in LEAD.items() if k not in ("phone", "email")}

    with pytest.raises(ValidationError, match="ask the customer for one"):
        shop.tools["capture_lead"].input_model.model_validate(args)


async def test_update_follow_up_refuses_a_follow_up_of_another_conversation(shop, db):
    mine = await shop.context("alice")
    other = await shop.context("bob")
    captured = await shop.call("capture_lead", mine, **LEAD)
    follow_up_id = captured.output["follow_up_id"]

    with pytest.raises(ToolFailure, match="in this conversation"):
        await shop.call("update_follow_up", other, follow_up_id=follow_up_id, quantity=2000, cancel=True)

    (task,) = await tasks_of(db, mine.conversation_id)
    assert (task.status, task.details["quantity"]) == ("open", 500)
    updated = await shop.call("update_follow_up", mine, follow_up_id=follow_up_id, quantity=2000)
    assert updated.output == {
        "follow_up_id": follow_up_id,
        "status": "open",
        "quantity": 2000,
        "details": "matte, double-sided",
    }


# -- through the pipeline

SEARCH_AND_QUOTE = {
    "name": "search-and-quote",
    "default": [
        {"tool": "search_services", "args": {"query": "{user_text}"}},
        {
            "reply": {
                "blocks": [
                    {
                        "type": "text",
                        "text": "{result:search_services.results.0.name}: {result:search_services.results.0.price}",
                    }
                ],
                "claims": [{"type": "service_presented", "service_id": "{result:search_services.results.0.id}"}],
            }
        },
    ],
}


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("How much are business cards?", "en"),
        ("¿Cuánto cuestan las tarjetas de presentación?", "es"),
        ("Shop có in danh thiếp không, giá bao nhiêu?", "vi"),
    ],
)
async def test_customer_asking_in_their_language_is_quoted_the_catalog_price(db, text, language):
    runtime, accounts = await make_runtime(db, SEARCH_AND_QUOTE)
    await runtime.ingestor.ingest(message(accounts.webchat_id, text))
    await runtime.runner.run_until_idle()

    assert await reply_texts(db) == [f"Business cards: {CARDS_PRICE}"]
    (trace,) = await traces(db)
    assert (trace.outcome, trace.route["language"]) == ("replied", language)
    assert [(c["name"], c["ok"]) for c in trace.tool_calls] == [("search_services", True)]
    assert trace.claims == [{"type": "service_presented", "service_id": "business-cards"}]


async def test_lead_without_phone_or_email_never_runs_and_the_model_is_told_to_ask(db):
    script = {
        "name": "lead-missing-contact",
        "default": [
            {"tool": "capture_lead", "args": {k: v for k, v in LEAD.items() if k not in ("phone", "email")}},
            reply("Happy to save that! What's a phone number or e-mail where we can reach you?"),
        ],
    }
    runtime, accounts = await make_runtime(db, script)
    text = "I'd like to order 500 business cards, I'm Ana, ana@example.com"
    await runtime.ingestor.ingest(message(accounts.webchat_id, text))
    await runtime.runner.run_until_idle()

    (trace,) = await traces(db)
    assert "capture_lead" in trace.tools_offered
    (call,) = trace.tool_calls
    assert (call["name"], call["ok"]) == ("capture_lead", False)
    assert "ask the customer for one" in call["error"]
    assert await count(db, Task) == 0
    assert await reply_texts(db) == ["Happy to save that! What's a phone number or e-mail where we can reach you?"]


PHOTOS = {
    "name": "photos",
    "default": [
        {"tool": "get_service_photos", "args": {"service_id": "business-cards", "limit": 2}},
        {
            "reply": {
                "blocks": [
                    {
                        "type": "image_group",
                        "urls": [
                            "{result:get_service_photos.photos.0.url}",
                            "{result:get_service_photos.photos.1.url}",
                        ],
                        "caption": "Our business cards",
                    }
                ],
                "claims": [
                    {
                        "type": "images_shown",
                        "photo_ids": [
                            "{result:get_service_photos.photos.0.id}",
                            "{result:get_service_photos.photos.1.id}",
                        ],
                    }
                ],
            }
        },
    ],
}


async def test_photo_urls_a_tool_returns_are_served_by_the_app(db):
    runtime, accounts = await make_runtime(db, PHOTOS, public_url=PUBLIC)
    await runtime.ingestor.ingest(message(accounts.webchat_id, "Can I see photos of your business cards?"))
    await runtime.runner.run_until_idle()
    (sent,) = await replies(db)
    (block,) = blocks_adapter.validate_json(sent.content)
    urls = [str(u) for u in block.urls]
    assert [
        re.fullmatch(rf"{PUBLIC}/media/catalog/demo/business-cards-{n}{PHOTO_FILE}", u) is not None
        for n, u in enumerate(urls, start=1)
    ] == [True, True]
    own_file = urls[0].rpartition("/")[2]

    app = create_app(runtime, run_workers=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=PUBLIC) as client:
        for url in urls:
            response = await client.get(url)
            assert (response.status_code, response.headers["content-type"]) == (200, "image/png")
            assert response.content.startswith(b"\x89PNG\r\n\x1a\n")
        for path in (
            "/media/catalog/demo/..%2Fcatalog.json",
            "/media/catalog/demo/..%2F..%2F__init__.py",
            "/media/catalog/demo/%2E%2E%2Fpolicy.json",
            "/media/catalog/demo/no-such-photo-0123abcd.png",
            "/media/catalog/demo/business-cards-1.png",  # no content hash: not a photo URL
            f"/media/catalog/another-shop/{own_file}",  # the same photo under another tenant
        ):
            response = await client.get(path)
            assert response.status_code == 404, path
            assert "services" not in response.text
