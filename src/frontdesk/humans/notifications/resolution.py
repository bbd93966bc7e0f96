"""Who is told: the first level that yields anyone wins.

1. ``explicit``: the recipients named on the event;
2. ``kind``: the tenant's subscriptions to the event's kind;
3. ``entity``: operators assigned to the event's task or conversation;
4. ``everyone``: every active operator of the tenant.

Precedence, not union: a kind-level subscription is how an owner says "hand-offs go to Ana and
the CRM webhook", which must stop them going to everyone; an explicit list is a caller saying
exactly who. A level whose names all resolve to nobody (inactive operators, another tenant's
ids) counts as empty, so a stale subscription never silences a notification.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.humans.notifications.events import Recipient, RouteName
from frontdesk.platform.store.schema_console import Operator
from frontdesk.platform.store.schema_notifications import (
    NotificationAssignment,
    NotificationSubscription,
    NotificationWebhook,
)

Level = Literal["explicit", "kind", "entity", "everyone"]
OPERATOR, WEBHOOK = "operator", "webhook"


@dataclass(frozen=True)
class Planned:
    """One delivery to make: ``subscriber`` is ``operator:<id>`` or ``webhook:<id>``."""

    subscriber: str
    route: RouteName
    level: Level


@dataclass(frozen=True)
class _Wanted:
    type: str  # OPERATOR or WEBHOOK
    id: str
    route: RouteName | None = None  # None: every route the operator can receive


def subscriber_key(type_: str, id_: str) -> str:
    return f"{type_}:{id_}"


def operator_routes(operator: Operator) -> list[RouteName]:
    """The routes an operator can be reached on: e-mail always, Telegram once linked."""
    return ["email", "telegram"] if operator.telegram_chat_id else ["email"]


async def resolve(
    session: AsyncSession,
    *,
    tenant_id: str,
    kind: str,
    conversation_id: str | None,
    task_id: str | None,
    recipients: Sequence[Recipient],
) -> list[Planned]:
    explicit = [
        _Wanted(OPERATOR, r.operator_id, r.route) if r.operator_id else _Wanted(WEBHOOK, r.webhook_id or "")
        for r in recipients
    ]
    planned = await _expand(session, tenant_id, "explicit", explicit)
    if planned:
        return planned
    planned = await _expand(session, tenant_id, "kind", await _kind_level(session, tenant_id, kind))
    if planned:
        return planned
    planned = await _expand(
        session, tenant_id, "entity", await _entity_level(session, tenant_id, conversation_id, task_id)
    )
    if planned:
        return planned
    everyone = await session.scalars(
        select(Operator.id)
        .where(Operator.tenant_id == tenant_id, Operator.active.is_(True))
        .order_by(Operator.created_at)
    )
    return await _expand(session, tenant_id, "everyone", [_Wanted(OPERATOR, id_) for id_ in everyone])


async def _kind_level(session: AsyncSession, tenant_id: str, kind: str) -> list[_Wanted]:
    rows = await session.scalars(
        select(NotificationSubscription)
        .where(NotificationSubscription.tenant_id == tenant_id, NotificationSubscription.kind == kind)
        .order_by(NotificationSubscription.id)
    )
    wanted: list[_Wanted] = []
    for row in rows:
        route: RouteName | None = None if row.route == "any" else _route(row.route)
        if row.operator_id is not None:
            wanted.append(_Wanted(OPERATOR, row.operator_id, route))
        elif row.webhook_id is not None:
            wanted.append(_Wanted(WEBHOOK, row.webhook_id))
    return wanted


async def _entity_level(
    session: AsyncSession, tenant_id: str, conversation_id: str | None, task_id: str | None
) -> list[_Wanted]:
    scopes = []
    if task_id is not None:
        scopes.append(NotificationAssignment.task_id == task_id)
    if conversation_id is not None:
        scopes.append(NotificationAssignment.conversation_id == conversation_id)
    if not scopes:
        return []
    operator_ids = await session.scalars(
        select(NotificationAssignment.operator_id)
        .where(NotificationAssignment.tenant_id == tenant_id, or_(*scopes))
        .order_by(NotificationAssignment.id)
    )
    return [_Wanted(OPERATOR, id_) for id_ in operator_ids]


async def _expand(session: AsyncSession, tenant_id: str, level: Level, wanted: Iterable[_Wanted]) -> list[Planned]:
    """Names to deliveries: only active subscribers of this tenant, each (subscriber, route) once."""
    wanted = list(wanted)
    operator_ids = {w.id for w in wanted if w.type == OPERATOR}
    webhook_ids = {w.id for w in wanted if w.type == WEBHOOK}
    operators = {
        o.id: o
        for o in await session.scalars(
            select(Operator).where(
                Operator.tenant_id == tenant_id, Operator.active.is_(True), Operator.id.in_(operator_ids)
            )
        )
    }
    webhooks = set(
        await session.scalars(
            select(NotificationWebhook.id).where(
                NotificationWebhook.tenant_id == tenant_id,
                NotificationWebhook.active.is_(True),
                NotificationWebhook.id.in_(webhook_ids),
            )
        )
    )
    planned: dict[tuple[str, str], Planned] = {}
    for w in wanted:
        if w.type == OPERATOR and w.id in operators:
            routes = [w.route] if w.route else operator_routes(operators[w.id])
        elif w.type == WEBHOOK and w.id in webhooks:
            routes = ["webhook"]
        else:
            continue
        key = subscriber_key(w.type, w.id)
        for route in routes:
            planned.setdefault((key, route), Planned(key, route, level))
    return list(planned.values())


def _route(name: str) -> RouteName:
    for route in ("email", "telegram", "webhook"):
        if name == route:
            return route
    raise ValueError(f"unknown notification route {name!r}")
