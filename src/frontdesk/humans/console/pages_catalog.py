"""Read-only views of the brain: the tenant's catalog with its photos, and the model slots (each
shown as ``provider:model``, never with the credentials a URL may carry)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from frontdesk.business import BusinessStore
from frontdesk.humans.console._configure import settings_of
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._guard import viewer
from frontdesk.humans.console._render import page

SLOTS = ("chat", "utility", "embeddings", "transcription")
CATALOG_PHOTOS_PATH = "/media/catalog"  # where ``app.py`` serves tenants' gallery photos


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    @router.get("/console/catalog", response_class=HTMLResponse)
    async def catalog_page(request: Request) -> Response:
        me = await viewer(deps, request)
        data = await BusinessStore(deps.db, deps.clock).read(me.tenant_id)
        default = data.default_language
        return page(
            "catalog.html",
            me,
            data=data,
            default=default,
            photos_url=f"{CATALOG_PHOTOS_PATH}/{data.tenant_id}",
        )

    @router.get("/console/models", response_class=HTMLResponse)
    async def models_page(request: Request) -> Response:
        me = await viewer(deps, request)
        settings = settings_of(deps, request)
        slots = [(slot, masked_slot(getattr(settings, f"model_{slot}", None)) if settings else "") for slot in SLOTS]
        return page("models.html", me, slots=slots, known=settings is not None)


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
