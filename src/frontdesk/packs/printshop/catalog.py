"""The print shop's data, shipped in ``data/``: services, photos, business information."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from frontdesk.capabilities.search import Document, SearchIndex, fold, terms

DATA_DIR = Path(__file__).with_name("data")
PHOTOS_DIR = DATA_DIR / "photos"
COLLECTION = "printshop:catalog"  # the search index's name for the services below


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Photo(_Frozen):
    id: str
    file: str
    caption: str


class Service(_Frozen):
    id: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    name: str
    category: str
    summary: str
    description: str
    price_text: str
    price_is_set: bool
    turnaround_days: int = Field(ge=0)
    min_order_quantity: int = Field(ge=1)
    keywords: list[str]
    photos: list[Photo]


class Catalog(_Frozen):
    currency: str
    services: list[Service]


class Hours(_Frozen):
    days: str
    open: str | None
    close: str | None


class BusinessInfo(_Frozen):
    name: str
    description: str
    address: str
    phone: str
    email: str
    website: str
    timezone: str
    hours: list[Hours]
    notes: str


def _load(name: str) -> Any:
    return json.loads((DATA_DIR / name).read_text(encoding="utf-8"))


@cache
def catalog() -> Catalog:
    return Catalog.model_validate(_load("catalog.json"))


@cache
def business() -> BusinessInfo:
    return BusinessInfo.model_validate(_load("business.json"))


def _terms(text: str) -> set[str]:
    return set(terms(text))


def search(query: str, category: str | None = None, limit: int = 6) -> list[Service]:
    """Services ranked by overlap with the query (name and keywords weigh most)."""
    services = [s for s in catalog().services if category is None or s.category == category]
    wanted = _terms(query)
    if not wanted:
        return services[:limit] if category else services
    scored: list[tuple[int, int, Service]] = []
    for index, service in enumerate(services):
        strong = _strong_terms(service)
        weak = _terms(f"{service.category} {service.summary}")
        phrase_hit = any(fold(k) in fold(query) for k in service.keywords)
        score = 3 * len(wanted & strong) + len(wanted & weak) + (5 if phrase_hit else 0)
        if score:
            scored.append((-score, index, service))
    return [s for _, _, s in sorted(scored)[:limit]]


def _strong_terms(service: Service) -> set[str]:
    return _terms(" ".join([service.name, service.id, *service.keywords]))


def find(reference: str) -> Service | None:
    """A service by id, by exact name, or by an unambiguous match on its name or keywords. A word
    that only appears in a summary ("services") never picks a service."""
    wanted = reference.strip()
    for service in catalog().services:
        if service.id == wanted or fold(service.name) == fold(wanted):
            return service
    words = _terms(wanted)
    folded = fold(wanted)
    named = [
        s
        for s in search(wanted, limit=len(catalog().services))
        if words & _strong_terms(s) or any(fold(k) in folded for k in s.keywords)
    ]
    if len(named) == 1:
        return named[0]
    # Several named: one wins only if its phrase contains every other one ("retractable banner"
    # over "banner"); "flyers and posters" is ambiguous.
    phrase: dict[str, str] = {}
    for service in named:
        found = [fold(k) for k in [service.name, *service.keywords] if fold(k) in folded]
        if found:
            phrase[service.id] = max(found, key=len)
    for service in named:
        mine = phrase.get(service.id)
        if mine and all(other in mine for sid, other in phrase.items() if sid != service.id):
            return service
    return None


@cache
def documents() -> tuple[Document, ...]:
    """The services as the search index sees them: name and keywords (and the id) weigh most;
    the body is what the in-memory ranking reads too (category and summary, not the long
    description, whose incidental words would make Envelopes match "invitation")."""
    return tuple(
        Document(id=s.id, title=s.name, body=f"{s.category} {s.summary}", keywords=(*s.keywords, s.id))
        for s in catalog().services
    )


SEARCH_DOCUMENTS: dict[str, Callable[[], Sequence[Document]]] = {COLLECTION: documents}


async def search_indexed(
    index: SearchIndex, query: str, category: str | None, tenant_id: str, limit: int = 6
) -> list[Service]:
    """``search`` through the database index (and vectors, when the index has an embedder). A
    query without a meaningful word lists the catalog, as ``search`` does."""
    if not terms(query):
        return search(query, category, limit)
    await index.ensure(COLLECTION, documents())
    by_id = {s.id: s for s in catalog().services}
    found = [
        by_id[hit.doc_id] for hit in await index.search(COLLECTION, query, tenant_id=tenant_id) if hit.doc_id in by_id
    ]
    return [s for s in found if category is None or s.category == category][:limit]
