"""Hybrid ranking: lexical and vector similarity, each normalised to [0, 1], mixed by weight.

- lexical: the backend's score (bm25 / ts_rank) divided by the best one, plus 1 when a title or
  keyword phrase of the document appears whole in the query; divided again by the best.
- vector: cosine similarity, min-max normalised over every vector of the collection, so the
  closest document gets 1 and the farthest 0 whatever the model's typical cosine range.
- combined: ``(1 - w) * lexical + w * vector``. A document is a candidate when it matched
  lexically or its cosine reaches ``min_similarity``; candidates scoring 0 are dropped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from frontdesk.capabilities.search._lexical import LexicalMatch
from frontdesk.capabilities.search._text import contains_phrase, tokens
from frontdesk.capabilities.search.documents import SearchHit


def cosine(a: Sequence[float], b: Sequence[float]) -> float | None:
    """None for vectors that cannot be compared (another dimension, or all zeros)."""
    if len(a) != len(b) or not a:
        return None
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else None


def lexical_scores(matches: Sequence[LexicalMatch], query: str) -> dict[str, float]:
    if not matches:
        return {}
    best = max(m.score for m in matches) or 1.0
    query_tokens = tokens(query)
    raw: dict[str, float] = {}
    for match in matches:
        phrases = [tokens(p) for p in (match.title, *match.keywords)]
        whole = any(contains_phrase(query_tokens, phrase) for phrase in phrases)
        raw[match.doc_id] = max(match.score, 0.0) / best + (1.0 if whole else 0.0)
    top = max(raw.values()) or 1.0
    return {doc_id: score / top for doc_id, score in raw.items()}


def combine(
    lexical: Mapping[str, float],
    similarities: Mapping[str, float] | None,
    *,
    vector_weight: float,
    min_similarity: float,
    order: Mapping[str, int],
) -> list[SearchHit]:
    """Rank the candidates; ``similarities`` is None when no query vector took part (lexical
    only). Ties keep index order (``order``: doc id -> row id)."""
    if not similarities:
        hits = [SearchHit(doc_id, score, score) for doc_id, score in lexical.items()]
    else:
        low, high = min(similarities.values()), max(similarities.values())
        spread = high - low

        def normalised(similarity: float) -> float:
            return (similarity - low) / spread if spread > 0 else 1.0

        candidates = set(lexical) | {d for d, s in similarities.items() if s >= min_similarity}
        hits = []
        for doc_id in candidates:
            lex = lexical.get(doc_id, 0.0)
            vec = normalised(similarities[doc_id]) if doc_id in similarities else 0.0
            hits.append(SearchHit(doc_id, (1 - vector_weight) * lex + vector_weight * vec, lex, vec))
    hits = [h for h in hits if h.score > 0]
    return sorted(hits, key=lambda h: (-h.score, -h.lexical, order.get(h.doc_id, 0), h.doc_id))
