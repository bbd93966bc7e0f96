"""The built-in offline demo (`script:demo`): the print shop on its real tools, checked by the
router, the offered tools and the verification gate, and end to end through the pipeline."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from pydantic_ai import ModelMessage, ModelRequest, UserPromptPart
from sqlalchemy import select

from frontdesk.app import create_app
from frontdesk.business import ItemSpec
from frontdesk.business.profile import weekly_lines
from frontdesk.capabilities.tools import ToolContext
from frontdesk.context.ledgers import WorkingState
from frontdesk.demo import DEMO_TENANT, DemoAccounts, demo_business_file, seed_demo
from frontdesk.output.blocks import ImageGroupBlock, TextBlock, blocks_adapter
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.media import LocalMediaStore
from frontdesk.platform.models.gateway import ModelClient, ModelGateway
from frontdesk.platform.models.script import read_script
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Contact, Conversation, Notification, Task
from frontdesk.reasoning.agent import AgentPack
from frontdesk.reasoning.loop import GenerationResult, Outcome, run_generation
from frontdesk.reasoning.router import RouterState
from frontdesk.runtime import Runtime, agent_packs
from frontdesk.settings import Settings
from frontdesk.verification.money import money_amounts
from harness import count, demo_photo_url, make_runtime, message, replies, reply_texts, traces, wait_idle

CONTEXT = ToolContext(tenant_id=DEMO_TENANT, conversation_id="c")


def user(text: str) -> list[ModelMessage]:
    return [ModelRequest(parts=[UserPromptPart(text)])]


def texts(result: GenerationResult) -> list[str]:
    return [b.text for b in result.blocks if isinstance(b, TextBlock)]


# -- the built-in demo -------------------------------------------------------------------------------

GREETING = "Hello! I'm frontdesk's offline demo model: my replies are scripted, not written by an AI."
SERVICES = {loaded.spec.id: loaded.spec for loaded in demo_business_file().items}
PROFILE = demo_business_file().profile
assert PROFILE is not None


def price_text(service: ItemSpec) -> str:
    """The price as the catalog tools give it (every tier)."""
    return ", ".join(service.price_texts("en", "en"))


@pytest.fixture
def demo() -> ModelClient:
    return ModelGateway({"chat": "script:demo"}).client("chat")


@pytest.fixture
async def printshop(db: Database, tmp_path) -> AgentPack:
    """The print shop as the agent sees it: its router (with the demo catalog's words) and its
    fail-closed tool catalog, on a store holding the demo business."""
    await seed_demo(db, SystemClock(), LocalMediaStore(tmp_path / "media"))
    return agent_packs(Settings(), db, SystemClock())["catalog"]


async def ask(demo: ModelClient, printshop: AgentPack, text: str) -> GenerationResult:
    """One turn as the agent runs it, without the turn assembler: the router picks the tools the
    turn is offered, and the verification gate checks the reply."""
    assert printshop.for_tenant is not None
    router = (await printshop.for_tenant(DEMO_TENANT, None)).router
    bundle = printshop.catalog.bundle(router.route(text, RouterState()))
    return await run_generation(demo, user(text), bundle, CONTEXT, state=WorkingState(now=datetime.now(UTC)))


def called(result: GenerationResult) -> list[tuple[str, dict[str, Any], bool]]:
    return [(c["name"], json.loads(c["args"]), c["ok"]) for c in result.tool_calls]


def test_demo_script_is_the_offline_demo() -> None:
    script = read_script("demo")

    assert script.name == "offline-demo"
    assert script.default


async def test_demo_greeting_says_it_is_a_scripted_print_shop_and_what_to_try(demo: ModelClient) -> None:
    result = await run_generation(demo, user("hi"), [], CONTEXT)

    assert result.outcome == Outcome.REPLIED
    first, *rest = texts(result)
    assert first == GREETING
    reply = " ".join(rest)
    assert "Demo Print Shop" in reply
    for suggestion in ("How much are business cards?", "Show me photos of flyers", "opening hours", "[your phone]"):
        assert suggestion in reply
    assert "FRONTDESK_MODEL_CHAT" in reply


@pytest.mark.parametrize("greeting", ["Hello there", "Hola!", "buenos días", "xin chào", "Xin chao"])
async def test_demo_answers_greetings_in_three_languages(
    demo: ModelClient, printshop: AgentPack, greeting: str
) -> None:
    result = await ask(demo, printshop, greeting)

    assert result.outcome == Outcome.REPLIED
    assert result.tool_calls == []
    assert "Demo Print Shop" in " ".join(texts(result))
    assert "FRONTDESK_MODEL_CHAT" in " ".join(texts(result))


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda service: service.id)
async def test_demo_quotes_every_service_as_the_catalog_prices_it(
    demo: ModelClient, printshop: AgentPack, service: ItemSpec
) -> None:
    result = await ask(demo, printshop, f"how much are {service.name['en'].lower()}?")

    assert result.outcome == Outcome.REPLIED, result.detail
    assert called(result) == [("get_service_detail", {"service_id": service.id}, True)]
    assert result.claims == [{"type": "service_presented", "service_id": service.id}]
    reply = " ".join(texts(result))
    if service.priced:
        assert price_text(service) in reply
    else:
        assert "no fixed price" in reply
        assert money_amounts(reply) == []


@pytest.mark.parametrize(
    ("question", "service_id"),
    [
        ("¿Cuánto cuestan las tarjetas de presentación?", "business-cards"),
        ("precio de volantes", "flyers"),
        ("¿Cuánto cuesta una lona?", "vinyl-banners"),
        ("¿cuánto cuestan los pósters?", "posters"),
        ("Danh thiếp giá bao nhiêu?", "business-cards"),
        ("tờ rơi giá bao nhiêu", "flyers"),
        ("băng rôn giá bao nhiêu?", "vinyl-banners"),
        ("poster giá bao nhiêu", "posters"),
    ],
)
async def test_demo_quotes_the_catalog_amounts_in_spanish_and_vietnamese(
    demo: ModelClient, printshop: AgentPack, question: str, service_id: str
) -> None:
    result = await ask(demo, printshop, question)

    assert result.outcome == Outcome.REPLIED, result.detail
    assert called(result) == [("get_service_detail", {"service_id": service_id}, True)]
    quoted = {value for _, value in money_amounts(" ".join(texts(result)))}
    assert quoted == {value for _, value in money_amounts(price_text(SERVICES[service_id]))}


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda service: service.id)
async def test_demo_shows_the_photos_the_tool_returned_for_every_service(
    demo: ModelClient, printshop: AgentPack, service: ItemSpec
) -> None:
    result = await ask(demo, printshop, f"show me photos of {service.name['en'].lower()}")

    assert result.outcome == Outcome.REPLIED, result.detail
    assert called(result) == [("get_service_photos", {"service_id": service.id}, True)]
    (group,) = [block for block in result.blocks if isinstance(block, ImageGroupBlock)]
    shown = service.photos[:3]
    public = "http://127.0.0.1:8000"  # Settings() serves here
    assert [str(url) for url in group.urls] == [demo_photo_url(photo.id, public) for photo in shown]
    assert result.claims == [
        {"type": "images_shown", "photo_ids": [photo.id for photo in shown]},
        {"type": "service_presented", "service_id": service.id},
    ]


async def test_demo_lists_every_service_by_name_and_no_price(demo: ModelClient, printshop: AgentPack) -> None:
    result = await ask(demo, printshop, "what do you print?")

    assert result.outcome == Outcome.REPLIED, result.detail
    assert called(result) == [("search_services", {"query": ""}, True)]
    reply = " ".join(texts(result)).lower()
    assert all(service.name["en"].lower() in reply for service in SERVICES.values())
    assert money_amounts(reply) == []
    assert sorted(claim["service_id"] for claim in result.claims) == sorted(SERVICES)


@pytest.mark.parametrize(
    "question",
    [
        "what are your opening hours?",
        "When do you open?",
        "where are you located?",
        "¿Cuál es su horario?",
        "Cửa hàng mở cửa mấy giờ?",
    ],
)
async def test_demo_states_the_hours_and_address_the_business_info_gives(
    demo: ModelClient, printshop: AgentPack, question: str
) -> None:
    result = await ask(demo, printshop, question)

    assert result.outcome == Outcome.REPLIED, result.detail
    assert called(result) == [("get_business_info", {}, True)]
    assert result.claims == [{"type": "business_info_stated"}]
    reply = " ".join(texts(result))
    assert PROFILE.address in reply
    assert str(PROFILE.phone) in reply
    for day in weekly_lines(PROFILE, CONTEXT.customer_language):
        assert day in reply


async def test_demo_explains_the_request_format_when_the_service_is_missing(
    demo: ModelClient, printshop: AgentPack
) -> None:
    result = await ask(demo, printshop, "my name is Ana, 555 123 4567")

    assert result.outcome == Outcome.REPLIED
    assert result.tool_calls == []
    assert "your name, a phone number and the service in one message" in " ".join(texts(result))


@pytest.mark.parametrize("question", ["How much is a haircut?", "¿Cuánto cuesta?", "can I get 500 cards for $30?"])
async def test_demo_never_states_a_price_no_tool_returned(
    demo: ModelClient, printshop: AgentPack, question: str
) -> None:
    result = await ask(demo, printshop, question)

    assert result.outcome == Outcome.REPLIED
    assert result.tool_calls == []
    assert money_amounts(" ".join(texts(result))) == []


async def test_demo_default_quotes_the_message_back_and_says_what_it_understands(demo: ModelClient) -> None:
    result = await run_generation(demo, user("Do you deliver to Lyon?"), [], CONTEXT)

    assert result.outcome == Outcome.REPLIED
    assert 'You wrote: "Do you deliver to Lyon?"' in texts(result)
    assert "how much are business cards?" in " ".join(texts(result))


async def test_demo_default_still_replies_to_a_message_too_long_to_quote(demo: ModelClient) -> None:
    result = await run_generation(demo, user("blah " * 600), [], CONTEXT)

    assert result.outcome == Outcome.REPLIED
    assert "can't quote it back" in " ".join(texts(result))


# the demo through the real pipeline: ingestion, the turn assembler, the agent, the store


@asynccontextmanager
async def demo_runtime(db: Database) -> AsyncIterator[tuple[Runtime, DemoAccounts]]:
    runtime, accounts = await make_runtime(db, ModelGateway({"chat": "script:demo"}).client("chat"))
    runtime.runner.start()
    try:
        yield runtime, accounts
    finally:
        await runtime.runner.stop()


async def chat(db: Database, runtime: Runtime, account: str, *texts: str) -> None:
    """Send each message as its own turn, as a customer who waits for the reply."""
    for text in texts:
        await runtime.ingestor.ingest(message(account, text))
        await wait_idle(db)


async def test_demo_pipeline_quotes_the_catalog_price(db: Database) -> None:
    async with demo_runtime(db) as (runtime, accounts):
        await chat(db, runtime, accounts.webchat_id, "how much are business cards?")

    (text,) = await reply_texts(db)
    assert "$45 / 250 cards, $70 / 500 cards" in text
    assert price_text(SERVICES["business-cards"]) in text
    (trace,) = await traces(db)
    assert trace.outcome == "replied"
    assert [(call["name"], call["ok"]) for call in trace.tool_calls] == [("get_service_detail", True)]
    assert trace.claims == [{"type": "service_presented", "service_id": "business-cards"}]


async def test_demo_pipeline_states_the_opening_hours(db: Database) -> None:
    async with demo_runtime(db) as (runtime, accounts):
        await chat(db, runtime, accounts.webchat_id, "what are your opening hours?")

    (text,) = await reply_texts(db)
    assert "Monday to Friday: 9 AM to 6 PM" in text  # as an English reader writes them, equal days together
    assert "Sunday: closed" in text
    assert PROFILE.address in text
    (trace,) = await traces(db)
    assert trace.outcome == "replied"
    assert [(call["name"], call["ok"]) for call in trace.tool_calls] == [("get_business_info", True)]


async def test_demo_pipeline_sends_photos_the_app_serves(db: Database) -> None:
    async with demo_runtime(db) as (runtime, accounts):
        await chat(db, runtime, accounts.webchat_id, "show me photos of flyers")
        (answer,) = await replies(db)
        (group,) = [block for block in blocks_adapter.validate_json(answer.content) if block.type == "image_group"]
        urls = [str(url) for url in group.urls]
        public = "http://127.0.0.1:8000"
        assert urls == [demo_photo_url(photo.id, public) for photo in SERVICES["flyers"].photos]
        app = create_app(runtime, run_workers=False)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test") as client:
            for url in urls:
                response = await client.get(urlsplit(url).path)
                assert response.status_code == 200
                assert response.headers["content-type"] == "image/png"

    (trace,) = await traces(db)
    assert trace.outcome == "replied"
    assert trace.claims[0] == {"type": "images_shown", "photo_ids": ["flyers-1", "flyers-2"]}


async def test_demo_pipeline_saves_a_request_as_an_open_follow_up(db: Database) -> None:
    async with demo_runtime(db) as (runtime, accounts):
        await chat(
            db, runtime, accounts.webchat_id, "how much are flyers?", "I'm Ana, 555 123 4567, I'd like 500 flyers"
        )

    quote, confirmation = await reply_texts(db)
    assert price_text(SERVICES["flyers"]) in quote
    assert [trace.outcome for trace in await traces(db)] == ["replied", "replied"]
    async with db.transaction() as session:
        (task,) = await session.scalars(select(Task))
        contact = await session.scalar(select(Contact))
    assert (task.kind, task.status) == ("follow_up", "open")
    assert task.details["service_id"] == "flyers"
    assert task.details["quantity"] == 500
    assert (task.details["customer_name"], task.details["phone"]) == ("Ana", "555 123 4567")
    assert contact is not None
    assert (contact.name, contact.phone) == ("Ana", "555 123 4567")
    assert await count(db, Notification, Notification.kind == "lead") == 1
    assert "Thank you, Ana!" in confirmation
    assert task.id in confirmation


async def test_demo_pipeline_hands_the_conversation_to_a_person(db: Database) -> None:
    async with demo_runtime(db) as (runtime, accounts):
        await chat(db, runtime, accounts.webchat_id, "can I talk to a person?")

    (text,) = await reply_texts(db)
    assert "a person from the Demo Print Shop team" in text
    (trace,) = await traces(db)
    assert trace.outcome == "replied"
    assert trace.claims == [{"type": "handoff_triggered"}]
    async with db.transaction() as session:
        (task,) = await session.scalars(select(Task))
        conversation = await session.scalar(select(Conversation))
    assert (task.kind, task.status, task.priority) == ("handoff", "open", "high")
    assert conversation is not None
    assert conversation.ai_enabled is False


async def test_demo_pipeline_saves_a_second_request_as_its_own_follow_up(db: Database) -> None:
    async with demo_runtime(db) as (runtime, accounts):
        await chat(
            db,
            runtime,
            accounts.webchat_id,
            "I'm Ana, 555 123 4567, I'd like 500 flyers",
            "I'm Ana, 555 123 4567, I'd like 10 posters",
        )

    first, second = await traces(db)
    assert (first.outcome, second.outcome) == ("replied", "replied")
    assert [call["ok"] for call in second.tool_calls] == [True, True]
    assert await count(db, Task) == 2
    confirmed = [c["follow_up_id"] for t in (first, second) for c in t.claims if c["type"] == "lead_captured"]
    assert len(confirmed) == 2
    assert len(set(confirmed)) == 2  # each reply confirms its own request, not the earlier one


@pytest.mark.parametrize(
    "text",
    [
        "I'm a real estate agent, how much are business cards?",
        "staff party t-shirts, how much?",
        "can I talk to a manager?",
        "quiero hablar con un asesor",
        "cho tôi gặp nhân viên",
        "my order arrived damaged",
    ],
)
async def test_demo_hand_off_rules_follow_the_router(demo: ModelClient, printshop: AgentPack, text: str) -> None:
    """The demo's hand-off rules use the router's own lexicon: a rule that called refer_to_human on
    a message the router does not send to a person would be refused and end in the fallback.
    (Without a store the hand-off itself cannot run here; the pipeline tests above run it.)"""
    result = await ask(demo, printshop, text)

    refused = [c["name"] for c in result.tool_calls if c.get("error") == "not offered this turn"]
    assert refused == []
    if not any(c["name"] == "refer_to_human" for c in result.tool_calls):
        assert result.outcome == Outcome.REPLIED, result.detail
