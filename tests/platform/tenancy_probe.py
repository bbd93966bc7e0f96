"""Probing one shop from the other (``tenancy_kit``'s two shops): what the victim shop has, what
must always hold between rows, and running a list of attempts with each judged on its answer
and on the victim's rows before and after it."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

import httpx2
from sqlalchemy import or_, select
from sqlalchemy.orm import aliased
from tenancy_kit import CHANNELS, Shop, World

from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, Contact, Conversation, DeliveryPart, Message, Receipt, Task
from frontdesk.platform.store.schema_business import BusinessProfileRow, CatalogItemRow, CatalogPhotoRow
from frontdesk.platform.store.schema_console import AuditEntry, Operator
from frontdesk.platform.store.schema_notifications import NotificationSubscription, NotificationWebhook
from frontdesk.platform.store.schema_vault import Credential

# -- what an attempt may not do: change the other shop's rows, bind a row across shops, show data


async def tenant_rows(db: Database, shop: Shop) -> dict[str, list[tuple[Any, ...]]]:
    """Everything of ``shop`` an attack could reveal or change, as comparable tuples."""
    accounts = [shop.account(c) for c in CHANNELS]
    tenant = shop.tenant
    conversations = select(Conversation.id).where(Conversation.tenant_id == tenant).scalar_subquery()
    queries: dict[str, Any] = {
        "accounts": select(ChannelAccount.id, ChannelAccount.name, ChannelAccount.config).where(
            ChannelAccount.tenant_id == tenant
        ),
        "credentials": select(Credential.name, Credential.updated_at).where(Credential.tenant_id == tenant),
        "contacts": select(Contact.id, Contact.channel_account_id, Contact.external_id, Contact.name).where(
            Contact.tenant_id == tenant
        ),
        "conversations": select(
            Conversation.id, Conversation.channel_account_id, Conversation.contact_id, Conversation.ai_enabled
        ).where(Conversation.tenant_id == tenant),
        # By account and by conversation: a row of another account appended to our thread counts.
        "messages": select(Message.id, Message.conversation_id, Message.role, Message.content, Message.status).where(
            or_(Message.channel_account_id.in_(accounts), Message.conversation_id.in_(conversations))
        ),
        "receipts": select(Receipt.id, Receipt.status, Receipt.parts_sent, Receipt.replays).where(
            or_(Receipt.channel_account_id.in_(accounts), Receipt.conversation_id.in_(conversations))
        ),
        "delivery_parts": select(
            DeliveryPart.id, DeliveryPart.status, DeliveryPart.platform_status, DeliveryPart.attempts
        ).where(DeliveryPart.channel_account_id.in_(accounts)),
        "tasks": select(Task.id, Task.status, Task.title).where(
            or_(Task.tenant_id == tenant, Task.conversation_id.in_(conversations))
        ),
        "catalog": select(CatalogItemRow.id, CatalogItemRow.active, CatalogItemRow.data).where(
            CatalogItemRow.tenant_id == tenant
        ),
        "photos": select(CatalogPhotoRow.id, CatalogPhotoRow.media_key).where(CatalogPhotoRow.tenant_id == tenant),
        "profile": select(BusinessProfileRow.data).where(BusinessProfileRow.tenant_id == tenant),
        "operators": select(Operator.id, Operator.email, Operator.role, Operator.active).where(
            Operator.tenant_id == tenant
        ),
        "webhooks": select(NotificationWebhook.id, NotificationWebhook.url, NotificationWebhook.active).where(
            NotificationWebhook.tenant_id == tenant
        ),
        "subscriptions": select(
            NotificationSubscription.id,
            NotificationSubscription.kind,
            NotificationSubscription.operator_id,
            NotificationSubscription.webhook_id,
        ).where(NotificationSubscription.tenant_id == tenant),
        "audit": select(AuditEntry.id, AuditEntry.action).where(AuditEntry.tenant_id == tenant),
    }
    async with db.read() as session:
        return {name: sorted(map(tuple, (await session.execute(query)).all())) for name, query in queries.items()}


async def misbound(db: Database) -> list[str]:
    """Rows whose tenant or account disagrees with the row they belong to (should be none)."""
    contact, account = aliased(Contact), aliased(ChannelAccount)
    checks: dict[str, Any] = {
        "contact of another tenant's account": select(Contact.id)
        .join(ChannelAccount, ChannelAccount.id == Contact.channel_account_id)
        .where(Contact.tenant_id != ChannelAccount.tenant_id),
        "conversation outside its account's tenant or its contact's account": select(Conversation.id)
        .join(account, account.id == Conversation.channel_account_id)
        .join(contact, contact.id == Conversation.contact_id)
        .where(
            or_(
                Conversation.tenant_id != account.tenant_id,
                contact.channel_account_id != Conversation.channel_account_id,
            )
        ),
        "message of another account in a conversation": select(Message.id)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(Message.channel_account_id != Conversation.channel_account_id),
        "receipt of another account": select(Receipt.id)
        .join(Conversation, Conversation.id == Receipt.conversation_id)
        .where(Receipt.channel_account_id != Conversation.channel_account_id),
        "delivery part of another account": select(DeliveryPart.id)
        .join(Receipt, Receipt.id == DeliveryPart.receipt_id)
        .where(DeliveryPart.channel_account_id != Receipt.channel_account_id),
        "task of another tenant's conversation": select(Task.id)
        .join(Conversation, Conversation.id == Task.conversation_id)
        .where(Task.tenant_id != Conversation.tenant_id),
    }
    async with db.read() as session:
        return [f"{what}: {row}" for what, query in checks.items() for row in await session.scalars(query)]


async def markers(db: Database, shop: Shop) -> list[str]:
    """Strings that only ``shop``'s data contains: its word (in every text, secret and name) and
    the random ids of its rows."""
    rows = await tenant_rows(db, shop)
    ids = [row[0] for name in ("contacts", "conversations", "tasks", "operators", "webhooks") for row in rows[name]]
    return [shop.word, *(str(i).lower() for i in ids)]


# -- attempts


Route = tuple[str, str]  # (method, path template as the app declares it)


@dataclass(frozen=True)
class Attempt:
    """One request of the attacking shop against the victim. ``form``: a console form, posted
    signed in as the attacker's owner with the CSRF token; ``stream``: an SSE route, read for
    ``STREAM_WINDOW_S``."""

    route: Route
    kind: str
    url: str
    expect: int
    expect_json: Any = None  # when set, the whole JSON answer (``unittest.mock.ANY`` for volatile fields)
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    form: dict[str, str] | None = None
    stream: bool = False


@dataclass(frozen=True)
class Outcome:
    attempt: Attempt
    status: int
    problems: tuple[str, ...]  # empty: the attack got nowhere


STREAM_WINDOW_S = 0.6  # a stream bound to a conversation replays it at once (Last-Event-ID 0:0)


async def _read_stream(http: httpx2.AsyncClient, attempt: Attempt) -> tuple[int, str]:
    async with http.stream("GET", attempt.url, headers=attempt.headers) as response:
        if response.status_code != 200:
            return response.status_code, (await response.aread()).decode()
        chunks: list[str] = []
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(STREAM_WINDOW_S):
                async for chunk in response.aiter_text():
                    chunks.append(chunk)
        return 200, "".join(chunks)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _judge(attempt: Attempt, status: int, text: str, changed: list[str], leaks: list[str]) -> Outcome:
    problems: list[str] = []
    if status != attempt.expect:
        problems.append(f"answered {status} ({text[:160]!r}), expected {attempt.expect}")
    elif attempt.expect_json is not None and _json(text) != attempt.expect_json:
        problems.append(f"answered {text[:160]!r}, expected {attempt.expect_json!r}")
    if leaks:
        problems.append(f"the answer shows the other shop's data: {leaks}")
    if changed:
        problems.append(f"changed the other shop's {', '.join(changed)}")
    return Outcome(attempt, status, tuple(problems))


async def run_attempts(world: World, attempts: list[Attempt], attacker: Shop, victim: Shop) -> list[Outcome]:
    """Every attempt, each judged on its answer and on ``victim``'s rows before and after it
    (console forms are posted signed in as ``attacker``'s owner). Streams go first, together
    (each holds its connection for a while); then the rest in order."""
    db = world.db
    secret_markers = [m.lower() for m in await markers(db, victim)]

    def leaks(text: str) -> list[str]:
        return [m for m in secret_markers if m in text.lower()]

    def changed(before: dict[str, list[Any]], after: dict[str, list[Any]]) -> list[str]:
        return [name for name in before if before[name] != after[name]]

    outcomes: list[Outcome] = []
    streams = [a for a in attempts if a.stream]
    before = await tenant_rows(db, victim)
    answers = await asyncio.gather(*(_read_stream(world.http, a) for a in streams))
    diff = changed(before, await tenant_rows(db, victim))
    outcomes += [_judge(a, status, text, diff, leaks(text)) for a, (status, text) in zip(streams, answers, strict=True)]
    async with world.console(attacker) as (console, token):
        before = await tenant_rows(db, victim)
        for attempt in (a for a in attempts if not a.stream):
            if attempt.form is not None:
                response = await console.post(attempt.url, data={"csrf": token, **attempt.form})
            else:
                method = attempt.route[0]
                response = await world.http.request(method, attempt.url, content=attempt.body, headers=attempt.headers)
            text = response.text + json.dumps(dict(response.headers))
            after = await tenant_rows(db, victim)
            outcomes.append(_judge(attempt, response.status_code, response.text, changed(before, after), leaks(text)))
            before = after  # only an attempt (or a turn one started) may move the victim's rows
    return outcomes
