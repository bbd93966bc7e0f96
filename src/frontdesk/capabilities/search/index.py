"""The search index: documents of collections in the database, searched lexically and, when the
``embeddings`` slot is set, by vector similarity too (docs/search.md).

Indexing is idempotent by content hash: a re-index of an unchanged collection reads the hashes
and writes nothing, embeds nothing. Embedding calls are batched and never made inside a
transaction. Several instances may index at once: rows are upserted on their unique key.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.capabilities.search._lexical import lexical_matches
from frontdesk.capabilities.search._ranking import combine, cosine, lexical_scores
from frontdesk.capabilities.search._text import terms
from frontdesk.capabilities.search.documents import Document, IndexReport, SearchHit
from frontdesk.errors import ConfigError, ModelAPIError
from frontdesk.platform.clock import Clock
from frontdesk.platform.models.embeddings import Embedder, build_embedder
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema_search import SHARED_TENANT, SearchDocument
from frontdesk.settings import Settings

log = logging.getLogger(__name__)

EMBED_BATCH = 64  # texts per embeddings request (OpenAI accepts up to 2048)


class SearchIndex:
    """Indexes and searches collections. Without an ``embedder`` search is lexical only;
    ``vector_weight`` (0..1) is the share of vector similarity in the combined rank, and
    ``min_similarity`` the cosine a document needs to be found by its vector alone."""

    def __init__(
        self,
        db: Database,
        clock: Clock,
        embedder: Embedder | None = None,
        *,
        vector_weight: float = 0.5,
        min_similarity: float = 0.3,
        embed_batch: int = EMBED_BATCH,
    ) -> None:
        if not 0 <= vector_weight <= 1:
            raise ConfigError(f"search vector weight must be between 0 and 1, not {vector_weight}")
        self._db = db
        self._clock = clock
        self._embedder = embedder
        self._vector_weight = vector_weight
        self._min_similarity = min_similarity
        self._embed_batch = max(1, embed_batch)
        # (tenant, collection) -> fingerprint of the documents this process last synced there
        self._synced: dict[tuple[str, str], str] = {}

    @property
    def embedder(self) -> Embedder | None:
        return self._embedder

    # -- indexing

    async def ensure(
        self, collection: str, documents: Sequence[Document], *, tenant_id: str = SHARED_TENANT
    ) -> IndexReport | None:
        """``sync`` unless this process already synced these very documents (start-up normally
        has: then a search pays nothing). None when nothing had to be done."""
        if self._synced.get((tenant_id, collection)) == _fingerprint(documents):
            return None
        return await self.sync(collection, documents, tenant_id=tenant_id)

    async def sync(
        self, collection: str, documents: Iterable[Document], *, tenant_id: str = SHARED_TENANT
    ) -> IndexReport:
        """Make the stored collection equal to ``documents``: add new ones, update changed ones
        (re-embedding only those), remove the ones that are gone. ``tenant_id`` empty: documents
        every tenant sees (a pack's catalog)."""
        wanted = _by_id(documents)
        fingerprint = _fingerprint(list(wanted.values()))
        async with self._db.read() as session:
            stored = {
                row.doc_id: row
                for row in await session.execute(
                    select(
                        SearchDocument.doc_id,
                        SearchDocument.content_hash,
                        SearchDocument.embedding_model,
                        SearchDocument.embedding.is_not(None).label("has_vector"),
                    ).where(SearchDocument.tenant_id == tenant_id, SearchDocument.collection == collection)
                )
            }
        changed = [d for d in wanted.values() if d.id not in stored or stored[d.id].content_hash != d.content_hash]
        changed_ids = {d.id for d in changed}
        model = self._embedder.name if self._embedder else None
        stale_vectors = [  # unchanged text, but no vector of the configured model yet
            d
            for d in wanted.values()
            if model
            and d.id in stored
            and d.id not in changed_ids
            and (not stored[d.id].has_vector or stored[d.id].embedding_model != model)
        ]
        vectors, calls = await self._embed_documents([*changed, *stale_vectors])
        writes = [*changed, *(d for d in stale_vectors if d.id in vectors)]
        removed = sorted(set(stored) - set(wanted))
        if writes or removed:
            async with self._db.transaction() as session:
                for document in writes:
                    await self._upsert(session, tenant_id, collection, document, vectors.get(document.id))
                if removed:
                    await session.execute(
                        delete(SearchDocument).where(
                            SearchDocument.tenant_id == tenant_id,
                            SearchDocument.collection == collection,
                            SearchDocument.doc_id.in_(removed),
                        )
                    )
        # Vectors that failed are retried by the next start-up's sync, not by every search.
        self._synced[(tenant_id, collection)] = fingerprint
        return IndexReport(
            added=[d.id for d in changed if d.id not in stored],
            updated=[d.id for d in changed if d.id in stored],
            removed=removed,
            unchanged=len(wanted) - len(changed),
            embedded=len(vectors),
            embedding_calls=calls,
        )

    async def _embed_documents(self, documents: Sequence[Document]) -> tuple[dict[str, list[float]], int]:
        """Vectors by document id, in batches. A failing embeddings slot leaves the documents
        without vectors (lexical search still finds them; the next sync retries)."""
        if self._embedder is None or not documents:
            return {}, 0
        vectors: dict[str, list[float]] = {}
        calls = 0
        for start in range(0, len(documents), self._embed_batch):
            batch = documents[start : start + self._embed_batch]
            calls += 1
            try:
                embedded = await self._embedder.embed([d.embedding_text for d in batch], "document")
            except ModelAPIError as exc:
                log.warning(
                    "search: embedding %d documents failed (%s); they are indexed without vectors",
                    len(batch),
                    exc.message,
                )
                continue
            vectors.update({d.id: v for d, v in zip(batch, embedded, strict=True)})
        return vectors, calls

    async def _upsert(
        self, session: AsyncSession, tenant_id: str, collection: str, document: Document, vector: list[float] | None
    ) -> None:
        values: dict[str, Any] = {
            "tenant_id": tenant_id,
            "collection": collection,
            "doc_id": document.id,
            "title": document.title,
            "keywords": list(document.keywords),
            "body": document.body,
            "terms_title": " ".join(terms(" ".join([document.title, *document.keywords]))),
            "terms_body": " ".join(terms(document.body)),
            "content_hash": document.content_hash,
            "embedding": vector,
            "embedding_model": self._embedder.name if self._embedder and vector is not None else None,
            "updated_at": self._clock.now(),
        }
        insert = sqlite_insert if self._db.dialect == "sqlite" else pg_insert
        statement = insert(SearchDocument).values(**values)
        key = ("tenant_id", "collection", "doc_id")
        update = {k: getattr(statement.excluded, k) for k in values if k not in key}
        await session.execute(statement.on_conflict_do_update(index_elements=list(key), set_=update))

    # -- searching

    async def search(self, collection: str, query: str, *, tenant_id: str = SHARED_TENANT) -> list[SearchHit]:
        """Documents of ``collection`` (shared ones and ``tenant_id``'s own, never another
        tenant's) ranked for ``query``, best first. A query without a meaningful word finds nothing."""
        words = terms(query)
        if not words:
            return []
        query_vector = await self._embed_query(query)
        async with self._db.read() as session:
            matches = await lexical_matches(session, self._db.dialect, collection, tenant_id, words)
            vectors = await self._vectors(session, collection, tenant_id) if query_vector is not None else []
        # A tenant's own document shadows a shared one with the same id.
        matches.sort(key=lambda m: m.tenant_id != SHARED_TENANT)
        order = {m.doc_id: m.row_id for m in matches}
        lexical = lexical_scores(list({m.doc_id: m for m in matches}.values()), query)
        similarities: dict[str, float] | None = None
        if query_vector is not None:
            similarities = {}
            for row_id, doc_id, vector in vectors:
                similarity = cosine(query_vector, vector)
                if similarity is not None:
                    similarities[doc_id] = similarity
                    order.setdefault(doc_id, row_id)
        return combine(
            lexical,
            similarities,
            vector_weight=self._vector_weight,
            min_similarity=self._min_similarity,
            order=order,
        )

    async def _embed_query(self, query: str) -> list[float] | None:
        if self._embedder is None or self._vector_weight == 0:
            return None
        try:
            (vector,) = await self._embedder.embed([query], "query")
        except ModelAPIError as exc:  # the slot is down: answer from the lexical index alone
            log.warning("search: embedding the query failed (%s); lexical results only", exc.message)
            return None
        return vector

    async def _vectors(
        self, session: AsyncSession, collection: str, tenant_id: str
    ) -> list[tuple[int, str, list[float]]]:
        assert self._embedder is not None
        rows = await session.execute(
            select(SearchDocument.id, SearchDocument.doc_id, SearchDocument.embedding)
            .where(
                SearchDocument.collection == collection,
                SearchDocument.tenant_id.in_([SHARED_TENANT, tenant_id]),
                SearchDocument.embedding_model == self._embedder.name,
            )
            .order_by(SearchDocument.tenant_id)  # shared ('') first: a tenant's own vector wins
        )
        return [(row.id, row.doc_id, [float(x) for x in row.embedding]) for row in rows if row.embedding]


def build_search_index(settings: Settings, db: Database, clock: Clock) -> SearchIndex:
    """The index as settings describe it: vectors only when ``model_embeddings`` is set (a bad
    slot string or a missing API key fails here, at start-up)."""
    embedder = (
        build_embedder(settings.model_embeddings, timeout_s=settings.model_timeout_s)
        if settings.model_embeddings
        else None
    )
    return SearchIndex(db, clock, embedder, vector_weight=settings.search_vector_weight)


def _fingerprint(documents: Sequence[Document]) -> str:
    return hashlib.sha256("\n".join(f"{d.id} {d.content_hash}" for d in documents).encode()).hexdigest()


def _by_id(documents: Iterable[Document]) -> dict[str, Document]:
    by_id: dict[str, Document] = {}
    for document in documents:
        if document.id in by_id:
            raise ConfigError(f"search: two documents with the id {document.id!r}")
        by_id[document.id] = document
    return by_id
