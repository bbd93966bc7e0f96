"""Shared test harness.

Every test that touches the store runs against a real SQLite file and, when
FRONTDESK_TEST_POSTGRES_URL is set (``.ci/run`` sets it), against a real PostgreSQL too.
Model behaviour comes from the script provider; real model requests are refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pydantic_ai.models
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.migrate import upgrade
from frontdesk.platform.store.schema import Base

# Tests never reach a paid model: pydantic-ai's real providers raise before any request.
pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
os.environ.pop("FRONTDESK_MODEL_CHAT", None)
os.environ["FRONTDESK_CONFIG"] = "/nonexistent/frontdesk.toml"  # a developer's own file must not leak in

# The hostile suite attacks the console with the console suite's own kit (``console_kit``).
if (console_kit_dir := str(Path(__file__).parent / "console")) not in sys.path:
    sys.path.append(console_kit_dir)

POSTGRES_URL = os.environ.get("FRONTDESK_TEST_POSTGRES_URL")
BACKENDS = ["sqlite", *(["postgresql"] if POSTGRES_URL else [])]


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture(autouse=True)
def _own_media_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's media store (catalog photos, customer media) is its own directory, never ./media."""
    monkeypatch.setenv("FRONTDESK_MEDIA_DIR", str(tmp_path / "media"))


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, copied for each test (migrating per test is slow)."""
    path = tmp_path_factory.mktemp("template") / "template.db"

    async def build() -> None:
        db = Database.from_url(f"sqlite+aiosqlite:///{path}")
        await upgrade(db)
        await db.dispose()

    _run(build())
    return path


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str | None]:
    """A throwaway PostgreSQL database for this test session, migrated once."""
    if not POSTGRES_URL:
        yield None
        return
    import asyncpg

    name = f"frontdesk_test_{uuid.uuid4().hex[:10]}"
    admin = make_url(POSTGRES_URL).set(drivername="postgresql")

    async def admin_exec(sql: str) -> None:
        conn = await asyncpg.connect(admin.render_as_string(hide_password=False))
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    _run(admin_exec(f'CREATE DATABASE "{name}"'))
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)

    async def migrate() -> None:
        db = Database.from_url(url)
        await upgrade(db)
        await db.dispose()

    _run(migrate())
    yield url
    _run(admin_exec(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=BACKENDS)
def database_url(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path, postgres_database: str | None
) -> str:
    return backend_url(request.param, tmp_path, sqlite_template, postgres_database)


def backend_url(backend: str, tmp_path: Path, sqlite_template: Path, postgres_database: str | None) -> str:
    """A test's own SQLite file (a copy of the migrated template), or the session's PostgreSQL database."""
    if backend == "sqlite":
        path = tmp_path / "frontdesk.db"
        shutil.copy(sqlite_template, path)
        return f"sqlite+aiosqlite:///{path}"
    assert postgres_database is not None
    return postgres_database


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    async with opened_database(database_url) as database:
        yield database


@contextlib.asynccontextmanager
async def opened_database(url: str) -> AsyncIterator[Database]:
    """The test's database at ``url``: PostgreSQL's shared one emptied first."""
    database = Database.from_url(url)
    if database.dialect == "postgresql":
        tables = ", ".join(t.name for t in Base.metadata.sorted_tables)
        async with database.engine.begin() as conn:
            await conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    try:
        yield database
    finally:
        await database.dispose()


# -- the loyalty pack's MCP server (tests/packs)

LOYALTY_NOW = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)  # a Monday, 10:00 in Vietnam; November birthdays match


@pytest.fixture(scope="session")
def loyalty_seeded_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One seeded loyalty database, copied for each test (seeding per test would be slower)."""
    from frontdesk.packs.loyalty.server import open_database

    path = tmp_path_factory.mktemp("loyalty") / "template.db"
    open_database(path, clock=lambda: LOYALTY_NOW).close()
    return path


@pytest.fixture
def loyalty_server(loyalty_seeded_db: Path, tmp_path: Path) -> Any:
    """A loyalty MCP server on a fresh copy of the seeded file, its clock fixed at ``LOYALTY_NOW``.

    Tests open ``Client(loyalty_server)`` themselves: an async-generator fixture would enter the
    client's task group in one task and leave it in another, which anyio refuses."""
    from frontdesk.packs.loyalty.server import build_server

    path = tmp_path / "loyalty.db"
    shutil.copy(loyalty_seeded_db, path)
    return build_server(path, clock=lambda: LOYALTY_NOW)


# -- the suite-wide canary watch
#
# Canary secrets (tests/platform/test_vault_canary.py) carry CANARY_MARK and are stored in the
# vault. Beyond that test's own scan, every log record emitted, every response body or header
# sent by a frontdesk app and every row written into a trace-like table (tests/canary_rows.py)
# during the whole run is watched for the mark; a sighting fails the run.

CANARY_MARK = "c4n4ry"
canary_sightings: list[str] = []


class _CanaryLogWatch(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = f"{record.getMessage()} {record.exc_text or ''}"
        except Exception:  # a malformed record is still scanned as far as it can be
            text = f"{record.msg!r} {record.args!r}"
        if CANARY_MARK in text:
            canary_sightings.append(f"log line of {record.name}: {text[:300]}")


def _watch_frontdesk_responses() -> None:
    from fastapi import FastAPI

    original = FastAPI.__call__
    mark = CANARY_MARK.encode()

    async def watched_call(self: FastAPI, scope: Any, receive: Any, send: Any) -> None:
        if self.title != "frontdesk":  # platform doubles are FastAPI/Starlette apps too
            await original(self, scope, receive, send)
            return

        async def scan(message: Any) -> None:
            body = message.get("body") or b""
            headers = message.get("headers") or []
            if mark in body or any(mark in value for _, value in headers):
                canary_sightings.append(f"response to {scope.get('method')} {scope.get('path')}")
            await send(message)

        await original(self, scope, receive, scan)

    FastAPI.__call__ = watched_call  # type: ignore[method-assign]  # test-only instrumentation


class _WorkerSightings:
    """With pytest-xdist, tests run in worker processes: each hands its sightings to the
    controller, whose own session finish fails the run."""

    @pytest.hookimpl
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        canary_sightings.extend(getattr(node, "workeroutput", {}).get("canary_sightings", []))


def pytest_configure(config: pytest.Config) -> None:
    from canary_rows import watch_rows

    logging.getLogger().addHandler(_CanaryLogWatch())
    _watch_frontdesk_responses()
    watch_rows(CANARY_MARK, canary_sightings.append)
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_WorkerSightings())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workeroutput"):  # an xdist worker: the controller reports
        session.config.workeroutput["canary_sightings"] = list(canary_sightings)
        return
    if canary_sightings:
        print("\nA canary secret leaked:\n  " + "\n  ".join(canary_sightings[:20]))
        session.exitstatus = 1
