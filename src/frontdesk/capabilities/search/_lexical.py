"""Lexical matching in the database: SQLite FTS5 (bm25) or PostgreSQL full text (ts_rank).

Both receive the query's normalised words OR-ed together: a customer's sentence ("how much are
business cards?") must find documents that share only some of its words.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.platform.store.schema_search import FTS_TABLE, SEARCH_TSVECTOR, SHARED_TENANT

# Title and keywords weigh three times the body, on both backends.
_SQLITE = f"""
SELECT d.id, d.doc_id, d.tenant_id, d.title, d.keywords, -bm25({FTS_TABLE}, 3.0, 1.0) AS score
FROM {FTS_TABLE} JOIN search_documents AS d ON d.id = {FTS_TABLE}.rowid
WHERE {FTS_TABLE} MATCH :match AND d.collection = :collection AND d.tenant_id IN (:shared, :tenant)
"""
_POSTGRESQL = f"""
SELECT d.id, d.doc_id, d.tenant_id, d.title, d.keywords,
       ts_rank('{{0.1, 0.2, 0.333, 1.0}}'::float4[], {SEARCH_TSVECTOR}, q) AS score
FROM search_documents AS d, to_tsquery('simple'::regconfig, :match) AS q
WHERE {SEARCH_TSVECTOR} @@ q AND d.collection = :collection AND d.tenant_id IN (:shared, :tenant)
"""


@dataclass(frozen=True)
class LexicalMatch:
    row_id: int
    doc_id: str
    tenant_id: str
    title: str
    keywords: list[str]
    score: float  # higher is better


async def lexical_matches(
    session: AsyncSession, dialect: str, collection: str, tenant_id: str, words: list[str]
) -> list[LexicalMatch]:
    """Documents of the collection (shared ones and the tenant's) that contain any of ``words``.
    The words are ``[a-z0-9]+`` only (``_text.terms``), so they cannot inject query syntax."""
    if not words:
        return []
    unique = list(dict.fromkeys(words))
    if dialect == "sqlite":
        sql, match = _SQLITE, " OR ".join(f'"{w}"' for w in unique)
    else:
        sql, match = _POSTGRESQL, " | ".join(unique)
    params: dict[str, Any] = {"match": match, "collection": collection, "shared": SHARED_TENANT, "tenant": tenant_id}
    rows = (await session.execute(text(sql), params)).all()
    return [
        LexicalMatch(int(r.id), r.doc_id, r.tenant_id, r.title, _json_list(r.keywords), float(r.score)) for r in rows
    ]


def _json_list(value: Any) -> list[str]:
    """A JSON column read through ``text()`` arrives as a string on SQLite, parsed on PostgreSQL."""
    parsed = json.loads(value) if isinstance(value, str) else value
    return [str(v) for v in parsed or []]
