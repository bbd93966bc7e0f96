"""What gets indexed and what a search returns."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Document:
    """One searchable thing of a collection (a service of a catalog). ``title`` and ``keywords``
    weigh three times ``body`` in lexical ranking, and a title or keyword phrase found whole in a
    query ranks its document first ("vinyl banner" over "roll-up banner stand" for "banner")."""

    id: str
    title: str
    body: str
    keywords: tuple[str, ...] = ()

    @property
    def content_hash(self) -> str:
        """Changes exactly when what is indexed or embedded changes: a re-index skips the rest."""
        content = json.dumps([self.title, list(self.keywords), self.body], ensure_ascii=False)
        return hashlib.sha256(content.encode()).hexdigest()

    @property
    def embedding_text(self) -> str:
        return ". ".join(part for part in (self.title, ", ".join(self.keywords), self.body) if part)


@dataclass(frozen=True)
class SearchHit:
    """A found document. ``score`` is the combined rank in [0, 1]; ``lexical`` and ``vector`` are
    its normalised parts (``vector`` is None when no vector took part)."""

    doc_id: str
    score: float
    lexical: float
    vector: float | None = None


@dataclass(frozen=True)
class IndexReport:
    """What one ``sync`` did; ``embedded`` counts texts sent to the embeddings slot."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    embedded: int = 0
    embedding_calls: int = 0
