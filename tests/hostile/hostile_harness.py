"""Our real app in-process, one per test module, driven synchronously by Hypothesis.

``HostileApp`` holds the app (one per module, not per example: building it costs more than a
thousand requests), an httpx2 client on an ASGI transport, and the event loop they live on.
``exchange`` sends one request and checks what every answer owes a hostile sender:

- never a 5xx;
- a 4xx carries the documented error body ``{"error": {"code", "message", "details"}}``;
- a 4xx stores nothing: the row count of every table is the same after it as before.

Nothing runs in the background (no job runner), so the row counts move only with our requests:
the snapshot taken after one request is the "before" of the next (one cheap query per case).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sqlite3
from collections.abc import Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx2
import pytest
from fastapi import FastAPI
from hostile_kit import SECRET, TALLY, report_at_the_end
from hypothesis import reject
from sqlalchemy import text

from conftest import BACKENDS, CANARY_MARK
from frontdesk.app import create_app
from frontdesk.cli_accounts import upsert_account
from frontdesk.ingestion.channels import CHANNELS
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Base
from frontdesk.runtime import Runtime
from harness import make_runtime, reply

ECHO = {"name": "hostile", "default": [reply("echo: {user_text}")]}


def error_shape_problem(response: httpx2.Response) -> str | None:
    """Why the body of an error response is not ``{"error": {"code", "message", "details"}}``."""
    try:
        body = response.json()
    except ValueError:
        return f"not JSON: {response.text[:200]!r}"
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or set(error) != {"code", "message", "details"}:
        return f"not the error shape: {str(body)[:300]}"
    if not isinstance(error["code"], str) or not error["code"] or not isinstance(error["message"], str):
        return f"code and message must be strings: {str(body)[:300]}"
    return None


def _carries_the_canary(url: str, request: dict[str, Any]) -> bool:
    content = request.get("content")
    sent = f"{url} {request.get('params')} {request.get('headers')} {request.get('json')}"
    return CANARY_MARK in sent or (isinstance(content, bytes) and CANARY_MARK.encode() in content)


class HostileApp:
    """One app, one client, one event loop; every method is synchronous (Hypothesis calls them)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, runtime: Runtime, app: FastAPI) -> None:
        self.loop = loop
        self.runtime = runtime
        self.app = app
        transport = httpx2.ASGITransport(app=app, raise_app_exceptions=False)  # a crash is a 500, as over the wire
        self.client = httpx2.AsyncClient(transport=transport, base_url="http://hostile.test")
        self._tables = [t.name for t in Base.metadata.sorted_tables]
        self._count_all = text("SELECT " + ", ".join(f"(SELECT count(*) FROM {name})" for name in self._tables))
        url = self.db.engine.url
        self._sqlite = (
            sqlite3.connect(f"file:{url.database}?mode=ro", uri=True) if url.get_backend_name() == "sqlite" else None
        )
        self._rows = self.row_counts()

    @property
    def db(self) -> Database:
        return self.runtime.db

    def run(self, coroutine: Any) -> Any:
        return self.loop.run_until_complete(coroutine)

    def row_counts(self) -> dict[str, int]:
        """Rows per table. On SQLite through a plain read-only connection in this thread: the
        async driver's thread hand-offs cost more than the count itself, once per example."""
        if self._sqlite is not None:
            row = self._sqlite.execute(str(self._count_all)).fetchone()
        else:
            row = self.run(self._count_async())
        return dict(zip(self._tables, (int(n) for n in row), strict=True))

    async def _count_async(self) -> tuple[int, ...]:
        async with self.db.read() as session:
            return tuple((await session.execute(self._count_all)).one())

    def exchange(
        self,
        label: str,
        method: str,
        url: str,
        *,
        may_store: Iterable[str] = (),
        stream: bool = False,
        form_page: bool = False,
        **request: Any,
    ) -> httpx2.Response:
        """Send one request and hold the answer to the rules above. ``may_store``: tables a
        refusal may legitimately write (a failed sign-in is recorded to throttle the next).
        ``stream``: a GET of an event stream, answered with its first bytes (see ``_stream_head``).
        ``form_page``: a console form that answers a refused value with itself, its errors shown
        (a 422 HTML page), instead of the error body."""
        if _carries_the_canary(url, request):
            # Hypothesis draws string literals from our own code, the suite's canary mark among
            # them; an error message quoting it back would trip the suite-wide leak watch.
            reject()
        TALLY[label] += 1
        if stream:
            target = httpx2.URL(url).copy_merge_params(request.get("params") or {})
            path, _, query = target.raw_path.decode("ascii").partition("?")
            status, headers, head = self.run(self._stream_head(path, query, dict(request.get("headers") or {})))
            response = httpx2.Response(status, headers=headers, content=head, request=httpx2.Request(method, url))
            response.elapsed = timedelta(0)  # read by response checks; the head came at once
        else:
            # A bound, so a request that never ends fails the test instead of hanging it.
            response = self.run(asyncio.wait_for(self.client.request(method, url, **request), 20))
        before, after = self._rows, self.row_counts()
        self._rows = after
        where = f"{method} {url} -> {response.status_code}"
        assert response.status_code < 500, f"{where}: {response.text[:500]}"
        if response.status_code >= 400:
            html = response.headers.get("content-type", "").startswith("text/html")
            shown_on_the_form = form_page and response.status_code == 422 and html
            problem = None if shown_on_the_form else error_shape_problem(response)
            assert problem is None, f"{where}: {problem}"
            grown = {t: (before[t], after[t]) for t in before if after[t] != before[t] and t not in set(may_store)}
            assert not grown, f"{where} stored rows (table: before, after): {grown}"
        return response

    async def _stream_head(self, path: str, query: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and first bytes of a GET, then a client disconnect (what a closed tab
        does). At the ASGI level: the in-process transport would wait for an endless body forever."""
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": unquote(path),
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [(b"host", b"hostile.test"), *((k.lower().encode(), v.encode()) for k, v in headers.items())],
            "client": ("127.0.0.1", 1),
            "server": ("hostile.test", 80),
        }
        gone = asyncio.Event()
        requested = False
        status, response_headers, body = 0, {}, b""

        async def receive() -> dict[str, Any]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status, response_headers, body
            if message["type"] == "http.response.start":
                status = message["status"]
                response_headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in message["headers"]}
            elif message["type"] == "http.response.body":
                body += message.get("body", b"")
                if body.count(b"\n\n") >= 2 or not message.get("more_body"):
                    gone.set()

        app = asyncio.create_task(self.app(scope, receive, send))
        await asyncio.sleep(0.02)  # long enough for a resumed stream to run its first transcript query
        gone.set()
        await asyncio.wait_for(app, 5)  # an exception inside the stream fails the test here
        return status, response_headers, body

    def close(self) -> None:
        if self._sqlite is not None:
            self._sqlite.close()
        self.run(self.client.aclose())
        self.run(self.runtime.close())


# -- building one per module


# One account per webhook, secrets as ``frontdesk accounts add`` stores them; Meta's also answer
# the subscription handshake (``verify_token``).
ACCOUNTS: dict[str, tuple[str, dict[str, str]]] = {
    "hostile-telegram": ("telegram", {"webhook_secret": SECRET, "bot_token": "1:x"}),
    "hostile-messenger": ("messenger", {"app_secret": SECRET, "page_access_token": "x", "verify_token": SECRET}),
    "hostile-instagram": ("instagram", {"app_secret": SECRET, "page_access_token": "x", "verify_token": SECRET}),
    "hostile-whatsapp": ("whatsapp", {"app_secret": SECRET, "access_token": "x", "verify_token": SECRET}),
    "hostile-line": ("line", {"channel_secret": SECRET, "channel_access_token": "x"}),
}
# The ids the fixtures are addressed to (Meta accounts must name theirs), so mutated bodies reach
# the parsers behind the account's own-id check.
OWN_IDS = {
    "hostile-messenger": {"page_id": "104857392016485"},
    "hostile-instagram": {"instagram_id": "17841405726653026"},
    "hostile-whatsapp": {"phone_number_id": "106540352242922"},
}


async def _fresh(database_url: str) -> Database:
    db = Database.from_url(database_url)
    if db.dialect == "postgresql":  # the session's database is shared with other modules
        tables = ", ".join(t.name for t in Base.metadata.sorted_tables)
        async with db.engine.begin() as conn:
            await conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    return db


async def _build(database_url: str, media_dir: Path, settings_: dict[str, Any]) -> tuple[Runtime, FastAPI]:
    db = await _fresh(database_url)
    # No API calls leave the process: every account points at a closed loopback port.
    runtime, _ = await make_runtime(db, ECHO, media_dir=media_dir, **settings_)
    for account_id, (channel, secrets) in ACCOUNTS.items():
        await upsert_account(
            db,
            account_id=account_id,
            tenant_id="demo",
            channel=channel,
            name=channel,
            config={"api_base_url": "http://127.0.0.1:9", **OWN_IDS.get(account_id, {})},
            secrets=secrets,
            now=runtime.clock.now(),
            vault=runtime.channel_deps.accounts.vault,
            own_id=CHANNELS[channel].own_id,
        )
    return runtime, create_app(runtime, run_workers=False)


@contextlib.contextmanager
def hostile_app(database_url: str, media_dir: Path, config: pytest.Config, **settings_: Any) -> Iterator[HostileApp]:
    """The app of one test module on ``database_url`` (a copy of the migrated template, or the
    session's PostgreSQL database, emptied first)."""
    report_at_the_end(config)
    loop = asyncio.new_event_loop()
    try:
        runtime, app = loop.run_until_complete(_build(database_url, media_dir, settings_))
        hostile = HostileApp(loop, runtime, app)
        try:
            yield hostile
        finally:
            hostile.close()
    finally:
        loop.close()


def database_url_for(backend: str, folder: Path, sqlite_template: Path, postgres_database: str | None) -> str:
    if backend == "sqlite":
        path = folder / "hostile.db"
        shutil.copy(sqlite_template, path)
        return f"sqlite+aiosqlite:///{path}"
    assert postgres_database is not None
    return postgres_database


def hostile_fixture(folder_name: str, **settings_: Any) -> Any:
    """The module-scoped ``hostile`` fixture of a test module: its app on each backend, with
    ``settings_`` over the test defaults. Assign it to a module variable named ``hostile``."""

    @pytest.fixture(scope="module", params=BACKENDS)
    def hostile(
        request: pytest.FixtureRequest,
        tmp_path_factory: pytest.TempPathFactory,
        sqlite_template: Path,
        postgres_database: str | None,
    ) -> Iterator[HostileApp]:
        folder = tmp_path_factory.mktemp(folder_name)
        url = database_url_for(request.param, folder, sqlite_template, postgres_database)
        with hostile_app(url, folder / "media", request.config, **settings_) as app:
            yield app

    return hostile
