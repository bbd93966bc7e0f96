"""Configure the brain: write-only channel credentials, notification subscriptions and webhooks
(owner only, CSRF, audit, tenant isolation), the catalog list and the read-only model-slot page.
(Editing the business and its catalog: ``test_business_pages``.)"""

from __future__ import annotations

import re
from typing import Any

import httpx2
from console_kit import AGENT, OTHER, PASSWORD, build_console, client, csrf_of, sign_in
from sqlalchemy import select

from frontdesk.cli_operators import add_operator
from frontdesk.humans.console import ConsoleDeps
from frontdesk.humans.console._configure import vault_of
from frontdesk.humans.console.pages_catalog import masked_slot
from frontdesk.humans.notifications import ClaimRejectedSpike, Event, Recipient, notify
from frontdesk.platform.store.schema import ChannelAccount, Tenant
from frontdesk.platform.store.schema_console import AuditEntry, Operator
from frontdesk.platform.store.schema_notifications import NotificationSubscription, NotificationWebhook
from frontdesk.platform.store.schema_vault import Credential
from frontdesk.platform.vault import MasterKeys, Vault, generate_key

SECRET = "tok-4f9a-VERY-secret-value"
HREF = re.compile(r'href="(/console[^"#?]*)"')


async def _reachable_pages(http: httpx2.AsyncClient) -> dict[str, str]:
    """Every console page reachable by links from the conversations list (GET only, no streams)."""
    seen: dict[str, str] = {}
    todo = ["/console/conversations"]
    while todo and len(seen) < 80:
        path = todo.pop()
        if path in seen or "/stream" in path or "/static/" in path:
            continue
        response = await http.get(path)
        seen[path] = response.text
        todo.extend(p for p in HREF.findall(response.text) if p not in seen)
    return seen


async def _audit(db: Any, action: str) -> list[AuditEntry]:
    async with db.read() as session:
        return list(await session.scalars(select(AuditEntry).where(AuditEntry.action == action)))


# -- channel credentials ----------------------------------------------------------------------


async def test_without_a_vault_key_a_credential_goes_to_the_plaintext_column_with_a_warning(db):
    console = await build_console(db)
    async with client(console) as http:
        await sign_in(http)
        page = await http.get("/console/accounts")
        token = await csrf_of(http, "/console/accounts")
        saved = await http.post(
            "/console/accounts/demo-flaky/credentials", data={"csrf": token, "name": "bot_token", "value": SECRET}
        )
        after = await http.get("/console/accounts")
        pages = await _reachable_pages(http)

    assert page.status_code == 200
    assert 'id="no-vault-key"' in page.text
    assert 'type="password" name="value"' in page.text
    assert saved.status_code == 303, saved.text
    assert 'data-credential="bot_token"' in after.text
    assert "/console/accounts" in pages
    assert "/console/audit" in pages
    for path, html in pages.items():
        assert SECRET not in html, path
        assert "s3cr3t-never-shown" not in html, path  # the seeded plaintext token either
    async with db.read() as session:
        account = await session.get(ChannelAccount, "demo-flaky")
    assert account is not None
    assert account.secrets == {"token": "s3cr3t-never-shown", "bot_token": SECRET}
    rows = await _audit(db, "credential_set")
    assert [(r.target, r.details["name"], r.details["storage"]) for r in rows] == [
        ("demo-flaky/bot_token", "bot_token", "plaintext")
    ]
    assert SECRET not in str(rows[0].details)


async def test_with_a_vault_key_a_credential_is_sealed_replaced_and_never_shown(db):
    console = await build_console(db, vault_key=generate_key())
    vault = console.runtime.channel_deps.accounts.vault
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http, "/console/accounts")
        url = "/console/accounts/demo-flaky/credentials"
        first = await http.post(url, data={"csrf": token, "name": "token", "value": "first-" + SECRET})
        second = await http.post(url, data={"csrf": token, "name": "token", "value": SECRET + "\n"})
        custom = await http.post(url, data={"csrf": token, "name": "api_key_2", "value": "other-" + SECRET})
        page = await http.get("/console/accounts")
        pages = await _reachable_pages(http)

    assert [r.status_code for r in (first, second, custom)] == [303, 303, 303]
    assert 'id="no-vault-key"' not in page.text
    assert 'data-credential="token"' in page.text
    assert 'data-credential="api_key_2"' in page.text
    assert "updated" in page.text
    for path, html in pages.items():
        assert SECRET not in html, path
        assert "s3cr3t-never-shown" not in html, path
    assert await vault.get("demo", "channel/demo-flaky/token") == SECRET  # trimmed, replaced
    account = await console.runtime.channel_deps.accounts.get("demo-flaky", ("flaky",))
    assert account.credentials.get("token") == SECRET
    async with db.read() as session:
        stored = await session.get(ChannelAccount, "demo-flaky")
        envelopes = list(await session.scalars(select(Credential.envelope)))
    assert stored is not None
    assert "token" not in stored.secrets  # the stale plaintext copy is gone
    assert all(SECRET not in e for e in envelopes)
    rows = await _audit(db, "credential_set")
    assert [r.details["storage"] for r in rows] == ["vault"] * 3
    assert all(SECRET not in str(r.details) and SECRET not in (r.target or "") for r in rows)


async def test_an_agent_cannot_set_a_credential_but_sees_the_names(db):
    console = await build_console(db)
    async with client(console) as http:
        await sign_in(http, AGENT)
        page = await http.get("/console/accounts")
        token = await csrf_of(http, "/console/accounts")
        refused = await http.post(
            "/console/accounts/demo-flaky/credentials", data={"csrf": token, "name": "bot_token", "value": SECRET}
        )

    assert page.status_code == 200
    assert 'data-credential="token"' in page.text
    assert "/credentials" not in page.text  # no form for an agent
    assert refused.status_code == 403
    async with db.read() as session:
        account = await session.get(ChannelAccount, "demo-flaky")
    assert account is not None
    assert account.secrets == {"token": "s3cr3t-never-shown"}
    assert await _audit(db, "credential_set") == []


async def test_another_tenants_account_is_404_and_unchanged(db):
    console = await build_console(db, vault_key=generate_key())
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http, "/console/accounts")
        refused = await http.post(
            "/console/accounts/other-webchat/credentials", data={"csrf": token, "name": "bot_token", "value": SECRET}
        )
        missing = await http.post(
            "/console/accounts/no-such-account/credentials", data={"csrf": token, "name": "x", "value": "y"}
        )

    assert refused.status_code == 404
    assert missing.status_code == 404
    assert await console.runtime.channel_deps.accounts.vault.names("other") == []
    assert await _audit(db, "credential_set") == []


async def test_invalid_credential_input_is_a_clear_4xx(db):
    console = await build_console(db)
    url = "/console/accounts/demo-flaky/credentials"
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http, "/console/accounts")
        answers = [
            await http.post(url, data={"csrf": token, "name": name, "value": value})
            for name, value in [
                ("Bot-Token", SECRET),
                ("../x", SECRET),
                ("x" * 65, SECRET),
                ("", SECRET),
                ("bot_token", ""),
                ("bot_token", "   "),
            ]
        ]
        no_fields = await http.post(url, data={"csrf": token})

    for answer in [*answers, no_fields]:
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["message"].startswith("invalid form")
        assert SECRET not in answer.text
    assert "name" in answers[0].json()["error"]["message"]
    assert "value" in answers[4].json()["error"]["message"]
    assert await _audit(db, "credential_set") == []


async def test_the_vault_comes_from_the_deps_when_they_carry_one(db):
    console = await build_console(db)
    sealing = Vault(db, MasterKeys.load(generate_key(), None))
    deps = ConsoleDeps(*[getattr(console.deps, f) for f in ("db", "clock", "signals", "deliverer", "config", "packs")])
    with_vault = ConsoleDeps(**{**deps.__dict__, "vault": sealing})

    class _Request:
        app = console.app

    assert vault_of(with_vault, _Request()) is sealing  # type: ignore[arg-type]  # a stand-in with only .app
    assert vault_of(deps, _Request()) is console.runtime.channel_deps.accounts.vault  # type: ignore[arg-type]  # a stand-in with only .app


# -- notification subscriptions and webhooks ------------------------------------------------------


async def _operator_ids(db: Any) -> dict[str, str]:
    async with db.read() as session:
        rows = (await session.execute(select(Operator.email, Operator.id))).all()
    return {email: oid for email, oid in rows}


async def test_owner_subscribes_an_operator_and_removes_the_subscription(db):
    console = await build_console(db)
    ops = await _operator_ids(db)
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http, "/console/notifications")
        url = "/console/notifications/subscriptions"
        added = await http.post(
            url, data={"csrf": token, "kind": "handoff", "subscriber": f"operator:{ops[AGENT]}", "route": "email"}
        )
        again = await http.post(
            url, data={"csrf": token, "kind": "handoff", "subscriber": f"operator:{ops[AGENT]}", "route": "email"}
        )
        listed = await http.get("/console/notifications")
        async with db.read() as session:
            sub_id = await session.scalar(select(NotificationSubscription.id))
        removed = await http.post(f"{url}/{sub_id}/delete", data={"csrf": token})
        removed_again = await http.post(f"{url}/{sub_id}/delete", data={"csrf": token})

    assert added.status_code == 303, added.text
    assert again.status_code == 409
    assert "already exists" in again.json()["error"]["message"]
    assert f'data-subscription="{sub_id}"' in listed.text
    assert "Agent" in listed.text
    assert removed.status_code == 303
    assert removed_again.status_code == 404
    async with db.read() as session:
        left = list(await session.scalars(select(NotificationSubscription)))
    assert left == []
    assert [r.details["kind"] for r in await _audit(db, "subscription_added")] == ["handoff"]
    assert [r.target for r in await _audit(db, "subscription_removed")] == [str(sub_id)]


async def test_subscribing_another_tenants_operator_is_refused(db):
    console = await build_console(db)
    ops = await _operator_ids(db)
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http, "/console/notifications")
        page = await http.get("/console/notifications")
        refused = await http.post(
            "/console/notifications/subscriptions",
            data={"csrf": token, "kind": "lead", "subscriber": f"operator:{ops[OTHER]}", "route": "any"},
        )

    assert ops[OTHER] not in page.text
    assert refused.status_code == 404
    async with db.read() as session:
        assert list(await session.scalars(select(NotificationSubscription))) == []
    assert await _audit(db, "subscription_added") == []


async def test_another_tenants_subscription_cannot_be_removed(db):
    console = await build_console(db)
    ops = await _operator_ids(db)
    async with client(console) as http:
        await sign_in(http, OTHER)
        token = await csrf_of(http, "/console/notifications")
        made = await http.post(
            "/console/notifications/subscriptions",
            data={"csrf": token, "kind": "lead", "subscriber": f"operator:{ops[OTHER]}", "route": "any"},
        )
    async with db.read() as session:
        sub_id = await session.scalar(select(NotificationSubscription.id))
    async with client(console) as http:
        await sign_in(http)
        listed = await http.get("/console/notifications")
        token = await csrf_of(http, "/console/notifications")
        refused = await http.post(f"/console/notifications/subscriptions/{sub_id}/delete", data={"csrf": token})

    assert made.status_code == 303
    assert f'data-subscription="{sub_id}"' not in listed.text
    assert refused.status_code == 404
    async with db.read() as session:
        assert list(await session.scalars(select(NotificationSubscription.id))) == [sub_id]
    assert await _audit(db, "subscription_removed") == []


async def test_an_agent_sees_subscriptions_but_cannot_change_them(db):
    console = await build_console(db, vault_key=generate_key())
    ops = await _operator_ids(db)
    async with client(console) as http:
        await sign_in(http, AGENT)
        page = await http.get("/console/notifications")
        token = await csrf_of(http, "/console/notifications")
        sub = await http.post(
            "/console/notifications/subscriptions",
            data={"csrf": token, "kind": "lead", "subscriber": f"operator:{ops[AGENT]}", "route": "any"},
        )
        hook = await http.post(
            "/console/notifications/webhooks", data={"csrf": token, "name": "crm", "url": "https://crm.example/h"}
        )

    assert page.status_code == 200
    assert 'action="/console/notifications/webhooks"' not in page.text
    assert sub.status_code == 403
    assert hook.status_code == 403
    async with db.read() as session:
        assert list(await session.scalars(select(NotificationWebhook))) == []
        assert list(await session.scalars(select(NotificationSubscription))) == []


async def test_invalid_subscription_input_is_a_clear_4xx(db):
    console = await build_console(db)
    ops = await _operator_ids(db)
    me = f"operator:{ops['owner@demo.test']}"
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http, "/console/notifications")
        url = "/console/notifications/subscriptions"
        answers = [
            await http.post(url, data={"csrf": token, **form})
            for form in [
                {"kind": "everything", "subscriber": me},
                {"kind": "lead", "subscriber": "someone"},
                {"kind": "lead", "subscriber": me, "route": "webhook"},
                {"kind": "lead", "subscriber": me, "route": "pigeon"},
                {"kind": "lead", "subscriber": "webhook:whk_nope"},
            ]
        ]
        bad_path = await http.post(f"{url}/not-a-number/delete", data={"csrf": token})

    assert [a.status_code for a in answers] == [422, 422, 422, 422, 404]
    assert "kind" in answers[0].json()["error"]["message"]
    assert "e-mail or Telegram" in answers[2].json()["error"]["message"]
    assert bad_path.status_code == 422


async def test_a_webhook_secret_is_generated_stored_in_the_vault_and_shown_once(db):
    console = await build_console(db, vault_key=generate_key())
    vault = console.runtime.channel_deps.accounts.vault
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http, "/console/notifications")
        created = await http.post(
            "/console/notifications/webhooks",
            data={"csrf": token, "name": "CRM bridge", "url": "https://crm.example/hooks/abc123?key=zz"},
        )
        async with db.read() as session:
            webhook = await session.scalar(select(NotificationWebhook))
        assert webhook is not None
        secret = await vault.get("demo", webhook.secret_name)
        assert secret
        subscribed = await http.post(
            "/console/notifications/subscriptions",
            data={"csrf": token, "kind": "lead", "subscriber": f"webhook:{webhook.id}", "route": "any"},
        )
        again = await http.get("/console/notifications")
        pages = await _reachable_pages(http)

    assert created.status_code == 201, created.text
    assert 'id="webhook-secret"' in created.text
    assert secret in created.text
    assert webhook.secret_name == f"notify/webhook/{webhook.id}"
    assert webhook.url == "https://crm.example/hooks/abc123?key=zz"
    assert subscribed.status_code == 303, subscribed.text
    assert 'id="webhook-secret"' not in again.text
    assert f'data-webhook="{webhook.id}"' in again.text
    assert "https://crm.example/…" in again.text
    for path, html in pages.items():
        assert secret not in html, path
        assert "abc123" not in html, path  # a webhook URL's path may itself be a secret
    async with db.read() as session:
        sub = await session.scalar(select(NotificationSubscription))
    assert sub is not None
    assert (sub.webhook_id, sub.route, sub.kind) == (webhook.id, "webhook", "lead")
    rows = await _audit(db, "webhook_added")
    assert [r.target for r in rows] == [webhook.id]
    assert secret not in str(rows[0].details)


async def test_a_webhook_needs_https_and_a_vault_key(db):
    plain = await build_console(db)
    async with client(plain) as http:
        await sign_in(http)
        page = await http.get("/console/notifications")
        token = await csrf_of(http, "/console/notifications")
        url = "/console/notifications/webhooks"
        no_key = await http.post(url, data={"csrf": token, "name": "crm", "url": "https://crm.example/h"})
        answers = [
            await http.post(url, data={"csrf": token, "name": name, "value": "", "url": target})
            for name, target in [
                ("crm", "http://crm.example/h"),
                ("crm", "http://127.0.0.1:9000/h"),
                ("crm", "ftp://crm.example"),
                ("crm", "not a url at all"),
                ("", "https://crm.example/h"),
                ("x" * 121, "https://crm.example/h"),
            ]
        ]

    assert "FRONTDESK_VAULT_KEY" in page.text
    assert no_key.status_code == 409
    assert "no vault key" in no_key.json()["error"]["message"]
    for answer in answers:
        assert answer.status_code == 422, answer.text
    assert "https://" in answers[0].json()["error"]["message"]
    async with db.read() as session:
        assert list(await session.scalars(select(NotificationWebhook))) == []
    assert await _audit(db, "webhook_added") == []


async def test_the_owner_sees_why_a_webhook_was_not_delivered(db):
    # A webhook saved before the outbound guard existed points at loopback: every delivery is
    # refused, and the owner reads why beside the webhook, not only in the attempts table.
    console = await build_console(db, vault_key=generate_key())
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http, "/console/notifications")
        saved = await http.post(
            "/console/notifications/webhooks",
            data={"csrf": token, "name": "CRM bridge", "url": "https://crm.example/hooks/abc123"},
        )
        assert saved.status_code == 201, saved.text
        async with db.transaction() as session:
            webhook = await session.scalar(select(NotificationWebhook))
            assert webhook is not None
            webhook.url = "https://127.0.0.1:9/hooks/abc123"
        before = await http.get("/console/notifications")
        async with db.transaction() as session:
            event = Event(
                tenant_id="demo",
                payload=ClaimRejectedSpike(count=5, window_minutes=15),
                recipients=(Recipient(webhook_id=webhook.id),),
            )
            await notify(session, event, now=console.runtime.clock.now())
        while await console.runtime.runner.run_once():
            pass
        after = await http.get("/console/notifications")

    def webhook_row(html: str) -> str:
        found = re.search(rf'<tr data-webhook="{webhook.id}">.*?</tr>', html, re.S)
        assert found is not None
        return found.group(0)

    assert "not sent yet" in webhook_row(before.text)
    row = webhook_row(after.text)
    assert "failed" in row
    assert "may not point at 127.0.0.1: a loopback address, not in outbound_allow" in row
    assert "abc123" not in after.text  # the reason names the host, never the URL's path


# -- read-only pages -----------------------------------------------------------------------------


async def test_catalog_shows_services_prices_and_a_photo_gallery(db):
    console = await build_console(db)
    async with client(console) as http:
        await sign_in(http, AGENT)
        page = await http.get("/console/catalog")
        photos = re.findall(r'<img src="(/media/catalog/demo/[^"]+)"', page.text)
        photo = await http.get(photos[0])

    assert page.status_code == 200
    assert 'data-service="business-cards"' in page.text
    assert "$45 / 250 cards" in page.text
    assert "3 days" in page.text
    assert len(photos) > 5
    assert photo.status_code == 200
    assert photo.headers["content-type"].startswith("image/")


async def test_a_business_without_a_catalog_says_so(db):
    console = await build_console(db)
    now = console.clock.now()
    async with db.transaction() as session:
        session.add(Tenant(id="club", name="Loyalty Club", pack="loyalty", policy={}, created_at=now))
    await add_operator(
        db, tenant_id="club", email="a@club.test", name="A", role="agent", password=PASSWORD, language="es", now=now
    )
    async with client(console) as http:
        await sign_in(http, "a@club.test")
        page = await http.get("/console/catalog")

    assert page.status_code == 200
    assert 'id="no-catalog"' in page.text
    assert "El catálogo está vacío." in page.text
    assert "<img" not in page.text


async def test_model_slots_show_provider_and_model_but_no_credentials(db, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-used")  # an embeddings slot is built at start-up
    # Credentials long enough that no random token on the page (a CSRF token) can contain them
    # by chance: "bob" once did.
    slot = "openai-compatible:https://llm-admin-7f3a9:hunter2-s3cret@llm.internal:8443/v1?api_key=sk-live-123#llama3.2"
    console = await build_console(db, model_utility=slot, model_embeddings="openai:text-embedding-3-small")
    async with client(console) as http:
        await sign_in(http, AGENT)
        page = await http.get("/console/models")

    assert page.status_code == 200
    assert "openai-compatible:https://***@llm.internal:8443/v1?***#llama3.2" in page.text
    assert "openai:text-embedding-3-small" in page.text
    for leak in ("hunter2-s3cret", "llm-admin-7f3a9", "sk-live-123", "api_key"):
        assert leak not in page.text
    assert 'data-slot="transcription"' in page.text
    assert "the chat slot transcribes" in page.text


def test_masked_slot():
    assert masked_slot(None) == ""
    assert masked_slot("anthropic:claude-haiku-4-5") == "anthropic:claude-haiku-4-5"
    assert masked_slot("openai-compatible:http://127.0.0.1:11434/v1#llama3.2") == (
        "openai-compatible:http://127.0.0.1:11434/v1#llama3.2"
    )
    assert masked_slot("openai-compatible:https://u@h/v1#m") == "openai-compatible:https://***@h/v1#m"
    assert masked_slot("openai-compatible:https://h:99999/v1#m") == "openai-compatible:***#m"
    assert masked_slot("script:user:pw@host") == "script:***@host"


async def test_the_new_pages_render_every_key_in_every_language(db):
    console = await build_console(db, vault_key=generate_key())
    ops = await _operator_ids(db)
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http, "/console/notifications")
        for kind in ("handoff", "lead", "delivery_failed", "claim_rejected_spike"):
            for route in ("any", "email", "telegram"):
                await http.post(
                    "/console/notifications/subscriptions",
                    data={"csrf": token, "kind": kind, "subscriber": f"operator:{ops[AGENT]}", "route": route},
                )
        await http.post(
            "/console/notifications/webhooks", data={"csrf": token, "name": "crm", "url": "https://crm.example/h"}
        )
        # business changes, for their audit labels
        await http.post("/console/catalog/flyers/active", data={"csrf": token, "active": "false"})
        await http.post("/console/catalog/flyers/move", data={"csrf": token, "direction": "up"})
    raw_key = re.compile(
        r"\b(?:notify|catalog|models|accounts|nav|audit|business|item|gallery|form|weekday)\.[a-z_.]+\b"
    )
    for language in ("en", "es", "vi"):
        async with db.transaction() as session:
            for operator in await session.scalars(select(Operator).where(Operator.tenant_id == "demo")):
                operator.language = language
        async with client(console) as http:
            await sign_in(http)
            for path in (
                "/console/accounts",
                "/console/notifications",
                "/console/catalog",
                "/console/models",
                "/console/business",
                "/console/catalog/new",
                "/console/catalog/flyers",
                "/console/audit",
            ):
                page = await http.get(path)
                assert page.status_code == 200, (language, path)
                assert f'lang="{language}"' in page.text
                shown = re.sub(r'data-action="[^"]*"', "", page.text)  # the audit rows' own action names
                assert raw_key.findall(shown) == [], (language, path)
