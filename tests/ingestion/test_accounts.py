"""Channel accounts: credentials never print, secrets compare in constant time, the CLI never echoes them."""

from __future__ import annotations

import pytest

from frontdesk.cli_accounts import parse_pairs, upsert_account
from frontdesk.demo import seed_demo
from frontdesk.errors import ConfigError, NotFoundError
from frontdesk.ingestion.accounts import AccountDirectory, Credentials, same_secret
from frontdesk.platform.clock import SystemClock


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
    saved = await upsert_account(
        db,
        account_id="tg-shop-0001",
        tenant_id="demo",
        channel="telegram",
        name="Shop bot",
        config={"bot_id": "42"},
        secrets={"bot_token": "42:abc", "webhook_secret": "s1"},
        now=clock.now(),
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
    )
    assert again.secret_names == ("webhook_secret",)  # an empty value removes a secret

    view = await AccountDirectory(db).get("tg-shop-0001", ("telegram",))
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
        )


def test_pairs_must_be_key_value():
    assert parse_pairs(["a=1", "b=x=y"], "--config") == {"a": "1", "b": "x=y"}
    with pytest.raises(ConfigError):
        parse_pairs(["token"], "--secret")
