"""The print shop's ``search_services`` tool on the database index: the same answers as the
in-memory search it replaces (on SQLite and PostgreSQL), and paraphrases once embeddings are on."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from test_search_kit import FakeEmbeddings, serve_fake_embeddings

from frontdesk.capabilities.search import SearchIndex, build_search_index
from frontdesk.capabilities.tools import Tool, ToolContext, ToolResult
from frontdesk.errors import ConfigError
from frontdesk.packs import PackDeps
from frontdesk.packs.printshop import PACK
from frontdesk.packs.printshop.catalog import COLLECTION, SEARCH_DOCUMENTS, catalog, documents, search
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.models.embeddings import Embedder, build_embedder
from frontdesk.platform.store.engine import Database
from frontdesk.settings import Settings

CARDS_PRICE = "$45 per 250 cards, $70 per 500 cards"
CTX = ToolContext(tenant_id="tn_demo", conversation_id="conv_1")


@pytest.fixture
def fake_embeddings() -> Iterator[FakeEmbeddings]:
    with serve_fake_embeddings() as fake:
        yield fake


def tools(db: Database, embedder: Embedder | None = None) -> dict[str, Tool]:
    index = SearchIndex(db, SystemClock(), embedder)
    return {t.name: t for t in PACK.build_tools(PackDeps(db, SystemClock(), "http://x/media", search=index))}


async def call(tool: Tool, **args: Any) -> ToolResult:
    return await tool.handler(tool.input_model.model_validate(args), CTX)


# What the offline demo script sends as a query (the service words of a customer's message).
DEMO_QUERIES = [
    *("roll-up banners", "pull-up banners", "banner stands", "standees", "product boxes", "mailer boxes"),
    *("rsvp cards", "name cards", "mailers", "leaflets", "pamphlets", "vinyl banners", "outdoor banners"),
    *("banners", "decals", "letterheads", "custom t-shirts", "t-shirts", "tshirts", "tote bags", "totes"),
    *("canvas bags", "yard signs", "lawn signs", "coroplast signs", "stickers", "labels", "posters"),
]


def every_name_and_keyword() -> list[str]:
    return [q for s in catalog().services for q in (s.name, *s.keywords)] + DEMO_QUERIES


async def test_every_service_name_and_keyword_finds_what_the_in_memory_search_found(db):
    search_services = tools(db)["search_services"]

    for query in every_name_and_keyword():
        expected = [s.id for s in search(query)]
        found = [r["id"] for r in (await call(search_services, query=query)).output["results"]]
        assert found[:1] == expected[:1], query
        assert sorted(found) == sorted(expected), query


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
async def test_customers_find_business_cards_and_their_price_in_their_language(db, query):
    result = await call(tools(db)["search_services"], query=query)

    assert result.output["results"][0]["id"] == "business-cards"
    assert result.output["results"][0]["price"] == CARDS_PRICE
    assert CARDS_PRICE in result.evidence.prices


async def test_an_empty_query_lists_the_whole_catalog_in_its_order_and_a_category_narrows_it(db):
    search_services = tools(db)["search_services"]
    services = catalog().services

    everything = await call(search_services, query="")
    stationery = await call(search_services, query="cards", category="stationery")

    assert [r["id"] for r in everything.output["results"]] == [s.id for s in services]
    assert everything.evidence.prices == tuple(s.price_text for s in services if s.price_is_set)
    assert [r["id"] for r in stationery.output["results"]] == [s.id for s in search("cards", "stationery")]
    assert {r["id"] for r in stationery.output["results"]} <= {s.id for s in services if s.category == "stationery"}


async def test_the_first_search_indexes_the_catalog_when_start_up_did_not(db):
    result = await call(tools(db)["search_services"], query="wedding invitations")

    assert [r["id"] for r in result.output["results"]] == ["wedding-invitations"]
    assert (result.evidence.references, result.evidence.prices) == (frozenset({"wedding-invitations"}), ())


async def test_with_embeddings_a_paraphrase_finds_the_service_with_its_price_as_evidence(db, fake_embeddings):
    embedder = build_embedder(fake_embeddings.spec)
    await SearchIndex(db, SystemClock(), embedder).sync(COLLECTION, documents())  # start-up
    calls = len(fake_embeddings.calls)
    search_services = tools(db, embedder)["search_services"]

    result = await call(search_services, query="something to hand out with my phone number when I meet clients")

    assert result.output["results"][0]["id"] == "business-cards"
    assert CARDS_PRICE in result.evidence.prices
    # The catalog was already indexed: the tool's own sync embedded nothing, only the query.
    assert fake_embeddings.calls[calls:] == [["something to hand out with my phone number when I meet clients"]]


# -- start-up --------------------------------------------------------------------------------------


async def test_start_up_indexes_the_pack_catalog_with_the_configured_embeddings_slot(db, fake_embeddings):
    pack = replace(PACK, search_documents=SEARCH_DOCUMENTS)  # as printshop/__init__.py declares it
    index = build_search_index(Settings(model_embeddings=fake_embeddings.spec), db, SystemClock())

    first = await pack.sync_search(index)
    restart = await pack.sync_search(
        build_search_index(Settings(model_embeddings=fake_embeddings.spec), db, SystemClock())
    )

    assert len(first[COLLECTION].added) == first[COLLECTION].embedded == len(catalog().services)
    assert (restart[COLLECTION].unchanged, restart[COLLECTION].embedding_calls) == (len(catalog().services), 0)
    assert [h.doc_id for h in await index.search(COLLECTION, "we are getting married")][:1] == ["wedding-invitations"]


def test_without_an_embeddings_slot_the_index_is_lexical_and_a_bad_slot_fails_at_start_up(db):
    assert build_search_index(Settings(), db, SystemClock()).embedder is None
    with pytest.raises(ConfigError, match="embeddings come from"):
        build_search_index(Settings(model_embeddings="anthropic:claude-haiku-4-5"), db, SystemClock())
