"""The HTTP application: routes from the channel registry, errors mapped in one place.

``create_app`` is the public app. ``create_metrics_app`` is the metrics listener's: ``/metrics``
only, on a port of its own (``frontdesk serve`` runs it beside the public one); the public app
serves ``/metrics`` only to a bearer of ``metrics_token``.
"""

from __future__ import annotations

import asyncio
import gc
import hmac
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from frontdesk import __version__
from frontdesk.business import BusinessStore
from frontdesk.errors import (
    AuthError,
    ConflictError,
    ForbiddenError,
    FrontdeskError,
    NotFoundError,
    PayloadError,
    TooLargeError,
)
from frontdesk.evals.trial import trial
from frontdesk.http_errors import error_body
from frontdesk.humans.console import ConsoleConfig, ConsoleDeps, console_router
from frontdesk.ingestion.channels import CHANNELS
from frontdesk.platform import tokens
from frontdesk.platform.media import stored_key
from frontdesk.platform.media_types import MEDIA_HEADERS, NEUTRAL, attachment, content_type, inline
from frontdesk.platform.observability import Metrics, Observability, ObservabilityMiddleware, check_readiness
from frontdesk.platform.observability.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from frontdesk.platform.store.engine import UNAVAILABLE_ERRORS
from frontdesk.runtime import CATALOG_PHOTOS_PATH, Runtime

log = logging.getLogger(__name__)
# What a 503 asks a sender to wait: long enough for a failover or a restart to finish, short
# enough that a platform's redelivery (Telegram, Meta and LINE all retry a 5xx) comes soon.
UNAVAILABLE_RETRY_AFTER_S = 5
# ``<photo id>-<8 hex of its content hash>.<ext>``: the hash only makes a replaced photo a new URL.
_PHOTO_FILE = re.compile(r"(?P<id>[a-z0-9]+(?:-[a-z0-9]+)*)-[0-9a-f]{8}\.[a-z0-9]{1,5}")
MEDIA_PREFIX = "/media/"
OtherMetrics = Callable[[], Awaitable[list[bytes]]]  # the worker processes' expositions


def freeze_startup_heap() -> None:
    """Put what start-up loaded (modules, tokenizer tables, settings, the app) out of the garbage
    collector's sight: it lives as long as the process, and a full collection then walks only
    what requests made. Before, bench/console.py saw a pause of about 200 ms every ten requests or
    so (gone with the collector off, and with this)."""
    gc.collect()
    gc.freeze()


def create_app(
    runtime: Runtime,
    *,
    run_workers: bool = True,
    observability: Observability | None = None,
    other_metrics: OtherMetrics | None = None,
) -> FastAPI:
    """``observability``: metrics and spans of this app (default: from the runtime's settings).
    ``run_workers``: run the job runner in this process (false: ``serve``'s worker processes run
    it, and ``other_metrics`` brings their counters to ``/metrics``)."""
    observability = observability or Observability.from_settings(runtime.settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # Runs inside ObservabilityMiddleware: the workers started here record on this app's metrics.
        await asyncio.to_thread(tokens.warm)  # not inside the first turn, on the event loop
        await runtime.start(role="whole" if run_workers else "edge")
        freeze_startup_heap()
        if run_workers and runtime.settings.workers > 0:
            runtime.runner.start()
        try:
            yield
        finally:
            await runtime.runner.stop()
            await runtime.signals.close()  # the LISTEN connection, on PostgreSQL
            await observability.shutdown()  # after the workers: their last spans are exported too

    docs = runtime.settings.api_docs_enabled
    app = FastAPI(
        title="frontdesk",
        version=__version__,
        lifespan=lifespan,
        docs_url="/docs" if docs else None,
        redoc_url="/redoc" if docs else None,
        openapi_url="/openapi.json" if docs else None,
    )
    app.state.runtime = runtime
    app.state.observability = observability
    app.add_middleware(MediaHeadersMiddleware)
    app.add_middleware(ObservabilityMiddleware, observability=observability)
    for channel in CHANNELS.values():
        if channel.router is not None:
            app.include_router(channel.router(runtime.channel_deps))
    app.include_router(
        console_router(
            ConsoleDeps(
                runtime.db,
                runtime.clock,
                runtime.signals,
                runtime.deliverer,
                ConsoleConfig.from_settings(runtime.settings),
                runtime.agent_packs,  # the same dict: MCP packs joining at start are seen too
                vault=runtime.channel_deps.accounts.vault,
                settings=runtime.settings,
                media=runtime.channel_deps.media,
                compact_prompt=runtime.compact_prompt,
                scenario_trial=trial,
            )
        )
    )

    photos = BusinessStore(runtime.db, runtime.clock)

    @app.get(CATALOG_PHOTOS_PATH + "/{tenant_id}/{file}", tags=["media"], include_in_schema=False)
    async def catalog_photo(tenant_id: str, file: str) -> Response:
        """A tenant's gallery photo (the URLs its catalog tools return): ``<photo id>-<hash>.<ext>``.
        Public, as a business's product photos are; only a key a photo row names is ever served."""
        match = _PHOTO_FILE.fullmatch(file)
        try:
            if match is None:
                raise NotFoundError("no such photo")
            photo = await photos.photo(tenant_id, match["id"])
        except NotFoundError:  # the answer never echoes an id: it may be another tenant's
            raise NotFoundError("no such photo") from None
        data, _ = await runtime.channel_deps.media.get(photo.media_key)
        return media_response(data, match["id"], cache="public, max-age=86400")

    @app.get("/media/m/{key:path}", tags=["media"], include_in_schema=False)
    async def stored_media(key: str, exp: int = 0, sig: str = "") -> Response:
        """Re-hosted customer media (``<tenant>/<xx>/<hash>.<ext>``), only through a signed, unexpired URL."""
        store = runtime.channel_deps.media
        if not stored_key(key) or not store.verify(key, exp, sig):
            raise AuthError("this media link is invalid or has expired")
        data, _ = await store.get(key)
        return media_response(data, key.rpartition("/")[2].partition(".")[0], cache="private, max-age=300")

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process serves HTTP. Never touches the database."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"], responses={503: {"description": "not ready: `checks` says which check failed"}})
    async def readyz() -> JSONResponse:
        """Readiness: the database answers and the jobs table is reachable (503 says which not)."""
        readiness = await check_readiness(runtime.db)
        return JSONResponse(readiness.as_json(), status_code=200 if readiness.ready else 503)

    metrics, token = observability.metrics, runtime.settings.metrics_token
    if metrics is not None and token is not None:
        expected = token.encode()

        @app.get("/metrics", tags=["ops"], include_in_schema=False)
        async def prometheus_metrics(request: Request) -> Response:
            """The metrics listener's page, here only for ``Authorization: Bearer <metrics_token>``
            (its labels name tenants and models)."""
            scheme, _, given = request.headers.get("authorization", "").partition(" ")
            # Compared as bytes in constant time (compare_digest refuses a str with non-ASCII).
            if not (hmac.compare_digest(given.strip().encode(), expected) and scheme.lower() == "bearer"):
                raise AuthError("/metrics needs the metrics token")
            return await scrape(runtime, metrics, other_metrics)

    _install_error_handlers(app)
    return app


def create_metrics_app(runtime: Runtime, metrics: Metrics, *, others: OtherMetrics | None = None) -> Starlette:
    """The metrics listener: ``GET /metrics`` from the same registry as the public app's, and
    nothing else (no docs, no other route). ``others``: the worker processes' expositions, added in."""

    async def prometheus_metrics(_request: Request) -> Response:
        return await scrape(runtime, metrics, others)

    return Starlette(routes=[Route("/metrics", prometheus_metrics, methods=["GET"])])


async def scrape(runtime: Runtime, metrics: Metrics, others: OtherMetrics | None = None) -> Response:
    """Prometheus text format; the queue depth is read from the database first (bounded)."""
    await metrics.refresh_queue(runtime.db, now=runtime.clock.now())
    metrics.database.work = runtime.db.work
    return Response(metrics.render(await others() if others else ()), media_type=METRICS_CONTENT_TYPE)


def media_response(data: bytes, name: str, *, cache: str) -> Response:
    """A stored file as its bytes show it to be: an accepted image or audio type inline, anything
    else a download of ``application/octet-stream`` (``<name>.bin``). Never the type it was
    declared or stored under: a file an older release kept as ``.svg`` is judged here too."""
    mime = content_type(data)
    if inline(mime):
        return Response(data, media_type=mime, headers={"Cache-Control": cache})
    return Response(data, media_type=NEUTRAL, headers={"Cache-Control": cache, "Content-Disposition": attachment(name)})


class MediaHeadersMiddleware:
    """``X-Content-Type-Options: nosniff`` and the sandboxing CSP (``media_types.MEDIA_CSP``) on
    every response under ``/media/``: files, and the errors of those routes too."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope["path"]).startswith(MEDIA_PREFIX):
            await self._app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in MEDIA_HEADERS.items():
                    headers[name] = value
            await send(message)

        await self._app(scope, receive, send_with_headers)


def _status_for(exc: FrontdeskError) -> int:
    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, TooLargeError):
        return 413
    if isinstance(exc, PayloadError):
        return 400 if exc.malformed else 422
    if isinstance(exc, ForbiddenError):
        return 403
    if isinstance(exc, AuthError):
        return 401
    if isinstance(exc, NotFoundError):
        return 404
    return 500


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(FrontdeskError)
    async def frontdesk_error(_request: Request, exc: FrontdeskError) -> JSONResponse:
        status = _status_for(exc)
        if status == 500:
            log.error("internal error: %s", exc)
            return JSONResponse(error_body("internal", "internal error"), status_code=500)
        return JSONResponse(error_body(exc.code, exc.message, exc.details), status_code=status)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        details = [
            {
                "field": ".".join(str(p) for p in e.get("loc", ()) if p not in ("body", "query", "path")),
                "problem": e.get("msg"),
            }
            for e in exc.errors()
        ]
        message = "invalid request: " + "; ".join(f"{d['field']}: {d['problem']}" for d in details)
        return JSONResponse(error_body("payload_invalid", message, details), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code, headers=exc.headers)

    async def database_unavailable(_request: Request, exc: Exception) -> JSONResponse:
        # Type names only: a driver's message may quote the statement and its parameters.
        cause = type(getattr(exc, "orig", None) or exc.__cause__ or exc).__name__
        log.warning("database unavailable (%s: %s); answered 503", type(exc).__name__, cause)
        return JSONResponse(
            error_body("unavailable", "the service is briefly unavailable; try again shortly"),
            status_code=503,
            headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)},
        )

    for error in UNAVAILABLE_ERRORS:
        app.add_exception_handler(error, database_unavailable)

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return JSONResponse(error_body("internal", "internal error"), status_code=500)
