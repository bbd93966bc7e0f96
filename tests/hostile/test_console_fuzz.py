"""The console's forms, signed in: what an owner's browser (or someone holding their session)
could post, with hostile values.

The route sweep (``test_routes_fuzz``) reaches the console only signed out, where everything stops
at the sign-in check. Here an owner is signed in and every POST form gets its own fields with
any text, unknown fields, real ids of this tenant, another tenant's ids and any path value,
with a valid CSRF token four times in five. A refusal answers in the error body (or, for the
policy, business profile, catalog item and photo upload forms, shows the form again with its
errors) and stores nothing; nothing answers 5xx.
"""

from __future__ import annotations

import base64
import re
from typing import Any
from urllib.parse import quote

import pytest
from hostile_harness import HostileApp, hostile_fixture
from hostile_kit import fuzz
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.business import BusinessStore
from frontdesk.business.profile import WEEKDAYS
from frontdesk.cli_operators import add_operator
from frontdesk.context.identity import IdentityPolicy
from frontdesk.humans.console._item_form import item_values
from frontdesk.humans.console.pages_business import profile_values
from frontdesk.humans.tasks import open_task
from frontdesk.ingestion.events import InboundMessage

PASSWORD = "correct horse battery"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')

ITEM_FIELDS = (
    "id", "category", "name.en", "name.vi", "summary.en", "description.es", "price.kind", "price.currency",
    "price.unit.en", "tiers.0.quantity", "tiers.0.amount", "tiers.0.label.en", "tiers.5.amount",
    "turnaround_days", "min_quantity", "synonyms.vi", "active",
)  # fmt: skip
# Every POST form of the console but signing in and out, with the fields its page posts.
FORMS: dict[str, tuple[str, ...]] = {
    "/console/conversations/{conversation_id}/reply": ("text",),
    "/console/conversations/{conversation_id}/ai": ("enabled",),
    "/console/receipts/{receipt_id}/replay": (),
    "/console/tasks/{task_id}": ("status", "assignee"),
    "/console/policy": tuple(IdentityPolicy.model_fields),
    "/console/accounts/{account_id}/credentials": ("name", "value"),
    "/console/notifications/subscriptions": ("kind", "subscriber", "route"),
    "/console/notifications/subscriptions/{subscription_id}/delete": (),
    "/console/notifications/webhooks": ("name", "url"),
    "/console/business": (
        "name",
        "description.en",
        "address",
        "phone",
        "email",
        "website",
        "timezone",
        *(f"hours.{day}" for day in WEEKDAYS),
        "new_exception.date",
        "new_exception.closed",
        "new_exception.hours",
        "new_exception.note.vi",
        "notes.es",
        "remove_exception",
    ),
    "/console/catalog/new": ITEM_FIELDS,
    "/console/catalog/{item_id}": ITEM_FIELDS[1:],  # the id is the page's
    "/console/catalog/{item_id}/active": ("active",),
    "/console/catalog/{item_id}/move": ("direction",),
    "/console/catalog/{item_id}/photos": ("photo", "caption.en"),  # a text where the file belongs
    "/console/catalog/{item_id}/photos/{photo_id}/caption": ("caption.en", "caption.vi"),
    "/console/catalog/{item_id}/photos/{photo_id}/move": ("direction",),
    "/console/catalog/{item_id}/photos/{photo_id}/remove": (),
}
# The console forms that answer a refused value with the form again, its problems shown (a 422 page).
FORM_PAGES = {
    "/console/policy",
    "/console/business",
    "/console/catalog/new",
    "/console/catalog/{item_id}",
    "/console/catalog/{item_id}/photos",
}
FAIR_VALUES = ["true", "false", "open", "done", "", "owner", "UTC", "en", "bot_token", "https://hooks.example.com/x"]
FAIR_VALUES += ["handoff", "operator:owner", "webhook:x", "any", "Hi, your order is ready."]
FAIR_VALUES += ["up", "down", "on_request", "amounts", "USD", "VND", "12", "45.50", "09:00-18:00", "2031-01-01"]
FAIR_VALUES += ["+1 555 0100 123", "Asia/Ho_Chi_Minh", "fuzz-item", "business-cards"]

# A vault key, as in production: credentials and webhook secrets are sealed.
hostile = hostile_fixture("hostile-console", quiet_window_s=0, vault_key=base64.b64encode(bytes(range(32))).decode())


@pytest.fixture(scope="module")
def owner(hostile: HostileApp) -> dict[str, str]:
    """An owner of the demo tenant, signed in on the app's client; returns real ids to aim at."""
    runtime = hostile.runtime
    hostile.run(
        add_operator(
            hostile.db, tenant_id="demo", email="owner@demo.test", name="Owner", role="owner",
            password=PASSWORD, language="en", now=runtime.clock.now(),
        )
    )  # fmt: skip
    stored = hostile.run(
        runtime.ingestor.ingest(
            InboundMessage(
                channel_account_id="demo-webchat", contact_external_id="fuzz-1", channel_message_id="m1", text="hi"
            )
        )
    )
    hostile.run(runtime.runner.run_once())  # the turn: a reply with its receipt

    async def a_task() -> str:
        async with hostile.db.transaction() as session:
            task = await open_task(
                session, tenant_id="demo", conversation_id=str(stored.conversation_id), kind="handoff",
                priority="high", title="fuzz", details={}, now=runtime.clock.now(),
            )  # fmt: skip
            return str(task.id)

    ids = {"conversation_id": str(stored.conversation_id), "task_id": hostile.run(a_task())}
    login = hostile.run(hostile.client.get("/console/login"))
    token = CSRF.search(login.text)
    assert token is not None
    form = {"csrf": token[1], "email": "owner@demo.test", "password": PASSWORD}
    signed = hostile.run(hostile.client.post("/console/login", data=form))
    assert signed.status_code == 303, signed.text
    page = hostile.run(hostile.client.get("/console/conversations"))
    token = CSRF.search(page.text)
    assert token is not None
    ids["csrf"] = token[1]
    ids["receipt_id"] = _first_id(hostile.run(hostile.client.get("/console/deliveries")).text, "receipts")
    ids["account_id"] = "hostile-messenger"
    ids["subscription_id"] = "1"
    ids["item_id"], ids["photo_id"] = "business-cards", "business-cards-1"
    return ids


# One form each that an owner's browser would post and the console accepts: the fuzz below then
# runs with a session and token that work, not against a wall of 401s and 403s.
FAIR_FORMS: dict[str, dict[str, str]] = {
    "/console/conversations/{conversation_id}/reply": {"text": "Hi, your order is ready."},
    "/console/conversations/{conversation_id}/ai": {"enabled": "false"},
    "/console/tasks/{task_id}": {"status": "done", "assignee": ""},
    "/console/policy": {k: str(v) for k, v in IdentityPolicy().model_dump().items()},
    "/console/accounts/{account_id}/credentials": {"name": "page_access_token", "value": "fuzz-token"},
    "/console/notifications/webhooks": {"name": "ops", "url": "https://hooks.example.com/frontdesk"},
}


# A real PNG (1x1, grey): the fair upload.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010800000000"
    "3a7e9b550000000a49444154789c63680000008200818cd8ebb50000000049454e44ae426082"
)


def _business_fair_forms(hostile: HostileApp, owner: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """The business forms as their pages show them (route, request), each saved with one change;
    the photo uploaded here is the one removed last, so the real photo ids stay for the fuzz."""
    data = hostile.run(BusinessStore(hostile.db, hostile.runtime.clock).read("demo"))
    cards = data.item(owner["item_id"])
    assert cards is not None
    item = {k: v for k, v in item_values(cards).items() if k != "id"}
    new_photo = f"{cards.id}-{len(cards.photos) + 1}"
    photo_path = "/console/catalog/{item_id}/photos/" + new_photo
    return [
        ("/console/business", {"data": profile_values(data) | {"hours.sun": "10:00-12:00"}}),
        ("/console/catalog/new", {"data": {"id": "fuzz-item", "name.en": "Fuzz item", "price.kind": "on_request"}}),
        ("/console/catalog/{item_id}", {"data": item | {"tiers.0.amount": "52"}}),
        ("/console/catalog/{item_id}/active", {"data": {"active": "true"}}),
        ("/console/catalog/{item_id}/move", {"data": {"direction": "down"}}),
        ("/console/catalog/{item_id}/photos/{photo_id}/caption", {"data": {"caption.en": "Fair caption"}}),
        ("/console/catalog/{item_id}/photos/{photo_id}/move", {"data": {"direction": "down"}}),
        ("/console/catalog/{item_id}/photos", {"data": {}, "files": {"photo": ("fair.png", PNG, "image/png")}}),
        (f"{photo_path}/remove", {"data": {}}),
    ]


def test_every_console_form_refuses_hostile_values_cleanly_when_signed_in(
    hostile: HostileApp, owner: dict[str, str]
) -> None:
    fair_forms = [(route, {"data": form}) for route, form in FAIR_FORMS.items()]
    for route, request in fair_forms + _business_fair_forms(hostile, owner):
        request = {**request, "data": {**request["data"], "csrf": owner["csrf"]}}
        accepted = hostile.exchange("fair form", "POST", _path(route, owner, "real"), **request)
        assert accepted.status_code in (200, 201, 303), f"{route}: {accepted.status_code} {accepted.text[:300]}"

    @fuzz(1000)  # nine business routes joined the nine before: each keeps its share
    @given(
        route=st.sampled_from(sorted(FORMS)),
        path_value=st.sampled_from(["real", "real", "real", "other-tenant", "0", "-1", "9" * 30, "..", "%00"])
        | st.text(max_size=30),
        fields=st.data(),
        extra=st.dictionaries(st.text(max_size=10), st.text(max_size=20), max_size=2),
        csrf=st.sampled_from(["valid", "valid", "valid", "valid", "broken"]),
    )
    def post(route: str, path_value: str, fields: Any, extra: dict[str, str], csrf: str) -> None:
        form: dict[str, str] = {
            name: fields.draw(st.sampled_from(FAIR_VALUES) | st.text(max_size=200), label=name) for name in FORMS[route]
        }
        form = {**extra, **form, "csrf": owner["csrf"] if csrf == "valid" else owner["csrf"][:-1] + "x"}
        path = _path(route, owner, path_value)
        response = hostile.exchange(
            f"POST {route} (signed in)",
            "POST",
            path,
            data=form,
            form_page=route in FORM_PAGES,
            may_store=("console_audit",) if route.endswith("/replay") else (),  # a refused replay is audited
        )
        if csrf == "broken":
            assert response.status_code not in (200, 201, 303), f"{path} accepted a forged token"
            if path_value == "real":
                assert response.status_code == 403, f"{path}: {response.status_code} {response.text[:300]}"

    post()


def _path(route: str, owner: dict[str, str], path_value: str) -> str:
    """``route`` with its ids: this tenant's real ones, the other tenant's account, or ``path_value``."""
    path = route
    for name in re.findall(r"{(\w+)}", route):
        value = owner[name] if path_value == "real" else "other-webchat" if path_value == "other-tenant" else path_value
        path = path.replace("{" + name + "}", quote(value, safe="") or "x")
    return path


def _first_id(html: str, kind: str) -> str:
    found = re.search(rf"/console/{kind}/(\d+)/", html)
    return found[1] if found else "1"
