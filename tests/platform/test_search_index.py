"""The search index on SQLite (FTS5) and PostgreSQL (full text): lexical ranking, hybrid ranking
with vectors from a loopback embeddings server, idempotent and concurrent indexing, tenants."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from sqlalchemy import func, select, text
from test_search_kit import FakeEmbeddings, serve_fake_embeddings

from frontdesk.capabilities.search import Document, SearchIndex
from frontdesk.demo import demo_documents as documents
from frontdesk.packs.catalog.items import COLLECTION
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.models.embeddings import Embedder, build_embedder
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema_search import SearchDocument

CLOCK = SystemClock()
# Paraphrases that share no indexed word with the service they mean.
PARAPHRASES = {
    "we are getting married and want to ask our guests to come": "wedding-invitations",
    "portable display for our exhibition booth": "retractable-banners",
    "something to hand out with my phone number when I meet clients": "business-cards",
}


@pytest.fixture
def fake_embeddings() -> Iterator[FakeEmbeddings]:
    with serve_fake_embeddings() as fake:
        yield fake


def index(db: Database, embedder: Embedder | None = None, **options: float) -> SearchIndex:
    return SearchIndex(db, CLOCK, embedder, **options)


async def ids(search: SearchIndex, query: str, tenant_id: str = "") -> list[str]:
    return [hit.doc_id for hit in await search.search(COLLECTION, query, tenant_id=tenant_id)]


async def stored_rows(db: Database) -> list[tuple[str, str, str]]:
    async with db.read() as session:
        rows = await session.execute(
            select(SearchDocument.tenant_id, SearchDocument.collection, SearchDocument.doc_id).order_by(
                SearchDocument.id
            )
        )
        return [tuple(row) for row in rows]


# -- lexical ---------------------------------------------------------------------------------------


async def test_lexical_search_finds_services_by_their_words_in_any_language_and_ranks_them(db):
    search = index(db)
    await search.sync(COLLECTION, documents())

    assert (await ids(search, "banner"))[:2] == ["vinyl-banners", "retractable-banners"]
    assert (await ids(search, "roll-up banner for a trade show"))[0] == "retractable-banners"
    assert (await ids(search, "¿Cuánto cuestan las tarjetas de presentación?"))[0] == "business-cards"
    assert (await ids(search, "Shop có in danh thiếp không?"))[0] == "business-cards"
    assert await ids(search, "wedding invitations") == ["wedding-invitations"]
    assert await ids(search, "do you sell pizza") == []
    assert await ids(search, "the and of") == []  # nothing meaningful to look for


async def test_hits_carry_normalised_scores_best_first(db):
    search = index(db)
    await search.sync(COLLECTION, documents())

    hits = await search.search(COLLECTION, "gloss flyers for events")

    assert (hits[0].doc_id, hits[0].score) == ("flyers", 1.0)
    assert all(0 < h.score <= 1 and h.vector is None for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(hits) > 1  # "events" is in other summaries too


async def test_the_shipped_catalog_is_searched_per_collection(db):
    search = index(db)
    await search.sync(COLLECTION, documents())
    await search.sync("other:catalog", [Document("pizza", "Pizza", "Wood-fired pizza", ("margherita",))])

    assert await ids(search, "pizza") == []
    assert [h.doc_id for h in await search.search("other:catalog", "pizza")] == ["pizza"]


# -- tenants ---------------------------------------------------------------------------------------


async def test_a_tenants_own_documents_are_invisible_to_other_tenants(db):
    search = index(db)
    await search.sync(COLLECTION, documents())
    await search.sync(COLLECTION, [Document("menu-cards", "Menu cards", "Laminated menus")], tenant_id="tn_a")

    assert (await ids(search, "laminated menu cards", tenant_id="tn_a"))[0] == "menu-cards"
    assert "menu-cards" not in await ids(search, "laminated menu cards", tenant_id="tn_b")
    assert "menu-cards" not in await ids(search, "laminated menu cards")  # nor in the shared catalog
    assert "business-cards" in await ids(search, "cards", tenant_id="tn_b")  # the shared one stays visible


async def test_a_tenants_document_shadows_the_shared_one_with_the_same_id(db):
    search = index(db)
    await search.sync(COLLECTION, documents())
    await search.sync(COLLECTION, [Document("flyers", "Flyers", "Recycled paper leaflets")], tenant_id="tn_a")

    assert await ids(search, "recycled leaflets", tenant_id="tn_a") == ["flyers"]
    assert await ids(search, "recycled", tenant_id="tn_b") == []


# -- indexing --------------------------------------------------------------------------------------


async def test_reindexing_an_unchanged_catalog_embeds_nothing_and_writes_nothing(db, fake_embeddings):
    first = await index(db, build_embedder(fake_embeddings.spec)).sync(COLLECTION, documents())
    before = await stored_rows(db)
    calls = len(fake_embeddings.calls)

    again = await index(db, build_embedder(fake_embeddings.spec)).sync(COLLECTION, documents())  # a restart

    assert len(first.added) == len(documents()) == first.embedded
    assert first.embedding_calls == calls == 1  # one batch
    assert (again.added, again.updated, again.removed, again.embedded) == ([], [], [], 0)
    assert again.unchanged == len(documents())
    assert len(fake_embeddings.calls) == calls
    assert await stored_rows(db) == before


async def test_only_changed_documents_are_re_embedded_in_batches_and_removed_ones_disappear(db, fake_embeddings):
    docs = documents()
    search = index(db, build_embedder(fake_embeddings.spec), embed_batch=5)
    await search.sync(COLLECTION, docs)
    assert [len(call) for call in fake_embeddings.calls] == [5] * (len(docs) // 5) + (
        [len(docs) % 5] if len(docs) % 5 else []
    )
    fake_embeddings.calls.clear()
    edited = Document(docs[0].id, docs[0].title, "Letterpress business cards on cotton paper", docs[0].keywords)

    report = await search.sync(COLLECTION, [edited, *docs[2:]])

    assert (report.updated, report.removed, report.added) == ([docs[0].id], [docs[1].id], [])
    assert fake_embeddings.calls == [[edited.embedding_text]]
    assert await ids(search, "letterpress") == [docs[0].id]
    assert await ids(search, "premium") == []  # the old summary's word left the lexical index too
    assert docs[1].id not in await ids(search, docs[1].title)


async def test_a_new_embeddings_model_re_embeds_vectors_of_unchanged_documents(db, fake_embeddings):
    await index(db).sync(COLLECTION, documents())  # first started without embeddings

    report = await index(db, build_embedder(fake_embeddings.spec)).sync(COLLECTION, documents())

    assert (report.updated, report.embedded) == ([], len(documents()))
    async with db.read() as session:
        models = set(await session.scalars(select(SearchDocument.embedding_model)))
    assert models == {fake_embeddings.spec}


async def test_two_instances_indexing_at_once_leave_one_row_per_document(database_url, fake_embeddings):
    first, second = Database.from_url(database_url), Database.from_url(database_url)  # two processes' pools
    try:
        if first.dialect == "postgresql":
            async with first.engine.begin() as conn:
                await conn.execute(text("TRUNCATE search_documents"))
        embedder = build_embedder(fake_embeddings.spec)
        reports = await asyncio.gather(
            *(index(db, embedder).sync(COLLECTION, documents()) for db in (first, second, first, second))
        )

        rows = await stored_rows(first)
        assert sorted(r[2] for r in rows) == sorted(d.id for d in documents())
        assert sum(len(r.added) for r in reports) >= len(documents())
        search = index(second, embedder)
        assert (await ids(search, "wedding invitations"))[0] == "wedding-invitations"
        if first.dialect == "sqlite":  # the FTS5 index holds one entry per row too
            async with first.read() as session:
                fts = await session.scalar(text("SELECT count(*) FROM search_fts"))
                docs = await session.scalar(select(func.count()).select_from(SearchDocument))
            assert fts == docs == len(documents())
    finally:
        await first.dispose()
        await second.dispose()


def test_a_collection_with_two_documents_of_the_same_id_is_refused():
    from frontdesk.errors import ConfigError

    search = SearchIndex(Database.from_url("sqlite+aiosqlite:///:memory:"), CLOCK)
    twice = [Document("a", "A", "first"), Document("a", "A", "second")]

    with pytest.raises(ConfigError, match="'a'"):
        asyncio.run(search.sync(COLLECTION, twice))


# -- hybrid ----------------------------------------------------------------------------------------


async def test_hybrid_search_finds_paraphrases_that_share_no_word_with_the_service(db, fake_embeddings):
    lexical = index(db)
    hybrid = index(db, build_embedder(fake_embeddings.spec))
    await hybrid.sync(COLLECTION, documents())

    for query, service in PARAPHRASES.items():
        assert service not in await ids(lexical, query), query  # no shared word: words alone miss it
        hits = await hybrid.search(COLLECTION, query)
        assert hits[0].doc_id == service, (query, hits[:3])
        assert (hits[0].lexical, hits[0].vector) == (0, 1.0)


async def test_hybrid_search_keeps_exact_word_matches_on_top(db, fake_embeddings):
    hybrid = index(db, build_embedder(fake_embeddings.spec))
    await hybrid.sync(COLLECTION, documents())

    assert (await ids(hybrid, "banner"))[:2] == ["vinyl-banners", "retractable-banners"]
    assert (await ids(hybrid, "tarjetas de presentación"))[0] == "business-cards"
    assert (await ids(hybrid, "wedding invitations"))[0] == "wedding-invitations"


async def test_vector_weight_zero_is_lexical_only_and_one_ranks_by_meaning(db, fake_embeddings):
    await index(db, build_embedder(fake_embeddings.spec)).sync(COLLECTION, documents())
    query = "portable display for our exhibition booth"

    calls = len(fake_embeddings.calls)
    assert await ids(index(db, build_embedder(fake_embeddings.spec), vector_weight=0.0), query) == []
    assert len(fake_embeddings.calls) == calls  # weight 0 never embeds the query
    by_meaning = await ids(index(db, build_embedder(fake_embeddings.spec), vector_weight=1.0), query)
    assert by_meaning[0] == "retractable-banners"


async def test_search_answers_from_words_alone_while_the_embeddings_slot_is_down(db, fake_embeddings, caplog):
    hybrid = index(db, build_embedder(fake_embeddings.spec))
    await hybrid.sync(COLLECTION, documents())
    fake_embeddings.fail_with = 503

    hits = await hybrid.search(COLLECTION, "vinyl banner")

    assert (hits[0].doc_id, hits[0].vector) == ("vinyl-banners", None)
    assert "lexical results only" in caplog.text


async def test_documents_indexed_while_the_slot_is_down_are_still_found_by_words(db, fake_embeddings):
    fake_embeddings.fail_with = 500
    report = await index(db, build_embedder(fake_embeddings.spec)).sync(COLLECTION, documents())
    fake_embeddings.fail_with = None

    assert (report.embedded, len(report.added)) == (0, len(documents()))
    assert (await ids(index(db, build_embedder(fake_embeddings.spec)), "flyers"))[0] == "flyers"
    retry = await index(db, build_embedder(fake_embeddings.spec)).sync(COLLECTION, documents())  # next start
    assert retry.embedded == len(documents())
