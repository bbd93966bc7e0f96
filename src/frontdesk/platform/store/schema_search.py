"""Tables of catalog search (``capabilities/search``), kept beside ``schema.py`` so its owner edits one file.

One row per searchable document of a collection (a pack's catalog). The lexical index is derived
from ``terms_title`` / ``terms_body`` (words already normalised by ``capabilities.search._text``):

- SQLite: the FTS5 table ``search_fts`` (external content = this table, kept in sync by triggers;
  both created by migration 0008, since FTS5 tables cannot be declared as SQLAlchemy tables).
- PostgreSQL: the GIN index ``ix_search_documents_fts`` over ``SEARCH_TSVECTOR`` ('simple'
  configuration: no English stemming of Spanish or Vietnamese words).

Vectors (when the ``embeddings`` slot is set) are JSON arrays, compared in process; the name of
the model that made them is stored with them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from frontdesk.platform.store.schema import AutoId, Base

# ``tenant_id`` of documents a pack ships to all of its tenants (the print shop's catalog). A
# tenant's own documents carry its id; a search sees both, never another tenant's.
SHARED_TENANT = ""

# The weighted document vector on PostgreSQL. Queries repeat this exact expression, so the GIN
# index serves them.
SEARCH_TSVECTOR = (
    "(setweight(to_tsvector('simple'::regconfig, terms_title), 'A') || "
    "setweight(to_tsvector('simple'::regconfig, terms_body), 'B'))"
)

# The SQLite FTS5 index and the shadow tables FTS5 keeps for it (schema comparisons skip them).
FTS_TABLE = "search_fts"
FTS_TABLES = frozenset({FTS_TABLE, *(f"{FTS_TABLE}_{s}" for s in ("config", "data", "docsize", "idx"))})


class SearchDocument(Base):
    """A document of a search collection, unique per ``(tenant_id, collection, doc_id)``: indexers
    on several instances upsert on that key, so racing start-ups leave exactly one row."""

    __tablename__ = "search_documents"
    __table_args__ = (
        UniqueConstraint("tenant_id", "collection", "doc_id", name="uq_search_documents_tenant_id_collection_doc_id"),
        Index("ix_search_documents_fts", text(SEARCH_TSVECTOR), postgresql_using="gin").ddl_if(dialect="postgresql"),
    )
    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(String(40))
    collection: Mapped[str] = mapped_column(String(80))
    doc_id: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(String(300))
    keywords: Mapped[list[Any]] = mapped_column(JSON)
    body: Mapped[str] = mapped_column(Text)
    terms_title: Mapped[str] = mapped_column(Text)  # title, keywords: normalised words, weighted high
    terms_body: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(String(64))
    embedding: Mapped[list[Any] | None] = mapped_column(JSON(none_as_null=True))  # SQL NULL, not JSON null
    embedding_model: Mapped[str | None] = mapped_column(String(300))
    updated_at: Mapped[datetime]
