"""Catalog search: a lexical index in the database (SQLite FTS5 / PostgreSQL full text), combined
with vector similarity when the ``embeddings`` slot is set. See docs/search.md."""

from frontdesk.capabilities.search._text import contains_phrase, stem, terms, tokens
from frontdesk.capabilities.search.documents import Document, IndexReport, SearchHit
from frontdesk.capabilities.search.index import SearchIndex, build_search_index
from frontdesk.platform.text import fold

__all__ = [
    "Document",
    "IndexReport",
    "SearchHit",
    "SearchIndex",
    "build_search_index",
    "contains_phrase",
    "fold",
    "stem",
    "terms",
    "tokens",
]
