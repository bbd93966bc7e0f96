"""The operator console: server-rendered pages (Jinja2), htmx vendored as a static file, no JS
build. ``console_router(deps)`` serves every ``/console`` route, its static files included.

Wiring (``app.py``)::

    app.include_router(console_router(ConsoleDeps(runtime.db, runtime.clock, runtime.signals,
        runtime.deliverer, ConsoleConfig.from_settings(runtime.settings), runtime.agent_packs,
        vault=runtime.channel_deps.accounts.vault, settings=runtime.settings,
        media=runtime.channel_deps.media)))

(Without the last three, the configure pages find them on ``request.app.state.runtime``.)
"""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, Path
from fastapi.responses import RedirectResponse, Response

from frontdesk.errors import NotFoundError
from frontdesk.humans.console import (
    pages_admin,
    pages_auth,
    pages_business,
    pages_catalog,
    pages_catalog_edit,
    pages_credentials,
    pages_inbox,
    pages_notify,
    pages_reports,
    pages_scenarios,
    pages_threads,
)
from frontdesk.humans.console._deps import ConsoleConfig, ConsoleDeps, PolicySource

STATIC = {"htmx.min.js": "text/javascript", "console.js": "text/javascript", "console.css": "text/css"}

__all__ = ["ConsoleConfig", "ConsoleDeps", "PolicySource", "console_router"]


def console_router(deps: ConsoleDeps) -> APIRouter:
    router = APIRouter(tags=["console"], include_in_schema=False)

    @router.get("/console")
    async def home() -> Response:
        return RedirectResponse("/console/conversations", status_code=303)

    @router.get("/console/static/{name}")
    async def static(name: str = Path(max_length=40)) -> Response:
        # An allowlist, not a directory mount: nothing else in the package can be served.
        media_type = STATIC.get(name)
        if media_type is None:
            raise NotFoundError(f"no static file {name}")
        body = resources.files(__package__).joinpath("static", name).read_bytes()
        return Response(body, media_type=media_type, headers={"Cache-Control": "public, max-age=3600"})

    pages_auth.add_routes(router, deps)
    pages_inbox.add_routes(router, deps)
    pages_threads.add_routes(router, deps)
    pages_scenarios.add_routes(router, deps)
    pages_admin.add_routes(router, deps)
    pages_reports.add_routes(router, deps)
    pages_credentials.add_routes(router, deps)
    pages_notify.add_routes(router, deps)
    pages_business.add_routes(router, deps)
    pages_catalog.add_routes(router, deps)
    pages_catalog_edit.add_routes(router, deps)
    return router
