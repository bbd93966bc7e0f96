"""The migrations build exactly the schema the code declares, on SQLite and PostgreSQL, and the
database settings that make SQLite safe under bursts are in force."""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from conftest import BACKENDS
from frontdesk.demo import seed_demo
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.engine import SQLITE_BUSY_TIMEOUT_MS, Database
from frontdesk.platform.store.migrate import alembic_config, current_revision, upgrade
from frontdesk.platform.store.schema import Base, Contact, Conversation, Message
from frontdesk.platform.store.schema_inbox import THREAD_FTS_TABLES
from frontdesk.platform.store.schema_search import FTS_TABLES as SEARCH_FTS_TABLES
from frontdesk.platform.store.thread_index import matching_threads, query_words
from frontdesk.runtime import warn_tenants_without_data

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


FTS_TABLES = SEARCH_FTS_TABLES | THREAD_FTS_TABLES


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


async def schema_diff(db: Database) -> list:
    def compare(connection) -> list:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        diff = compare_metadata(context, Base.metadata)
        # SQLite's FTS5 indexes (search_documents, migration 0008; thread_terms, 0012) cannot be
        # declared as tables.
        return [d for d in diff if not (d[0] == "remove_table" and d[1].name in FTS_TABLES)]

    async with db.engine.connect() as connection:
        return await connection.run_sync(compare)


async def table_names(db: Database) -> set[str]:
    async with db.engine.connect() as connection:
        return set(await connection.run_sync(lambda c: inspect(c).get_table_names())) - FTS_TABLES


# -- the schema ------------------------------------------------------------------------------------


async def test_migrated_schema_matches_the_declared_tables(db):
    assert await schema_diff(db) == []


async def test_migrated_database_is_at_the_head_revision(db):
    assert await current_revision(db) == head_revision()


async def test_upgrading_an_up_to_date_database_again_changes_nothing(db):
    await upgrade(db)
    await upgrade(db)

    assert await current_revision(db) == head_revision()
    assert await schema_diff(db) == []


async def test_fresh_sqlite_file_upgrades_from_nothing(tmp_path: Path):
    path = tmp_path / "new" / "fresh.db"
    path.parent.mkdir()
    db = Database.from_url(f"sqlite+aiosqlite:///{path}")
    try:
        assert await current_revision(db) is None
        assert await table_names(db) == set()

        await upgrade(db)

        assert await current_revision(db) == head_revision()
        assert await table_names(db) == {*Base.metadata.tables, "alembic_version"}
        assert await schema_diff(db) == []
    finally:
        await db.dispose()
    assert path.exists()


# -- constraints -----------------------------------------------------------------------------------


async def _conversation(db: Database) -> tuple[str, str]:
    accounts = await seed_demo(db, SystemClock())
    async with db.transaction() as session:
        session.add(
            Contact(
                id="ct_1",
                tenant_id=accounts.tenant_id,
                channel_account_id=accounts.webchat_id,
                external_id="session-1",
                created_at=NOW,
            )
        )
        await session.flush()
        session.add(
            Conversation(
                id="conv_1",
                tenant_id=accounts.tenant_id,
                channel_account_id=accounts.webchat_id,
                contact_id="ct_1",
                created_at=NOW,
                updated_at=NOW,
            )
        )
    return accounts.webchat_id, "conv_1"


def _message(account_id: str, conversation_id: str, channel_message_id: str | None, role: str = "user") -> Message:
    return Message(
        conversation_id=conversation_id,
        channel_account_id=account_id,
        channel_message_id=channel_message_id,
        role=role,
        content_type="text",
        content="hello",
        created_at=NOW,
    )


async def test_the_same_platform_message_cannot_be_stored_twice(db):
    account_id, conversation_id = await _conversation(db)
    async with db.transaction() as session:
        session.add(_message(account_id, conversation_id, "platform-msg-1"))

    with pytest.raises(IntegrityError):
        async with db.transaction() as session:
            session.add(_message(account_id, conversation_id, "platform-msg-1"))

    async with db.transaction() as session:
        # A different platform message, and our own replies (no platform id), are all fine.
        session.add(_message(account_id, conversation_id, "platform-msg-2"))
        session.add(_message(account_id, conversation_id, None, role="assistant"))
        session.add(_message(account_id, conversation_id, None, role="assistant"))
    async with db.engine.connect() as connection:
        assert (await connection.execute(text("SELECT count(*) FROM messages"))).scalar() == 4


# -- SQLite connection settings --------------------------------------------------------------------


async def test_sqlite_connections_use_wal_and_a_busy_timeout(tmp_path: Path):
    db = Database.from_url(f"sqlite+aiosqlite:///{tmp_path / 'wal.db'}")
    try:
        await upgrade(db)
        async with db.engine.connect() as connection:
            journal_mode = (await connection.exec_driver_sql("PRAGMA journal_mode")).scalar()
            busy_timeout = (await connection.exec_driver_sql("PRAGMA busy_timeout")).scalar()
            foreign_keys = (await connection.exec_driver_sql("PRAGMA foreign_keys")).scalar()
    finally:
        await db.dispose()

    assert str(journal_mode).lower() == "wal"
    assert busy_timeout == SQLITE_BUSY_TIMEOUT_MS >= 5000
    assert foreign_keys == 1


async def test_sqlite_reads_do_not_wait_for_a_writer(tmp_path: Path):
    path = tmp_path / "busy.db"
    db = Database.from_url(f"sqlite+aiosqlite:///{path}")
    await upgrade(db)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        started = time.monotonic()
        async with db.read() as session:
            assert await session.scalar(text("SELECT count(*) FROM jobs")) == 0
        assert time.monotonic() - started < 2
    finally:
        writer.rollback()
        writer.close()
        await db.dispose()


async def test_sqlite_rejects_a_message_for_an_unknown_conversation(tmp_path: Path):
    db = Database.from_url(f"sqlite+aiosqlite:///{tmp_path / 'fk.db'}")
    try:
        await upgrade(db)
        with pytest.raises(IntegrityError):
            async with db.transaction() as session:
                session.add(_message("no-such-account", "no-such-conversation", "m1"))
    finally:
        await db.dispose()


@pytest.fixture(params=BACKENDS)
async def empty_database(request: pytest.FixtureRequest, tmp_path: Path):
    """A database with no schema at all, on each backend (PostgreSQL: a throwaway database)."""
    import os
    import uuid

    import asyncpg
    from sqlalchemy.engine import make_url

    if request.param == "sqlite":
        db = Database.from_url(f"sqlite+aiosqlite:///{tmp_path / 'old.db'}")
        yield db
        await db.dispose()
        return
    base = os.environ["FRONTDESK_TEST_POSTGRES_URL"]
    name = f"frontdesk_upgrade_{uuid.uuid4().hex[:10]}"
    admin = make_url(base).set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(admin)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    db = Database.from_url(make_url(base).set(database=name).render_as_string(hide_password=False))
    yield db
    await db.dispose()
    conn = await asyncpg.connect(admin)
    await conn.execute(f'DROP DATABASE "{name}"')
    await conn.close()


async def test_a_database_with_data_from_the_first_release_upgrades_and_keeps_serving(empty_database: Database):
    db = empty_database
    await upgrade(db, "0001")
    async with db.engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'Old Shop', :now)"), {"now": NOW}
        )

    await upgrade(db)

    assert await current_revision(db) == head_revision()
    assert await schema_diff(db) == []
    async with db.engine.connect() as conn:
        pack, policy, languages, revision = (
            await conn.execute(text("SELECT pack, policy, languages, data_revision FROM tenants WHERE id = 't1'"))
        ).one()
    assert pack == "catalog"  # 0002 gave it the print shop pack, which 0009 made the catalog pack
    assert policy in ({}, "{}")
    assert languages in (["en"], '["en"]')
    assert revision == 0


async def test_a_print_shop_database_with_conversations_upgrades_to_the_catalog_pack_and_is_named_at_start(
    empty_database: Database, caplog: pytest.LogCaptureFixture
):
    """0009 adds tenant columns without copying ``tenants`` (rows point at it), moves the print
    shop's tenants to the catalog pack, and every start names a tenant whose catalog is empty."""
    db = empty_database
    await upgrade(db, "0008")
    async with db.engine.begin() as conn:
        for statement in (
            "INSERT INTO tenants (id, name, pack, policy, created_at) "
            "VALUES ('t1', 'Old Shop', 'printshop', '{}', :now)",
            "INSERT INTO channel_accounts (id, tenant_id, channel, name, config, secrets, created_at) "
            "VALUES ('old-chat-01', 't1', 'webchat', 'Chat', '{}', '{}', :now)",
            "INSERT INTO contacts (id, tenant_id, channel_account_id, external_id, created_at) "
            "VALUES ('ct_1', 't1', 'old-chat-01', 's1', :now)",
            "INSERT INTO conversations (id, tenant_id, channel_account_id, contact_id, ai_enabled, version, "
            "created_at, updated_at) VALUES ('conv_1', 't1', 'old-chat-01', 'ct_1', true, 0, :now, :now)",
        ):
            await conn.execute(text(statement), {"now": NOW})

    await upgrade(db)
    with caplog.at_level("WARNING", logger="frontdesk.runtime"):
        await warn_tenants_without_data(db)

    async with db.engine.connect() as conn:
        pack = (await conn.execute(text("SELECT pack FROM tenants WHERE id = 't1'"))).scalar_one()
        conversations = (await conn.execute(text("SELECT count(*) FROM conversations"))).scalar_one()
    assert (pack, conversations) == ("catalog", 1)
    assert await schema_diff(db) == []
    (warning,) = [r.getMessage() for r in caplog.records if "t1" in r.getMessage()]
    assert warning.startswith("tenant t1 has no catalog and profile yet")
    assert "frontdesk catalog import FILE --tenant t1" in warning


async def test_threads_stored_before_the_inbox_are_found_by_its_search_after_the_upgrade(empty_database: Database):
    """0012 indexes the messages and contacts already there, so search works on day one."""
    db = empty_database
    await upgrade(db, "0011")
    async with db.engine.begin() as conn:
        for statement in (
            "INSERT INTO tenants (id, name, pack, policy, languages, data_revision, created_at) "
            "VALUES ('t1', 'Old Shop', 'catalog', '{}', '[\"en\"]', 0, :now)",
            "INSERT INTO channel_accounts (id, tenant_id, channel, name, config, secrets, created_at) "
            "VALUES ('old-chat-01', 't1', 'webchat', 'Chat', '{}', '{}', :now)",
            "INSERT INTO contacts (id, tenant_id, channel_account_id, external_id, phone, created_at) "
            "VALUES ('ct_1', 't1', 'old-chat-01', 's1', '+84 912 345 678', :now)",
            "INSERT INTO conversations (id, tenant_id, channel_account_id, contact_id, ai_enabled, version, "
            "created_at, updated_at) VALUES ('conv_1', 't1', 'old-chat-01', 'ct_1', true, 0, :now, :now)",
            "INSERT INTO messages (conversation_id, channel_account_id, role, content_type, content, metadata, "
            "status, created_at) VALUES ('conv_1', 'old-chat-01', 'user', 'text', 'Chủ nhật có mở cửa không?', "
            "'{}', 'ready', :now)",
        ):
            await conn.execute(text(statement), {"now": NOW})

    await upgrade(db)

    async with db.engine.connect() as conn:
        by_word = (await conn.execute(matching_threads(db.dialect, "t1", query_words("chu nhat")))).scalars().all()
        by_phone = (await conn.execute(matching_threads(db.dialect, "t1", query_words("0912345678")))).scalars().all()
        elsewhere = (await conn.execute(matching_threads(db.dialect, "t2", query_words("chu nhat")))).scalars().all()
    assert (by_word, by_phone, elsewhere) == (["conv_1"], ["conv_1"], [])
