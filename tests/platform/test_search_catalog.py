"""The catalog pack's ``search_services`` on the database index, over a tenant's own catalog: the
same answers as the in-memory search (on SQLite and PostgreSQL), paraphrases once embeddings are
on, and an index that follows the owner's edits on the next search."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_search_kit import FakeEmbeddings, serve_fake_embeddings

from frontdesk.business import Actor, BusinessStore, ItemFields
from frontdesk.capabilities.search import SearchIndex, build_search_index
from frontdesk.capabilities.tools import Tool, ToolContext, ToolResult
from frontdesk.demo import DEMO_TENANT, demo_business_file, seed_demo
from frontdesk.errors import ConfigError
from frontdesk.packs import PackDeps
from frontdesk.packs.catalog import PACK
from frontdesk.packs.catalog.items import search
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.media import LocalMediaStore
from frontdesk.platform.models.embeddings import Embedder, build_embedder
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Tenant
from frontdesk.settings import Settings

CARDS_PRICES = ("$45 / 250 cards", "$70 / 500 cards")
CTX = ToolContext(tenant_id=DEMO_TENANT, conversation_id="conv_1")
SPECS = [loaded.spec for loaded in demo_business_file().items]


@pytest.fixture
def fake_embeddings() -> Iterator[FakeEmbeddings]:
    with serve_fake_embeddings() as fake:
        yield fake


@pytest.fixture
async def shop(db: Database, tmp_path: Path) -> Database:
    """A store holding the demo print shop's catalog."""
    await seed_demo(db, SystemClock(), LocalMediaStore(tmp_path / "media"))
    return db


def tools(db: Database, embedder: Embedder | None = None) -> dict[str, Tool]:
    index = SearchIndex(db, SystemClock(), embedder)
    return {t.name: t for t in PACK.build_tools(PackDeps(db, SystemClock(), "http://x/media", search=index))}


async def call(tool: Tool, ctx: ToolContext = CTX, **args: Any) -> ToolResult:
    return await tool.handler(tool.input_model.model_validate(args), ctx)


async def found(tool: Tool, query: str, ctx: ToolContext = CTX) -> list[str]:
    return [r["id"] for r in (await call(tool, ctx, query=query)).output["results"]]


# What the offline demo script sends as a query (the service words of a customer's message).
DEMO_QUERIES = [
    *("roll-up banners", "pull-up banners", "banner stands", "standees", "product boxes", "mailer boxes"),
    *("rsvp cards", "name cards", "mailers", "leaflets", "pamphlets", "vinyl banners", "outdoor banners"),
    *("banners", "decals", "letterheads", "custom t-shirts", "t-shirts", "tshirts", "tote bags", "totes"),
    *("canvas bags", "yard signs", "lawn signs", "coroplast signs", "stickers", "labels", "posters"),
]


async def test_every_item_name_and_synonym_finds_what_the_in_memory_search_found(shop):
    search_services = tools(shop)["search_services"]
    items = (await BusinessStore(shop, SystemClock()).read(DEMO_TENANT)).active_items

    for query in [*(w for s in SPECS for w in s.words()), *DEMO_QUERIES]:
        expected = [i.id for i in search(items, query)]
        ids = await found(search_services, query)
        assert ids[:1] == expected[:1], query
        assert sorted(ids) == sorted(expected), query


@pytest.mark.parametrize(
    "query",
    [
        "business cards",
        "tarjetas de presentación",
        "danh thiếp",
        "How much are business cards?",
        "¿Cuánto cuestan las tarjetas de presentación?",
        "Shop có in danh thiếp không, giá bao nhiêu?",
    ],
)
async def test_customers_find_business_cards_and_their_price_in_their_language(shop, query):
    result = await call(tools(shop)["search_services"], query=query)

    assert result.output["results"][0]["id"] == "business-cards"
    assert result.output["results"][0]["price"] == ", ".join(CARDS_PRICES)
    assert set(CARDS_PRICES) <= set(result.evidence.prices)


async def test_an_empty_query_lists_the_whole_catalog_in_its_order_and_a_category_narrows_it(shop):
    search_services = tools(shop)["search_services"]

    everything = await call(search_services, query="")
    stationery = await call(search_services, query="cards", category="stationery")

    assert [r["id"] for r in everything.output["results"]] == [s.id for s in SPECS]
    assert everything.evidence.prices == tuple(t for s in SPECS for t in s.price_texts("en", "en"))
    assert {r["id"] for r in stationery.output["results"]} <= {s.id for s in SPECS if s.category == "stationery"}
    assert stationery.output["results"]


async def test_the_first_search_indexes_the_tenants_catalog(shop):
    result = await call(tools(shop)["search_services"], query="wedding invitations")

    assert [r["id"] for r in result.output["results"]] == ["wedding-invitations"]
    assert (result.evidence.references, result.evidence.prices) == (frozenset({"wedding-invitations"}), ())


async def test_with_embeddings_a_paraphrase_finds_the_item_and_an_unchanged_catalog_is_not_re_embedded(
    shop, fake_embeddings
):
    embedder = build_embedder(fake_embeddings.spec)
    await call(tools(shop, embedder)["search_services"], query="business cards")  # indexes and embeds the catalog
    calls = len(fake_embeddings.calls)
    search_services = tools(shop, embedder)["search_services"]  # another process: nothing synced in it yet

    result = await call(search_services, query="something to hand out with my phone number when I meet clients")

    assert result.output["results"][0]["id"] == "business-cards"
    assert set(CARDS_PRICES) <= set(result.evidence.prices)
    # The catalog was already indexed: this search embedded only its own query.
    assert fake_embeddings.calls[calls:] == [["something to hand out with my phone number when I meet clients"]]


async def test_the_index_follows_an_edit_on_the_next_search_re_embedding_only_the_changed_item(shop, fake_embeddings):
    embedder = build_embedder(fake_embeddings.spec)
    search_services = tools(shop, embedder)["search_services"]
    assert await found(search_services, "lanyards") == []
    store = BusinessStore(shop, SystemClock())
    cards = next(s for s in SPECS if s.id == "business-cards")
    edited = ItemFields.model_validate(
        {**cards.model_dump(exclude={"photos"}), "synonyms": {**cards.synonyms, "en": ["lanyard badges"]}}
    )
    await store.save_item(DEMO_TENANT, edited, Actor(), create=False)
    calls = len(fake_embeddings.calls)

    assert (await found(search_services, "lanyards"))[:1] == ["business-cards"]
    embedded = [text for batch in fake_embeddings.calls[calls:] for text in batch]
    assert len(embedded) == 2  # the edited item's document, then the query
    assert "lanyard badges" in embedded[0]

    await store.set_active(DEMO_TENANT, "business-cards", False, Actor())
    assert "business-cards" not in await found(search_services, "business cards")


async def test_a_search_never_finds_another_tenants_items(shop, tmp_path):
    async with shop.transaction() as session:
        session.add(
            Tenant(
                id="rival", name="Rival", pack="catalog", policy={}, languages=["en"], created_at=SystemClock().now()
            )
        )
    await BusinessStore(shop, SystemClock()).save_item(
        "rival",
        ItemFields(id="menu-cards", name={"en": "Menu cards"}, price="on_request", synonyms={"en": ["business cards"]}),
        Actor(),
        create=True,
    )
    search_services = tools(shop)["search_services"]
    rival = ToolContext(tenant_id="rival", conversation_id="conv_2")

    assert await found(search_services, "business cards", rival) == ["menu-cards"]
    assert "menu-cards" not in await found(search_services, "business cards menu cards")


def test_without_an_embeddings_slot_the_index_is_lexical_and_a_bad_slot_fails_at_start_up(db):
    assert build_search_index(Settings(), db, SystemClock()).embedder is None
    with pytest.raises(ConfigError, match="embeddings come from"):
        build_search_index(Settings(model_embeddings="anthropic:claude-haiku-4-5"), db, SystemClock())
