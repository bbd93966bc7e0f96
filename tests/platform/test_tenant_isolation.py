"""Tenant isolation outside the console: two shops, each with every channel, its own secrets,
an owner and data; Alpha tries every id-taking route and every webhook with Bravo's ids, secrets
and signed requests, and gets nowhere: no answer shows Bravo's data, no row of Bravo's changes,
no row is bound across shops. A correctly signed payload that names a sender who exists in Bravo
lands in Alpha (a new contact of Alpha's), answered with Alpha's credentials.

The routes come from the app's router: an id-taking route (a path or query parameter) without a
case here, or in the console's own matrix (tests/console/test_isolation.py), fails the first test.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import ANY

# The console's own isolation matrix, which covers the console's id-taking routes.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "console"))

from fastapi.routing import APIRoute, iter_route_contexts
from sqlalchemy import select
from tenancy_kit import (
    ALPHA,
    BRAVO,
    CHANNELS,
    ECHO,
    META,
    WEBHOOK_CHANNELS,
    Shop,
    batch,
    inbound,
    signed,
    two_shops,
    webhook_url,
    whatsapp_status,
)
from tenancy_probe import Attempt, Route, misbound, run_attempts, tenant_rows
from test_isolation import ID_ROUTES as CONSOLE_ID_ROUTES
from test_isolation import PAGES as CONSOLE_PAGES

from frontdesk.app import create_app
from frontdesk.output.transcript import read_transcript
from frontdesk.platform.models.gateway import ModelGateway
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Contact, Conversation
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from harness import script_client, wait_idle

A, B = ALPHA, BRAVO
SESSION = re.compile(r"[A-Za-z0-9._:-]{16,128}")  # what the web chat takes as a session id
WEBHOOK = {channel: ("POST", f"/webhooks/{channel}/{{account_id}}") for channel in WEBHOOK_CHANNELS}
VERIFY = {channel: ("GET", f"/webhooks/{channel}/{{account_id}}") for channel in META}
CHAT_POST = ("POST", "/v1/webchat/{channel_account_id}/messages")
CHAT_GET = ("GET", "/v1/webchat/{channel_account_id}/messages")
CHAT_STREAM = ("GET", "/v1/webchat/{channel_account_id}/stream")
CHAT_PAGE = ("GET", "/webchat/{channel_account_id}")
MEDIA = ("GET", "/media/m/{key:path}")
PHOTO = ("GET", "/media/catalog/{tenant_id}/{file}")
# Console routes the console's matrix leaves out: notification subscriptions name ids too.
SUB_DELETE = ("POST", "/console/notifications/subscriptions/{subscription_id}/delete")
SUB_ADD = ("POST", "/console/notifications/subscriptions")

# What Alpha tries on each route.
OUR_CREDENTIALS_ON_THEIR_ACCOUNTS = "Alpha's credentials on each of Bravo's accounts"
THEIR_SIGNED_REQUEST = "a request Bravo's platform signed, replayed to Alpha's account"
ADDRESSED_TO_THEM = "signed for Alpha, addressed to Bravo's page / number / bot"
ONE_BATCH_FOR_BOTH = "signed for Alpha, one batch with an entry for Alpha and one for Bravo"
THEIR_CUSTOMER = "signed for Alpha, naming Bravo's customer and message ids"
THEIR_STATUS = "signed for Alpha, a delivery status of a message Bravo sent"
THEIR_VERIFY_TOKEN = "Bravo's verify token on Alpha's account"
THEIR_SESSIONS = "Bravo's customer ids as sessions on Alpha's web chat"
THEIR_OTHER_ACCOUNTS = "Bravo's non-web-chat accounts, with their customers' ids"
THEIR_WEBCHAT_OTHER_IDS = "Bravo's other channels' customer ids on Bravo's web chat"
THEIR_KEY_OUR_SIGNATURE = "Bravo's media key under Alpha's link signature"
OUR_LINK_THEIR_PREFIX = "Alpha's link with Bravo's prefix (the same picture)"
THEIR_KEY_UNSIGNED = "Bravo's media key, unsigned"
THEIR_KEY_LEGACY = "Bravo's media key in the legacy form, Alpha's signature"
THEIR_PHOTO_OUR_TENANT = "Bravo's catalog photo under Alpha's tenant"
OUR_PHOTO_THEIR_TENANT = "Alpha's catalog photo under Bravo's tenant"
THEIR_SUBSCRIPTIONS = "Bravo's subscription ids"
THEIR_SUBSCRIBERS = "Bravo's operator and webhook as subscribers"

MATRIX: dict[tuple[str, str], tuple[str, ...]] = {
    **{
        route: (OUR_CREDENTIALS_ON_THEIR_ACCOUNTS, THEIR_SIGNED_REQUEST, THEIR_CUSTOMER)
        + ((ADDRESSED_TO_THEM,) if channel != "telegram" else ())  # an update names no bot
        + ((ONE_BATCH_FOR_BOTH,) if channel in META else ())  # Meta batches entries of several pages
        + ((THEIR_STATUS,) if channel == "whatsapp" else ())  # the only channel with status callbacks
        for channel, route in WEBHOOK.items()
    },
    **{route: (OUR_CREDENTIALS_ON_THEIR_ACCOUNTS, THEIR_VERIFY_TOKEN) for route in VERIFY.values()},
    CHAT_POST: (THEIR_SESSIONS, THEIR_OTHER_ACCOUNTS),
    CHAT_GET: (THEIR_SESSIONS, THEIR_OTHER_ACCOUNTS, THEIR_WEBCHAT_OTHER_IDS),
    CHAT_STREAM: (THEIR_SESSIONS, THEIR_OTHER_ACCOUNTS, THEIR_WEBCHAT_OTHER_IDS),
    CHAT_PAGE: (THEIR_OTHER_ACCOUNTS,),
    MEDIA: (THEIR_KEY_OUR_SIGNATURE, OUR_LINK_THEIR_PREFIX, THEIR_KEY_UNSIGNED, THEIR_KEY_LEGACY),
    PHOTO: (THEIR_PHOTO_OUR_TENANT, OUR_PHOTO_THEIR_TENANT),
    SUB_DELETE: (THEIR_SUBSCRIPTIONS,),
    SUB_ADD: (THEIR_SUBSCRIBERS,),
}
# Id-taking routes that serve no tenant's data.
NO_TENANT_DATA = {
    ("GET", "/console/static/{name}"): "the console's own scripts and styles",
    # Its query is the inbox's own filter, always within the session's tenant; it sends only a
    # hash of that tenant's list (test_inbox.py checks search never lists another tenant's thread).
    ("GET", "/console/inbox/stream"): "a hash of the operator's own tenant's list",
}


def _template(path: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)))


def _console_covered(method: str, path: str) -> bool:
    pattern = _template(path)
    return any(m == method and pattern.fullmatch(p) for m, p in CONSOLE_ID_ROUTES) or (
        method == "GET" and path in CONSOLE_PAGES
    )


def id_taking_routes(app) -> set[tuple[str, str]]:
    """Every (method, path) whose route takes a path or query parameter."""
    routes = set()
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute) and (route.dependant.path_params or route.dependant.query_params):
            routes |= {(method, context.path) for method in route.methods}
    return routes


async def test_every_id_taking_route_has_an_isolation_case(tmp_path):
    db = Database.from_url(f"sqlite+aiosqlite:///{tmp_path / 'routes.db'}")
    runtime = Runtime.build(Settings(), gateway=ModelGateway.with_clients({"chat": script_client(ECHO)}), db=db)
    try:
        routes = id_taking_routes(create_app(runtime, run_workers=False))
    finally:
        await runtime.close()

    uncovered = sorted(r for r in routes if r not in MATRIX and r not in NO_TENANT_DATA and not _console_covered(*r))
    assert uncovered == [], "add a case to MATRIX (or the console's ID_ROUTES) for these routes"
    stale = sorted(r for r in [*MATRIX, *NO_TENANT_DATA] if r not in routes and r != SUB_ADD)
    assert stale == []  # SUB_ADD takes its ids in the form, so the router does not list it


def attempts(world) -> list[Attempt]:
    """The matrix as requests. Reads come before writes: a write creates Alpha's own rows under
    ids that a later read would then rightly find."""
    return [*_webchat_reads(), *_handshakes(), *_media(world), *_webhooks(world), *_webchat_writes(), *_console(world)]


def _as_session(customer: str, expect: int) -> int:
    """``expect``, for a customer id that can be a web chat session; else the 422 that refuses it
    before any lookup (a session id is 16 to 128 characters: a Telegram user id or a phone number
    is too short)."""
    return expect if SESSION.fullmatch(customer) else 422


def _webchat_reads() -> Iterator[Attempt]:
    for route in (CHAT_STREAM, CHAT_GET):
        path = route[1].removeprefix("/v1/webchat/{channel_account_id}")
        for channel in CHANNELS:
            url = f"/v1/webchat/{A.account('webchat')}{path}?session={B.customer(channel)}"
            yield _read(route, THEIR_SESSIONS, url, _as_session(B.customer(channel), 200))
        for channel in WEBHOOK_CHANNELS:
            url = f"/v1/webchat/{B.account(channel)}{path}?session={B.customer(channel)}"
            yield Attempt(route, THEIR_OTHER_ACCOUNTS, url, _as_session(B.customer(channel), 404))
            url = f"/v1/webchat/{B.account('webchat')}{path}?session={B.customer(channel)}"
            yield _read(route, THEIR_WEBCHAT_OTHER_IDS, url, _as_session(B.customer(channel), 200))
    for channel in WEBHOOK_CHANNELS:
        yield Attempt(CHAT_PAGE, THEIR_OTHER_ACCOUNTS, f"/webchat/{B.account(channel)}", 404)


def _read(route: Route, kind: str, url: str, expect: int) -> Attempt:
    """A read of the transcript or the stream; one let in must find no conversation."""
    if route == CHAT_STREAM:  # Last-Event-ID 0:0: a stream bound to a thread replays all of it at once
        return Attempt(route, kind, url, expect, stream=True, headers={"Last-Event-ID": "0:0"})
    return Attempt(route, kind, url, expect, {"messages": []} if expect == 200 else None)


def _handshakes() -> Iterator[Attempt]:
    def query(shop: Shop, channel: str) -> str:
        return f"?hub.mode=subscribe&hub.challenge=31337&hub.verify_token={shop.secrets(channel)['verify_token']}"

    for channel, route in VERIFY.items():
        for target in CHANNELS:
            url = webhook_url(channel, B.account(target)) + query(A, channel)
            yield Attempt(route, OUR_CREDENTIALS_ON_THEIR_ACCOUNTS, url, 403 if target == channel else 404)
        yield Attempt(route, THEIR_VERIFY_TOKEN, webhook_url(channel, A.account(channel)) + query(B, channel), 403)


def _media(world) -> Iterator[Attempt]:
    ours = world.runtime.channel_deps.media.signed_url(world.ids["a.media.same"], "")
    theirs, signature = world.ids["b.media.own"], ours.split("?")[1]
    yield Attempt(MEDIA, THEIR_KEY_OUR_SIGNATURE, f"/media/m/{theirs}?{signature}", 401)
    yield Attempt(MEDIA, OUR_LINK_THEIR_PREFIX, ours.replace(f"/{A.tenant}/", f"/{B.tenant}/"), 401)
    yield Attempt(MEDIA, THEIR_KEY_UNSIGNED, f"/media/m/{theirs}", 401)
    yield Attempt(MEDIA, THEIR_KEY_LEGACY, f"/media/m/{theirs.split('/', 1)[1]}?{signature}", 401)
    # A business's gallery photos are public, each under its own tenant only.
    yield Attempt(PHOTO, THEIR_PHOTO_OUR_TENANT, f"/media/catalog/{A.tenant}/{world.ids['b.photo']}", 404)
    yield Attempt(PHOTO, OUR_PHOTO_THEIR_TENANT, f"/media/catalog/{B.tenant}/{world.ids['a.photo']}", 404)


def _webhooks(world) -> Iterator[Attempt]:
    for channel, route in WEBHOOK.items():
        kinds = MATRIX[route]
        post = functools.partial(_signed_post, route, channel)
        ours = webhook_url(channel, A.account(channel))
        theirs = inbound(channel, B, B.customer(channel), B.key(channel, 1), B.said(channel))
        for target in CHANNELS:
            expect = 401 if target == channel else 404
            yield post(OUR_CREDENTIALS_ON_THEIR_ACCOUNTS, webhook_url(channel, B.account(target)), theirs, A, expect)
        yield post(THEIR_SIGNED_REQUEST, ours, theirs, B, 401)
        to_them = inbound(channel, B, A.customer(channel), A.key(channel, 1), f"alpha to bravo on {channel}")
        if ADDRESSED_TO_THEM in kinds:
            yield post(ADDRESSED_TO_THEM, ours, to_them, A, 200, {"ok": True, "ignored": 1})
        if ONE_BATCH_FOR_BOTH in kinds:
            to_us = inbound(channel, A, A.customer(channel), A.key(channel, 2), f"alpha batched on {channel}")
            both = batch(to_us, to_them)
            yield post(ONE_BATCH_FOR_BOTH, ours, both, A, 200, {"ok": True, "stored": 1, "ignored": 1})
        naming = inbound(channel, A, B.customer(channel), B.key(channel), f"alpha as bravo's customer on {channel}")
        yield post(THEIR_CUSTOMER, ours, naming, A, 200, {"ok": True, "stored": 1})
        if THEIR_STATUS in kinds:
            status = whatsapp_status(A, world.ids["b.wamid"], "failed")
            yield post(THEIR_STATUS, ours, status, A, 200, {"ok": True, "status_unknown": 1})


def _signed_post(
    route: Route, channel: str, kind: str, url: str, raw: bytes, signer: Shop, expect: int, answer: Any = None
) -> Attempt:
    """``raw`` posted to ``url`` with the headers ``signer``'s platform would send."""
    return Attempt(route, kind, url, expect, answer, body=raw, headers=signed(channel, signer, raw))


def _webchat_writes() -> Iterator[Attempt]:
    json_body = {"Content-Type": "application/json"}
    for channel in CHANNELS:
        body = json.dumps({"session": B.customer(channel), "id": B.key("webchat"), "text": "alpha visitor"}).encode()
        url, expect = f"/v1/webchat/{A.account('webchat')}/messages", _as_session(B.customer(channel), 202)
        answer = {"message_id": ANY, "duplicate": False} if expect == 202 else None
        yield Attempt(CHAT_POST, THEIR_SESSIONS, url, expect, answer, body=body, headers=json_body)
        if channel != "webchat":  # the body is read before the account: a short session is refused first
            url = f"/v1/webchat/{B.account(channel)}/messages"
            expect = _as_session(B.customer(channel), 404)
            yield Attempt(CHAT_POST, THEIR_OTHER_ACCOUNTS, url, expect, body=body, headers=json_body)


def _console(world) -> Iterator[Attempt]:
    """Posted signed in as Alpha's owner, with the CSRF token."""
    ids = world.ids
    for name in ("b.subscription", "b.subscription.webhook"):
        url = f"/console/notifications/subscriptions/{ids[name]}/delete"
        yield Attempt(SUB_DELETE, THEIR_SUBSCRIPTIONS, url, 404, form={})
    for kind, subscriber in (("handoff", f"operator:{ids['b.operator']}"), ("lead", f"webhook:{ids['b.webhook']}")):
        form = {"kind": kind, "subscriber": subscriber, "route": "any"}
        yield Attempt(SUB_ADD, THEIR_SUBSCRIBERS, "/console/notifications/subscriptions", 404, form=form)


async def test_no_route_or_webhook_lets_one_shop_reach_the_other(db, tmp_path):
    async with two_shops(db, tmp_path) as world:
        bravo_before = await tenant_rows(db, B)
        tries = attempts(world)
        # Controls: the same routes with Alpha's own ids and credentials do answer, so every refusal
        # below is about whose ids they were, not a broken request.
        own_link = world.runtime.channel_deps.media.signed_url(world.ids["a.media.own"], "")
        verify = f"?hub.mode=subscribe&hub.challenge=31337&hub.verify_token={A.secrets('whatsapp')['verify_token']}"
        controls = [
            (await world.http.get(own_link)).status_code,
            (await world.http.get(f"/media/catalog/{A.tenant}/{world.ids['a.photo']}")).status_code,
            (await world.http.get(webhook_url("whatsapp", A.account("whatsapp")) + verify)).text,
            "alpha"
            in (
                await world.http.get(f"/v1/webchat/{A.account('webchat')}/messages?session={A.customer('webchat')}")
            ).text,
        ]
        outcomes = await run_attempts(world, tries, A, B)
        await wait_idle(db)  # the turns Alpha's accepted requests started
        bravo_after = await tenant_rows(db, B)
        crossed = await misbound(db)

    assert controls == [200, 200, "31337", True]
    assert {(a.route, a.kind) for a in tries} == {(r, k) for r, kinds in MATRIX.items() for k in kinds}
    successes = [
        f"{o.attempt.route} {o.attempt.kind}: {o.attempt.url}: {'; '.join(o.problems)}" for o in outcomes if o.problems
    ]
    assert successes == []
    assert [name for name in bravo_before if bravo_before[name] != bravo_after[name]] == []
    assert crossed == []
    per_route = Counter(a.route for a in tries)
    kinds = len({a.kind for a in tries})
    print(f"\ntenant isolation: {len(MATRIX)} routes, {kinds} attack kinds, {len(tries)} attempts,", end=" ")
    print(f"{len(successes)} successes")
    print("  " + "\n  ".join(f"{n:3d}  {method} {path}" for (method, path), n in sorted(per_route.items())))


async def test_a_forged_sender_in_a_correctly_signed_payload_stays_in_the_signing_shop(db, tmp_path):
    def forged(channel: str) -> str:
        return f"alpha payload naming bravo's customer on {channel}"

    async with two_shops(db, tmp_path) as world:
        bravo_before = await tenant_rows(db, B)
        answers = {}
        for channel in CHANNELS:  # Bravo's customer id and Bravo's message id, sent as Alpha's
            answer = await world.customer_writes(
                channel, A, sender=B.customer(channel), key=B.key(channel), text=forged(channel)
            )
            answers[channel] = answer.json()
        await wait_idle(db)
        landed = {}
        for channel in CHANNELS:
            conversation = await world.conversation(A, channel, B.customer(channel))
            async with db.read() as session:
                owners = (
                    await session.execute(
                        select(Conversation.tenant_id, Contact.tenant_id)
                        .join(Contact, Contact.id == Conversation.contact_id)
                        .where(Conversation.id == conversation)
                    )
                ).one()
            transcript = [e.blocks[0].text for e in await read_transcript(db, conversation)]
            tokens = world.doubles.tokens_used(channel, f"echo: {forged(channel)}") if channel != "webchat" else []
            landed[channel] = (*owners, transcript, tokens)
        bravo_after = await tenant_rows(db, B)
        crossed = await misbound(db)

    stored = {"ok": True, "stored": 1}  # not "duplicate": Bravo's message id means nothing in Alpha's account
    assert answers == {c: stored for c in WEBHOOK_CHANNELS} | {"webchat": {"message_id": ANY, "duplicate": False}}
    # A new contact and thread of Alpha's, answered with Alpha's own credentials.
    assert landed == {
        channel: (
            A.tenant,
            A.tenant,
            [forged(channel), f"echo: {forged(channel)}"],
            [A.outbound_token(channel)] if channel != "webchat" else [],
        )
        for channel in CHANNELS
    }
    assert [name for name in bravo_before if bravo_before[name] != bravo_after[name]] == []
    assert crossed == []
