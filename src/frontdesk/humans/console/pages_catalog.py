"""Read-only views of the brain: the pack's catalog with its photos, and the model slots (each
shown as ``provider:model``, never with the credentials a URL may carry)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, ValidationError

from frontdesk.errors import NotFoundError
from frontdesk.humans.console._configure import media_dir_of, settings_of
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._guard import viewer
from frontdesk.humans.console._render import page
from frontdesk.platform.store.schema import Tenant

SLOTS = ("chat", "utility", "embeddings", "transcription")
MEDIA_PATH = "/media/packs"  # where ``app.py`` serves ``Pack.media_dir``


# -- catalog (pack data: ``<pack data>/catalog.json`` beside the ``photos`` media directory) ------


class _Loose(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class CatalogPhoto(_Loose):
    file: str
    caption: str = ""


class CatalogService(_Loose):
    id: str
    name: str
    category: str = ""
    summary: str = ""
    price_text: str = ""
    turnaround_days: int | None = None
    min_order_quantity: int | None = None
    photos: list[CatalogPhoto] = []


class CatalogView(_Loose):
    currency: str = ""
    services: list[CatalogService] = []


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    @router.get("/console/catalog", response_class=HTMLResponse)
    async def catalog_page(request: Request) -> Response:
        me = await viewer(deps, request)
        async with deps.db.read() as session:
            tenant = await session.get(Tenant, me.tenant_id)
        if tenant is None:
            raise NotFoundError("no such tenant")
        found = load_catalog(media_dir_of(deps, request, tenant.pack))
        return page(
            "catalog.html",
            me,
            pack=tenant.pack,
            catalog=found,
            media_url=f"{MEDIA_PATH}/{tenant.pack}",
        )

    @router.get("/console/models", response_class=HTMLResponse)
    async def models_page(request: Request) -> Response:
        me = await viewer(deps, request)
        settings = settings_of(deps, request)
        slots = [(slot, masked_slot(getattr(settings, f"model_{slot}", None)) if settings else "") for slot in SLOTS]
        return page("models.html", me, slots=slots, known=settings is not None)


def load_catalog(media_dir: Path | None) -> CatalogView | None:
    """A pack's catalog (``catalog.json`` in the data directory holding its media), or None when
    the pack has none (the loyalty pack: its data lives behind an MCP server)."""
    if media_dir is None:
        return None
    path = media_dir.parent / "catalog.json"
    if not path.is_file():
        return None
    try:
        return CatalogView.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError):
        return None


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
