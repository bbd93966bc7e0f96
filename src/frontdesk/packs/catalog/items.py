"""Finding a tenant's items by what a customer calls them: ranked search over names, synonyms
and summaries (in memory, or through the database index with vectors when configured), and the
one item a reference names unambiguously."""

from __future__ import annotations

from collections.abc import Sequence

from frontdesk.business import BusinessData, CatalogItem
from frontdesk.capabilities.search import Document, SearchIndex, fold, terms

COLLECTION = "catalog"  # the search index's collection of a tenant's items (tenant_id = the tenant)


def _terms(text: str) -> set[str]:
    return set(terms(text))


def _strong_terms(item: CatalogItem) -> set[str]:
    return _terms(" ".join([item.id, *item.words()]))


def _weak_terms(item: CatalogItem) -> set[str]:
    return _terms(" ".join([item.category, *item.summary.values()]))


def search(items: Sequence[CatalogItem], query: str, category: str | None = None, limit: int = 6) -> list[CatalogItem]:
    """Items ranked by overlap with the query (names and synonyms weigh most)."""
    pool = [i for i in items if category is None or i.category == category]
    wanted = _terms(query)
    if not wanted:
        return pool[:limit] if category else list(pool)
    scored: list[tuple[int, int, CatalogItem]] = []
    for index, item in enumerate(pool):
        phrase_hit = any(fold(w) in fold(query) for w in item.words())
        score = 3 * len(wanted & _strong_terms(item)) + len(wanted & _weak_terms(item)) + (5 if phrase_hit else 0)
        if score:
            scored.append((-score, index, item))
    return [i for _, _, i in sorted(scored, key=lambda s: (s[0], s[1]))[:limit]]


def find(items: Sequence[CatalogItem], reference: str) -> CatalogItem | None:
    """An item by id, by exact name, or by an unambiguous match on its names or synonyms. A word
    that only appears in a summary ("services") never picks an item."""
    wanted = reference.strip()
    for item in items:
        if item.id == wanted or any(fold(n) == fold(wanted) for n in item.name.values()):
            return item
    words = _terms(wanted)
    folded = fold(wanted)
    named = [
        i
        for i in search(items, wanted, limit=len(items))
        if words & _strong_terms(i) or any(fold(w) in folded for w in i.words())
    ]
    if len(named) == 1:
        return named[0]
    # Several named: one wins only if its phrase contains every other one ("retractable banner"
    # over "banner"); "flyers and posters" is ambiguous.
    phrase: dict[str, str] = {}
    for item in named:
        found = [fold(w) for w in item.words() if fold(w) in folded]
        if found:
            phrase[item.id] = max(found, key=len)
    for item in named:
        mine = phrase.get(item.id)
        if mine and all(other in mine for iid, other in phrase.items() if iid != item.id):
            return item
    return None


def documents(data: BusinessData) -> tuple[Document, ...]:
    """The active items as the search index sees them: names, synonyms and the id weigh most;
    the body is the category and summaries (not the long description, whose incidental words
    would make Envelopes match "invitation")."""
    default = data.default_language
    return tuple(
        Document(
            id=item.id,
            title=item.display_name(default, default),
            body=" ".join([item.category, *item.summary.values()]),
            keywords=(*item.words(), item.id),
        )
        for item in data.active_items
    )


async def search_indexed(
    index: SearchIndex, data: BusinessData, query: str, category: str | None, limit: int = 6
) -> list[CatalogItem]:
    """``search`` through the database index (and vectors, when the index has an embedder). The
    index follows the catalog: a changed item is re-indexed (and re-embedded) by the first search
    after the change, on whichever instance runs it. A query without a meaningful word lists
    the catalog, as ``search`` does."""
    items = data.active_items
    if not terms(query):
        return search(items, query, category, limit)
    await index.ensure(COLLECTION, documents(data), tenant_id=data.tenant_id)
    by_id = {i.id: i for i in items}
    hits = await index.search(COLLECTION, query, tenant_id=data.tenant_id)
    found = [by_id[hit.doc_id] for hit in hits if hit.doc_id in by_id]
    return [i for i in found if category is None or i.category == category][:limit]
