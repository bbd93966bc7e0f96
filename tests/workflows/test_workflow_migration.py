"""Migration 0004 adds ``workflow_drafts`` to a database that already serves conversations, and
downgrades cleanly. Both backends, each on a throwaway database."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Connection, inspect, text
from sqlalchemy.engine import make_url

from conftest import BACKENDS
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.migrate import alembic_config, current_revision, upgrade
from frontdesk.workflows import Submitted, WorkflowStore

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
FLOW = "loyalty.create_rule"


async def create_rule(draft: Any) -> dict[str, Any]:
    return {"rule_id": "r1"}


@pytest.fixture(params=BACKENDS)
async def blank_db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    if request.param == "sqlite":
        db = Database.from_url(f"sqlite+aiosqlite:///{tmp_path / 'old.db'}")
        yield db
        await db.dispose()
        return
    import asyncpg

    base = make_url(os.environ["FRONTDESK_TEST_POSTGRES_URL"])
    name = f"frontdesk_wf_{uuid.uuid4().hex[:10]}"
    admin = base.set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(admin)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    db = Database.from_url(base.set(database=name).render_as_string(hide_password=False))
    yield db
    await db.dispose()
    conn = await asyncpg.connect(admin)
    await conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    await conn.close()


async def downgrade(db: Database, revision: str) -> None:
    def run(connection: Connection) -> None:
        command.downgrade(alembic_config(connection), revision)

    async with db.engine.begin() as connection:
        await connection.run_sync(run)


async def tables(db: Database) -> set[str]:
    async with db.engine.connect() as connection:
        return set(await connection.run_sync(lambda c: inspect(c).get_table_names()))


async def test_a_database_with_conversations_gains_drafts_and_can_go_back(blank_db: Database):
    db = blank_db
    await upgrade(db, "0003")
    async with db.engine.begin() as conn:
        for sql in (
            "INSERT INTO tenants (id, name, pack, policy, created_at) VALUES ('t1', 'Shop', 'loyalty', '{}', :now)",
            "INSERT INTO channel_accounts (id, tenant_id, channel, name, config, secrets, created_at)"
            " VALUES ('ca1', 't1', 'webchat', 'Web', '{}', '{}', :now)",
            "INSERT INTO contacts (id, tenant_id, channel_account_id, external_id, created_at)"
            " VALUES ('ct1', 't1', 'ca1', 's1', :now)",
            "INSERT INTO conversations (id, tenant_id, channel_account_id, contact_id, ai_enabled, version,"
            " created_at, updated_at) VALUES ('conv1', 't1', 'ca1', 'ct1', true, 0, :now, :now)",
        ):
            await conn.execute(text(sql), {"now": T0})

    await upgrade(db, "0004")

    assert await current_revision(db) == "0004"
    store = WorkflowStore(db, SystemClock())
    draft = await store.start("conv1", FLOW, "agent", {"name": "Gold"})
    assert isinstance(await store.submit(draft.id, 1, "key-1", create_rule), Submitted)

    await downgrade(db, "0003")
    assert "workflow_drafts" not in await tables(db)
    assert "conversations" in await tables(db)
    await upgrade(db)
    assert await store.current("conv1", FLOW) is None
