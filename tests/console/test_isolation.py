"""Every console route refuses another tenant's ids (404, never data), every post without the
CSRF token is refused (403), and every page wants a session."""

from __future__ import annotations

import pytest
from console_kit import OTHER_ITEM, OTHER_PHOTO, build_console, client, csrf_of, png, sign_in
from sqlalchemy import select

from frontdesk.business import BusinessStore
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.schema import Conversation, Message, Task, TurnTrace
from frontdesk.platform.store.schema_console import AuditEntry

# Every route that takes an id, with the kind of id it takes.
ID_ROUTES = [
    ("POST", "/console/operators/{other_operator}/active"),
    ("POST", "/console/operators/{other_operator}/role"),
    ("POST", "/console/operators/{other_operator}/password"),
    ("POST", "/console/operators/{other_operator}/sign-out"),
    ("POST", "/console/operators/{other_operator}/delete"),
    ("GET", "/console/conversations/{other_conversation}"),
    ("GET", "/console/conversations/{other_conversation}/messages"),
    ("GET", "/console/conversations/{other_conversation}/stream"),
    ("POST", "/console/conversations/{other_conversation}/ai"),
    ("POST", "/console/conversations/{other_conversation}/reply"),
    ("POST", "/console/conversations/{other_conversation}/assign"),
    ("GET", "/console/conversations/{other_conversation}/turns/{other_turn}/scenario"),
    ("POST", "/console/conversations/{other_conversation}/turns/{other_turn}/scenario"),
    ("GET", "/console/conversations/{own_conversation}/turns/{other_turn}/scenario"),
    # Our own thread with the other tenant's turn.
    ("POST", "/console/conversations/{own_conversation}/turns/{other_turn}/scenario"),
    ("GET", "/console/scenarios/{other_scenario}.yaml"),
    ("POST", "/console/receipts/{other_receipt}/replay"),
    ("POST", "/console/tasks/{other_task}"),
    ("POST", "/console/accounts/other-webchat/credentials"),
    ("GET", "/console/catalog/{other_item}"),
    ("POST", "/console/catalog/{other_item}"),
    ("POST", "/console/catalog/{other_item}/active"),
    ("POST", "/console/catalog/{other_item}/move"),
    ("POST", "/console/catalog/{other_item}/photos"),
    ("POST", "/console/catalog/{other_item}/photos/{other_photo}/caption"),
    ("POST", "/console/catalog/{other_item}/photos/{other_photo}/move"),
    ("POST", "/console/catalog/{other_item}/photos/{other_photo}/remove"),
    # The other tenant's photo under an item of our own.
    ("POST", "/console/catalog/business-cards/photos/{other_photo}/caption"),
    ("POST", "/console/catalog/business-cards/photos/{other_photo}/move"),
    ("POST", "/console/catalog/business-cards/photos/{other_photo}/remove"),
]
# The form each route posts, by the first key found in its path.
FORMS = {
    "ai": {"enabled": "false"},
    "reply": {"text": "leak?"},
    "assign": {"assignee": "me"},
    "scenario": {"note": "leak?", "reply": "leak?"},
    "replay": {},
    "tasks": {"status": "done"},
    "credentials": {"name": "bot_token", "value": "leak?"},
    "delete": {},
    "subscriptions": {"kind": "lead", "subscriber": "operator:nobody", "route": "any"},
    "webhooks": {"name": "leak", "url": "https://example.test/hook"},
    "caption": {"caption.en": "leak?"},
    "move": {"direction": "down"},
    "remove": {},
    "active": {"active": "false"},
    "photos": {"caption.en": "leak?"},
    "catalog": {
        "id": "leak",
        "category": "leak",
        "name.en": "leak?",
        "price.kind": "amounts",
        "price.currency": "USD",
        "tiers.0.quantity": "1",
        "tiers.0.amount": "1",
        "min_quantity": "1",
    },
}
UPLOAD = {"photo": ("leak.png", png(7), "image/png")}
POSTS = [
    "/console/logout",
    "/console/policy",
    "/console/conversations/{own_conversation}/ai",
    "/console/conversations/{own_conversation}/reply",
    "/console/conversations/{own_conversation}/assign",
    "/console/conversations/{own_conversation}/turns/{own_turn}/scenario",
    "/console/receipts/{own_receipt}/replay",
    "/console/tasks/{own_task}",
    "/console/login",
    "/console/accounts/demo-flaky/credentials",
    "/console/notifications/subscriptions",
    "/console/notifications/subscriptions/1/delete",
    "/console/notifications/webhooks",
    "/console/business",
    "/console/catalog/new",
    "/console/catalog/business-cards",
    "/console/catalog/business-cards/active",
    "/console/catalog/business-cards/move",
    "/console/catalog/business-cards/photos",
    "/console/catalog/business-cards/photos/business-cards-1/caption",
    "/console/catalog/business-cards/photos/business-cards-1/move",
    "/console/catalog/business-cards/photos/business-cards-1/remove",
]
PAGES = [
    "/console/conversations",
    "/console/policy",
    "/console/tasks",
    "/console/audit",
    "/console/accounts",
    "/console/reports",
    "/console/rejections",
    "/console/scenarios",
    "/console/deliveries",
    "/console/notifications",
    "/console/catalog",
    "/console/catalog/new",
    "/console/catalog/business-cards",
    "/console/business",
    "/console/models",
]


def _form(path: str) -> dict[str, str]:
    return next((form for key, form in FORMS.items() if f"/{key}" in path), {})


def _files(path: str) -> dict[str, tuple[str, bytes, str]] | None:
    return UPLOAD if path.endswith("/photos") else None


async def _catalog_of(db, tenant: str) -> tuple[int, list[tuple[str, bool, list[tuple[str, dict]]]]]:
    data = await BusinessStore(db, SystemClock()).read(tenant)
    return data.revision, [(i.id, i.active, [(p.id, dict(p.caption)) for p in i.photos]) for i in data.items]


@pytest.mark.parametrize(("method", "path"), ID_ROUTES)
async def test_route_refuses_another_tenants_id(db, method, path):
    console = await build_console(db)
    url = path.format(**console.ids, **(await _own_ids(console) if "own_" in path else {}))
    other_catalog = await _catalog_of(db, "other")
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http)
        if method == "GET":
            response = await http.get(url)
        else:
            response = await http.post(url, data={"csrf": token, **_form(path)}, files=_files(path))

    assert response.status_code == 404, response.text
    assert "hello from the other shop" not in response.text
    for other_id in (OTHER_ITEM, OTHER_PHOTO, "Other shop cards", "other tenant photo"):
        assert other_id not in response.text  # not even the id it was given
    assert await _catalog_of(db, "other") == other_catalog
    async with db.read() as session:  # and nothing happened to the other tenant's rows
        conversation = await session.get(Conversation, console.ids["other_conversation"])
        task = await session.get(Task, console.ids["other_task"])
        other_messages = list(
            await session.scalars(select(Message).where(Message.conversation_id == console.ids["other_conversation"]))
        )
        leaked = list(
            await session.scalars(
                select(AuditEntry).where(
                    AuditEntry.tenant_id == "demo", AuditEntry.action.not_in(["signed_in", "operator_added"])
                )
            )
        )
    assert conversation is not None
    assert conversation.ai_enabled is True
    assert task is not None
    assert task.status == "open"
    assert len(other_messages) == 2
    assert leaked == []


async def test_lists_show_only_the_operators_tenant(db):
    console = await build_console(db)
    async with client(console) as http:
        await sign_in(http)
        pages = [(await http.get(path)).text for path in PAGES]

    for page in pages:
        assert console.ids["other_conversation"] not in page
        assert console.ids["other_task"] not in page
        assert "Other web chat" not in page
        assert "other tenant task" not in page
        assert "other tenant rejected reply" not in page
        assert "other tenant scenario" not in page
        assert f'data-receipt="{console.ids["other_receipt"]}"' not in page
        assert OTHER_ITEM not in page
        assert "Other shop cards" not in page
        assert "other tenant photo" not in page


async def _own_ids(console) -> dict[str, str]:
    conversation_id = await console.customer_says("demo-webchat", "mine", "hello")
    await console.drain()
    async with console.runtime.db.read() as session:
        from frontdesk.platform.store.schema import Receipt

        receipt = await session.scalar(select(Receipt.id).where(Receipt.conversation_id == conversation_id))
    async with console.runtime.db.transaction() as session:
        from frontdesk.humans.tasks import open_task

        task = await open_task(
            session,
            tenant_id="demo",
            conversation_id=conversation_id,
            kind="follow_up",
            priority="normal",
            title="call back",
            details={},
            now=console.clock.now(),
        )
    async with console.runtime.db.read() as session:
        turn = await session.scalar(select(TurnTrace.id).where(TurnTrace.conversation_id == conversation_id))
    return {
        "own_conversation": conversation_id,
        "own_receipt": str(receipt),
        "own_task": task.id,
        "own_turn": str(turn),
    }


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize("token", ["missing", "wrong"])
async def test_post_without_the_csrf_token_is_refused(db, path, token):
    console = await build_console(db)
    ids = await _own_ids(console)
    url = path.format(**ids)
    async with client(console) as http:
        await sign_in(http)
        data = {**_form(path), "email": "owner@demo.test", "password": "x" * 12}
        if token == "wrong":
            data["csrf"] = "forged-token"
        response = await http.post(url, data=data, files=_files(path))
        still_signed_in = await http.get("/console/conversations")

    assert response.status_code == 403, response.text
    assert still_signed_in.status_code == 200  # a forged logout did not sign anyone out
    async with db.read() as session:
        conversation = await session.get(Conversation, ids["own_conversation"])
        audit = list(
            await session.scalars(
                select(AuditEntry.action).where(AuditEntry.action.not_in(["signed_in", "operator_added"]))
            )
        )
    assert conversation is not None
    assert conversation.ai_enabled is True
    assert audit == []


@pytest.mark.parametrize("path", PAGES)
async def test_page_without_a_session_goes_to_sign_in(db, path):
    console = await build_console(db)
    async with client(console) as http:
        response = await http.get(path)

    assert response.status_code == 303
    assert response.headers["location"] == "/console/login"


async def test_post_without_a_session_is_401(db):
    console = await build_console(db)
    ids = await _own_ids(console)
    async with client(console) as http:
        response = await http.post(f"/console/conversations/{ids['own_conversation']}/ai", data={"enabled": "false"})

    assert response.status_code == 401


@pytest.mark.parametrize("name", ["../__init__.py", "console.html", "..%2F__init__.py", "auth.py"])
async def test_only_the_listed_static_files_are_served(db, name):
    console = await build_console(db)
    async with client(console) as http:
        response = await http.get(f"/console/static/{name}")
        htmx = await http.get("/console/static/htmx.min.js")

    assert response.status_code == 404
    assert htmx.status_code == 200
    assert htmx.headers["content-type"].startswith("text/javascript")


async def test_oversized_form_is_refused_before_it_is_read(db):
    console = await build_console(db)
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http)
        response = await http.post("/console/policy", data={"csrf": token, "tone": "x" * 70_000})

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
