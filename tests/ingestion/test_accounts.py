"""Channel accounts: credentials never print, secrets compare in constant time, the CLI never echoes them,
and with a vault key they are sealed in the vault, never in the accounts table."""

from __future__ import annotations

import base64
import logging

import pytest

from frontdesk.cli_accounts import parse_pairs, upsert_account
from frontdesk.demo import seed_demo
from frontdesk.errors import ConfigError, NotFoundError
from frontdesk.ingestion.accounts import AccountDirectory, Credentials, same_secret, seal_plaintext_secrets
from frontdesk.ingestion.channels import CHANNELS
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.schema import ChannelAccount
from frontdesk.platform.vault import MasterKeys, Vault


def test_credentials_never_show_their_values():
    credentials = Credentials({"bot_token": "123:SECRET", "webhook_secret": "hush", "empty": ""})
    assert "SECRET" not in repr(credentials)
    assert "hush" not in str(credentials)
    assert repr(credentials) == "Credentials(bot_token=***, webhook_secret=***)"
    assert credentials.get("empty") is None


@pytest.mark.parametrize(
    ("given", "expected", "same"),
    [("abc", "abc", True), ("abc", "abd", False), ("", "", False), (None, "x", False), ("x", None, False)],
)
def test_secrets_match_only_when_both_exist_and_are_equal(given, expected, same):
    assert same_secret(given, expected) is same


async def test_accounts_are_created_merged_and_looked_up_by_channel(db):
    clock = SystemClock()
    await seed_demo(db, clock)
    keyless = Vault(db, MasterKeys(), environ={})  # development mode, whatever this shell exports
    saved = await upsert_account(
        db,
        account_id="tg-shop-0001",
        tenant_id="demo",
        channel="telegram",
        name="Shop bot",
        config={"bot_id": "42"},
        secrets={"bot_token": "42:abc", "webhook_secret": "s1"},
        now=clock.now(),
        vault=keyless,
        own_id=CHANNELS["telegram"].own_id,
    )
    assert saved.secret_names == ("bot_token", "webhook_secret")
    assert "42:abc" not in repr(saved)
    again = await upsert_account(
        db,
        account_id="tg-shop-0001",
        tenant_id="demo",
        channel="telegram",
        name=None,
        config={},
        secrets={"webhook_secret": "s2", "bot_token": ""},
        now=clock.now(),
        vault=keyless,
        own_id=CHANNELS["telegram"].own_id,
    )
    assert again.secret_names == ("webhook_secret",)  # an empty value removes a secret

    view = await AccountDirectory(db, keyless).get("tg-shop-0001", ("telegram",))
    assert (view.tenant_id, view.config, view.credentials.get("webhook_secret")) == ("demo", {"bot_id": "42"}, "s2")
    with pytest.raises(NotFoundError):
        await AccountDirectory(db).get("tg-shop-0001", ("line",))
    with pytest.raises(ConfigError):
        await upsert_account(
            db,
            account_id="tg-shop-0001",
            tenant_id="demo",
            channel="line",
            name=None,
            config={},
            secrets={},
            now=clock.now(),
            own_id=CHANNELS["line"].own_id,
        )


def test_pairs_must_be_key_value():
    assert parse_pairs(["a=1", "b=x=y"], "--config") == {"a": "1", "b": "x=y"}
    with pytest.raises(ConfigError):
        parse_pairs(["token"], "--secret")


# -- credentials through the vault ------------------------------------------------------------------

KEY = base64.b64encode(bytes(range(32))).decode()


async def add(db, vault, secrets, account_id="tg-shop-0001"):
    return await upsert_account(
        db,
        account_id=account_id,
        tenant_id="demo",
        channel="telegram",
        name=None,
        config={},
        secrets=secrets,
        now=SystemClock().now(),
        vault=vault,
        own_id=CHANNELS["telegram"].own_id,
    )


async def plaintext_column(db, account_id="tg-shop-0001"):
    async with db.read() as session:
        return (await session.get(ChannelAccount, account_id)).secrets


async def test_with_a_vault_key_account_secrets_are_sealed_and_never_in_the_accounts_table(db):
    await seed_demo(db, SystemClock())
    vault = Vault(db, MasterKeys.load(KEY, None), environ={})
    saved = await add(db, vault, {"bot_token": "42:abc", "webhook_secret": "s1"})

    assert saved.secret_names == ("bot_token", "webhook_secret")
    assert await plaintext_column(db) == {}
    assert await vault.names("demo") == ["channel/tg-shop-0001/bot_token", "channel/tg-shop-0001/webhook_secret"]
    directory = AccountDirectory(db, vault)
    view = await directory.get("tg-shop-0001", ("telegram",))
    assert view.credentials.get("bot_token") == "42:abc"

    again = await add(db, vault, {"bot_token": "", "webhook_secret": "s2"})
    assert again.secret_names == ("webhook_secret",)  # an empty value removes a sealed secret too
    view = await directory.get("tg-shop-0001", ("telegram",))  # the row is cached; credentials are not stale
    assert (view.credentials.get("bot_token"), view.credentials.get("webhook_secret")) == (None, "s2")
    assert repr(view.credentials) == "Credentials(webhook_secret=***)"


async def test_plaintext_secrets_are_sealed_at_start_once_a_key_is_configured(db, caplog):
    await seed_demo(db, SystemClock())
    keyless = Vault(db, MasterKeys(), environ={})
    await add(db, keyless, {"bot_token": "42:abc", "webhook_secret": "s1"})
    assert await plaintext_column(db) == {"bot_token": "42:abc", "webhook_secret": "s1"}  # development mode

    with caplog.at_level(logging.WARNING):
        assert await seal_plaintext_secrets(db, keyless) == 0
    assert "keep credentials unencrypted" in caplog.text
    assert "42:abc" not in caplog.text

    vault = Vault(db, MasterKeys.load(KEY, None), environ={})
    assert await seal_plaintext_secrets(db, vault) == 2
    assert await seal_plaintext_secrets(db, vault) == 0  # idempotent
    assert await plaintext_column(db) == {}
    view = await AccountDirectory(db, vault).get("tg-shop-0001", ("telegram",))
    assert (view.credentials.get("bot_token"), view.credentials.get("webhook_secret")) == ("42:abc", "s1")


async def test_without_a_key_an_environment_variable_supplies_a_missing_secret(db):
    await seed_demo(db, SystemClock())
    await add(db, Vault(db, MasterKeys(), environ={}), {"bot_token": "42:abc"})
    environ = {"FRONTDESK_SECRET__DEMO__CHANNEL_TG_SHOP_0001_WEBHOOK_SECRET": "from-env"}

    view = await AccountDirectory(db, Vault(db, MasterKeys(), environ=environ)).get("tg-shop-0001", ("telegram",))

    assert (view.credentials.get("bot_token"), view.credentials.get("webhook_secret")) == ("42:abc", "from-env")


async def test_the_directory_refuses_an_unknown_account_before_touching_the_vault(db):
    await seed_demo(db, SystemClock())
    with pytest.raises(NotFoundError):
        await AccountDirectory(db, Vault(db, MasterKeys.load(KEY, None), environ={})).get("no such!", ("telegram",))
