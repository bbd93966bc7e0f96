"""``frontdesk accounts add`` refuses a config value whose shape the platform fixes (a LINE
``destination``, a Telegram ``bot_id``) instead of storing an account that silently misfires:
one line naming the key and the shape, exit code 2, nothing stored, the value never echoed (a
Telegram ``bot_id`` is often the whole token pasted)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from frontdesk.cli_accounts import upsert_account
from frontdesk.errors import ConfigError
from frontdesk.ingestion.channels import CHANNELS
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, Tenant
from frontdesk.platform.store.schema_vault import Credential
from frontdesk.platform.vault import MasterKeys, Vault

FRONTDESK = shutil.which("frontdesk", path=str(Path(sys.executable).parent)) or shutil.which("frontdesk")
NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
BOT_USER_ID = "U3f9c2a7e81b64d05a9e7c1d2b4f6a8c0"
TOKEN = "7351862094:AAHk-3xVq_VERY-SECRET"
DESTINATION = (
    "destination: not a LINE bot user id; expected U followed by 32 lowercase hex characters"
    " (the userId of GET https://api.line.me/v2/bot/info)"
)
BOT_ID = (
    "bot_id: not a Telegram bot id; expected digits only, the number before the colon of the bot token"
    " (123456789 for 123456789:AA...)"
)
WRONG = [
    ("line", "destination", "u3f9c2a7e81b64d05a9e7c1d2b4f6a8c0", DESTINATION),  # a lower-case u
    ("line", "destination", "U3F9C2A7E81B64D05A9E7C1D2B4F6A8C0", DESTINATION),  # upper-case hex
    ("line", "destination", BOT_USER_ID[:-1], DESTINATION),  # 31 hex characters
    ("line", "destination", "C3f9c2a7e81b64d05a9e7c1d2b4f6a8c0", DESTINATION),  # a group id
    ("telegram", "bot_id", TOKEN, BOT_ID),  # the whole token
    ("telegram", "bot_id", "-7351862094", BOT_ID),
    ("telegram", "bot_id", "0", BOT_ID),
    ("telegram", "bot_id", "@inkwell_bot", BOT_ID),  # the bot's username
    ("telegram", "bot_id", "٧٣٥١٨٦٢٠٩٤", BOT_ID),  # digits, but not ASCII ones
]


async def add(db: Database, channel: str, config: dict[str, str], secrets: dict[str, str] | None = None):
    return await upsert_account(
        db,
        account_id=f"{channel}-shop-01",
        tenant_id="shop",
        channel=channel,
        name=None,
        config=config,
        secrets=secrets or {},
        now=NOW,
        vault=Vault(db, MasterKeys(), environ={}),
        own_id=CHANNELS[channel].own_id,
    )


async def with_shop(db: Database) -> Database:
    async with db.transaction() as session:
        session.add(Tenant(id="shop", name="The Shop", created_at=NOW))
    return db


async def stored(db: Database) -> tuple[list[tuple[str, dict, dict]], int]:
    async with db.read() as session:
        accounts = [(a.id, a.config, a.secrets) for a in await session.scalars(select(ChannelAccount))]
        credentials = await session.scalar(select(func.count()).select_from(Credential))
    return accounts, int(credentials or 0)


@pytest.mark.parametrize(("channel", "key", "value", "problem"), WRONG)
async def test_a_config_value_of_the_wrong_shape_is_refused_and_nothing_is_stored(db, channel, key, value, problem):
    await with_shop(db)

    with pytest.raises(ConfigError) as refused:
        await add(db, channel, {key: value}, {"bot_token": TOKEN} if channel == "telegram" else {})

    assert refused.value.message == problem
    assert value not in refused.value.message
    assert await stored(db) == ([], 0)


async def test_an_account_edited_with_a_wrong_shape_keeps_what_it_had(db):
    await with_shop(db)
    await add(db, "line", {"destination": BOT_USER_ID}, {"channel_secret": "s1"})

    with pytest.raises(ConfigError):
        await add(db, "line", {"destination": BOT_USER_ID.upper()}, {"channel_secret": "s2"})

    assert await stored(db) == ([("line-shop-01", {"destination": BOT_USER_ID}, {"channel_secret": "s1"})], 0)


async def test_the_real_shapes_are_stored_and_an_empty_value_still_removes_the_key(db):
    await with_shop(db)
    await add(db, "line", {"destination": BOT_USER_ID})
    await add(db, "telegram", {"bot_id": TOKEN.split(":")[0]})
    await add(db, "line", {"destination": ""})

    accounts, _ = await stored(db)
    assert sorted((account_id, config) for account_id, config, _ in accounts) == [
        ("line-shop-01", {}),
        ("telegram-shop-01", {"bot_id": "7351862094"}),
    ]


# -- the command itself, as a user runs it (one subprocess per case: they are slow)


@pytest.fixture
def shop_database(tmp_path: Path, sqlite_template: Path) -> Path:
    """A migrated SQLite file with the tenant ``shop``."""
    path = tmp_path / "x.db"
    shutil.copy(sqlite_template, path)

    async def seed() -> None:
        db = Database.from_url(f"sqlite+aiosqlite:///{path}")
        await with_shop(db)
        await db.dispose()

    asyncio.run(seed())
    return path


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["line", "--id", "line-shop-01", "--config", f"destination={BOT_USER_ID.upper()}"], DESTINATION),
        (["telegram", "--id", "tg-shop-0001", "--config", f"bot_id={TOKEN}", "--secret", f"bot_token={TOKEN}"], BOT_ID),
    ],
    ids=["line", "telegram"],
)
def test_accounts_add_refuses_a_wrong_shape_in_one_line_and_stores_nothing(tmp_path, shop_database, args, problem):
    assert FRONTDESK, "the frontdesk console script is not installed next to this Python"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    env |= {"FRONTDESK_DATABASE_URL": f"sqlite+aiosqlite:///{shop_database}", "FRONTDESK_CONFIG": "/nonexistent"}
    result = subprocess.run(
        [FRONTDESK, "accounts", "add", *args, "--tenant", "shop"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip

    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert [line for line in lines[lines.index(f"error: {problem}") :] if line.strip()] == [f"error: {problem}"]
    assert "VERY-SECRET" not in result.stdout + result.stderr
    with sqlite3.connect(shop_database) as conn:
        assert conn.execute("SELECT count(*) FROM channel_accounts").fetchone() == (0,)
