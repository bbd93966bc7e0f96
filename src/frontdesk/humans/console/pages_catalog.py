"""The tenant's catalog, in order, with a search box; for owners the list's own changes (turn an
item on or off, move it up or down; item and photo edits are in ``pages_catalog_edit``). And the
model slots, read-only (each shown as ``provider:model``, never with the credentials a URL may
carry)."""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Literal
from urllib.parse import urlsplit, urlunsplit

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict

from frontdesk.business import CatalogItem
from frontdesk.business.catalog import SLUG_PATTERN
from frontdesk.errors import NotFoundError
from frontdesk.humans.console._configure import settings_of
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._forms import MoveForm, actor_of, business_store, moved
from frontdesk.humans.console._guard import actor, redirect, viewer
from frontdesk.humans.console._render import page, parse_form

SLOTS = ("chat", "utility", "embeddings", "transcription")
CATALOG_PHOTOS_PATH = "/media/catalog"  # where ``app.py`` serves tenants' gallery photos
ItemPath = Annotated[str, PathParam(pattern=SLUG_PATTERN, max_length=60)]


class ActiveForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    active: Literal["true", "false"]


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    @router.get("/console/catalog", response_class=HTMLResponse)
    async def catalog_page(request: Request, q: Annotated[str, Query(max_length=100)] = "") -> Response:
        me = await viewer(deps, request)
        data = await business_store(deps, request).read(me.tenant_id)
        query = q.strip()
        return page(
            "catalog.html",
            me,
            data=data,
            items=[item for item in data.items if matches(item, query)],
            q=query,
            default=data.default_language,
            photos_url=f"{CATALOG_PHOTOS_PATH}/{data.tenant_id}",
        )

    @router.post("/console/catalog/{item_id}/active")
    async def item_active(request: Request, item_id: ItemPath) -> Response:
        me = await actor(deps, request, owner=True)
        form = await parse_form(request, ActiveForm)
        try:
            await business_store(deps, request).set_active(me.tenant_id, item_id, form.active == "true", actor_of(me))
        except NotFoundError:  # never echo the id: it may be another tenant's
            raise NotFoundError("no such item") from None
        raise redirect(f"/console/catalog#item-{item_id}")

    @router.post("/console/catalog/{item_id}/move")
    async def item_move(request: Request, item_id: ItemPath) -> Response:
        me = await actor(deps, request, owner=True)
        form = await parse_form(request, MoveForm)
        store = business_store(deps, request)
        data = await store.read(me.tenant_id)
        if data.item(item_id) is None:
            raise NotFoundError("no such item")
        order = moved([item.id for item in data.items], item_id, form.direction)
        if order is not None:
            await store.reorder_items(me.tenant_id, order, actor_of(me))
        raise redirect(f"/console/catalog#item-{item_id}")

    @router.get("/console/models", response_class=HTMLResponse)
    async def models_page(request: Request) -> Response:
        me = await viewer(deps, request)
        settings = settings_of(deps, request)
        slots = [(slot, masked_slot(getattr(settings, f"model_{slot}", None)) if settings else "") for slot in SLOTS]
        return page("models.html", me, slots=slots, known=settings is not None)


def folded(text: str) -> str:
    """Text as the search compares it: case-folded, without accents (``Tờ rơi`` as ``to roi``)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold().replace("đ", "d"))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def matches(item: CatalogItem, query: str) -> bool:
    """Every word of ``query`` is in the item's id, category, names or synonyms."""
    words = folded(query).split()
    haystack = folded(" ".join([item.id, item.category, *item.words()]))
    return all(word in haystack for word in words)


_USERINFO = re.compile(r"^[^@/]*@")


def masked_slot(value: str | None) -> str:
    """A model string as it may be shown: ``provider:model``; an ``openai-compatible:`` URL keeps
    scheme, host, port and path, never its user info, query or fragment credentials."""
    if not value:
        return ""
    provider, sep, rest = value.partition(":")
    if provider != "openai-compatible":
        return value if "@" not in rest else f"{provider}{sep}{_USERINFO.sub('***@', rest)}"
    url, hash_sep, model = rest.partition("#")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return f"{provider}:***{hash_sep}{model}"
    userinfo = "***@" if "@" in parts.netloc else ""
    shown = urlunsplit((parts.scheme, f"{userinfo}{host}{port}", parts.path, "***" if parts.query else "", ""))
    return f"{provider}:{shown}{hash_sep}{model}"
