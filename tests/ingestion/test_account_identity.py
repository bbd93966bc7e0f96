"""What a new channel account must say about itself before it takes webhooks: the Meta id it
answers as (one app secret signs every Page and number of the app), and an id that the
environment's credential names cannot confuse with another account's."""

from __future__ import annotations

import logging

import pytest

from frontdesk.cli_accounts import upsert_account
from frontdesk.demo import seed_demo
from frontdesk.errors import ConfigError
from frontdesk.ingestion.channels import CHANNELS
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.schema import ChannelAccount
from frontdesk.platform.vault import MasterKeys, Vault, env_name
from harness import make_runtime

ECHO = {"name": "echo", "default": [{"reply": "ok"}]}


async def add(db, account_id, channel, config=None, secrets=None, environ=None):
    return await upsert_account(
        db,
        account_id=account_id,
        tenant_id="demo",
        channel=channel,
        name=None,
        config=config or {},
        secrets=secrets or {},
        now=SystemClock().now(),
        vault=Vault(db, MasterKeys(), environ=environ or {}),
        own_id=CHANNELS[channel].own_id,  # as ``frontdesk accounts add`` passes it
    )


@pytest.mark.parametrize(
    ("channel", "key"), [("messenger", "page_id"), ("instagram", "instagram_id"), ("whatsapp", "phone_number_id")]
)
async def test_a_meta_account_must_name_the_id_it_answers_as(db, channel, key):
    await seed_demo(db, SystemClock())
    with pytest.raises(ConfigError, match=f"account has no {key}: give it --config {key}=<id>, the numeric id"):
        await add(db, "meta-shop-0001", channel, secrets={"app_secret": "s"})
    with pytest.raises(ConfigError, match=f"has a {key} that is not a numeric id \\('my page'\\)"):
        await add(db, "meta-shop-0001", channel, config={key: "my page"})
    async with db.read() as session:
        assert await session.get(ChannelAccount, "meta-shop-0001") is None  # nothing half-made

    saved = await add(db, "meta-shop-0001", channel, config={key: "104857392016485"}, secrets={"app_secret": "s"})
    assert saved.config == {key: "104857392016485"}
    with pytest.raises(ConfigError, match=f"has no {key}"):  # nor can an edit remove it
        await add(db, "meta-shop-0001", channel, config={key: ""})
    async with db.read() as session:
        kept = await session.get(ChannelAccount, "meta-shop-0001")
        assert kept is not None
        assert kept.config == {key: "104857392016485"}


async def test_telegram_line_and_webchat_accounts_need_no_platform_id(db):
    await seed_demo(db, SystemClock())
    for channel in ("telegram", "line", "webchat"):
        saved = await add(db, f"{channel}-shop-0001", channel)
        assert saved.channel == channel


async def test_an_account_made_before_the_id_was_required_can_rotate_a_secret_and_is_named_at_start(db, caplog):
    runtime, _ = await make_runtime(db, ECHO)
    async with db.transaction() as session:  # as an older release stored them
        session.add(
            ChannelAccount(
                id="old-page-0001",
                tenant_id="demo",
                channel="messenger",
                name="old",
                config={},
                secrets={"app_secret": "s"},
                created_at=runtime.clock.now(),
            )
        )
        session.add(
            ChannelAccount(
                id="old-wa-0001", tenant_id="demo", channel="whatsapp", name="old",
                config={"phone_number_id": "+1 650 555 1234"}, created_at=runtime.clock.now(),
            )
        )  # fmt: skip
    saved = await add(db, "old-page-0001", "messenger", secrets={"page_access_token": "new"})
    assert saved.secret_names == ("app_secret", "page_access_token")

    with caplog.at_level(logging.WARNING, logger="frontdesk.ingestion.channels"):
        await runtime.start()
    await runtime.close()
    warnings = [r.getMessage() for r in caplog.records if r.name == "frontdesk.ingestion.channels"]
    assert sorted(warnings) == [
        "channel account old-page-0001 has no page_id, so it takes the webhooks of every Page of its Meta app;"
        " set it: frontdesk accounts add messenger --id old-page-0001 --tenant demo --config page_id=<id>",
        "channel account old-wa-0001 has a phone_number_id that is not a numeric id ('+1 650 555 1234'), so it"
        " ignores every webhook; set it: frontdesk accounts add whatsapp --id old-wa-0001 --tenant demo --config"
        " phone_number_id=<id>",
    ]


@pytest.mark.parametrize(
    ("first", "second", "shared"),
    [
        ("shop-main-0001", "shop_main_0001", ("bot_token", "bot_token")),
        ("shop-main-0001", "SHOP-MAIN-0001", ("bot_token", "bot_token")),
        # Suffixed: one's page_access_token is the other's access_token, whichever came first.
        ("shop-main", "shop-main-page", ("page_access_token", "access_token")),
        ("shop-main-page", "shop-main", ("access_token", "page_access_token")),
    ],
)
async def test_an_id_the_environment_would_spell_like_another_accounts_is_refused(db, first, second, shared):
    await seed_demo(db, SystemClock())
    await add(db, first, "telegram", secrets={"bot_token": "1:a"})
    # Both would read this one variable, so one shop could answer with the other's credentials.
    assert env_name("demo", f"channel/{first}/{shared[0]}") == env_name("demo", f"channel/{second}/{shared[1]}")

    with pytest.raises(ConfigError, match=f"too like {first!r}"):
        await add(db, second, "telegram", secrets={"bot_token": "1:b"})
    async with db.read() as session:
        assert await session.get(ChannelAccount, second) is None
    again = await add(db, first, "telegram", secrets={"webhook_secret": "w"})  # itself: an update
    assert again.secret_names == ("bot_token", "webhook_secret")


async def test_ids_that_only_share_a_beginning_are_fine(db):
    await seed_demo(db, SystemClock())
    await add(db, "shop-main-0001", "telegram")
    assert (await add(db, "shop-main-0002", "telegram")).id == "shop-main-0002"
    assert (
        await add(db, "shop-main-00", "telegram")
    ).id == "shop-main-00"  # "SHOP_MAIN_0001" is not "SHOP_MAIN_00_..."
