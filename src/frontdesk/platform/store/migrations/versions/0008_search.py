"""catalog search

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30

``search_documents`` (``capabilities.search``): the documents of each search collection with
their normalised words, content hash and optional vector. The lexical index depends on the
backend: on SQLite an FTS5 table with external content (``search_fts``) kept in sync by triggers;
on PostgreSQL a GIN index over a weighted ``tsvector`` ('simple' configuration).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import frontdesk.platform.store.schema

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

UTC_DATETIME = frontdesk.platform.store.schema.UTCDateTime(timezone=True)
AUTO_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
# A copy of schema_search.SEARCH_TSVECTOR as of this revision (a migration never changes later).
SEARCH_TSVECTOR = (
    "(setweight(to_tsvector('simple'::regconfig, terms_title), 'A') || "
    "setweight(to_tsvector('simple'::regconfig, terms_body), 'B'))"
)

# External content: FTS5 stores only its index and reads the words from search_documents. The
# update trigger fires only when the words change, not when a vector is stored.
SQLITE_FTS = [
    "CREATE VIRTUAL TABLE search_fts USING fts5("
    "terms_title, terms_body, content='search_documents', content_rowid='id', tokenize='unicode61')",
    "CREATE TRIGGER search_documents_fts_insert AFTER INSERT ON search_documents BEGIN "
    "INSERT INTO search_fts(rowid, terms_title, terms_body) VALUES (new.id, new.terms_title, new.terms_body); END",
    "CREATE TRIGGER search_documents_fts_delete AFTER DELETE ON search_documents BEGIN "
    "INSERT INTO search_fts(search_fts, rowid, terms_title, terms_body) "
    "VALUES ('delete', old.id, old.terms_title, old.terms_body); END",
    "CREATE TRIGGER search_documents_fts_update AFTER UPDATE OF terms_title, terms_body ON search_documents BEGIN "
    "INSERT INTO search_fts(search_fts, rowid, terms_title, terms_body) "
    "VALUES ('delete', old.id, old.terms_title, old.terms_body); "
    "INSERT INTO search_fts(rowid, terms_title, terms_body) VALUES (new.id, new.terms_title, new.terms_body); END",
]


def upgrade() -> None:
    op.create_table(
        "search_documents",
        sa.Column("id", AUTO_ID, autoincrement=True, nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("collection", sa.String(length=80), nullable=False),
        sa.Column("doc_id", sa.String(length=200), nullable=False),
        sa.Column("title", sa.String(length=300), nullable=False),
        sa.Column("keywords", sa.JSON(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("terms_title", sa.Text(), nullable=False),
        sa.Column("terms_body", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("embedding", sa.JSON(), nullable=True),
        sa.Column("embedding_model", sa.String(length=300), nullable=True),
        sa.Column("updated_at", UTC_DATETIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_search_documents")),
        sa.UniqueConstraint(
            "tenant_id", "collection", "doc_id", name=op.f("uq_search_documents_tenant_id_collection_doc_id")
        ),
    )
    if op.get_bind().dialect.name == "sqlite":
        for statement in SQLITE_FTS:
            op.execute(statement)
    else:
        op.create_index(
            "ix_search_documents_fts", "search_documents", [sa.text(SEARCH_TSVECTOR)], postgresql_using="gin"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER IF EXISTS search_documents_fts_{trigger}")
        op.execute("DROP TABLE IF EXISTS search_fts")
    else:
        op.drop_index("ix_search_documents_fts", table_name="search_documents")
    op.drop_table("search_documents")
