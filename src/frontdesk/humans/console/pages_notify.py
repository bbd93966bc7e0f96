"""Notification subscriptions (who hears of which event, by which route) and the webhooks that
may subscribe.

Changes are for owners only, behind the CSRF token, and leave an audit row that names what
changed, never a secret value. A webhook's signing secret is shown once, in the answer to the post
that made it.
"""

from __future__ import annotations

import secrets as token_source
from typing import Annotated, Literal
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.errors import ConflictError, NotFoundError, PayloadError
from frontdesk.humans.console._configure import vault_of
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._guard import actor, redirect, viewer
from frontdesk.humans.console._render import audit, page, parse_form
from frontdesk.humans.console.auth import Principal
from frontdesk.humans.notifications.events import KINDS, Kind, RouteName
from frontdesk.humans.notifications.subscriptions import add_webhook, subscribe
from frontdesk.platform.outbound import OutboundAllow
from frontdesk.platform.store.schema_console import Operator
from frontdesk.platform.store.schema_notifications import (
    NotificationAttempt,
    NotificationSubscription,
    NotificationWebhook,
)

SubscriptionPath = Annotated[int, PathParam(ge=1, le=2**53)]
OPERATOR_ROUTES = ("any", "email", "telegram")


class SubscriptionForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    kind: Kind
    subscriber: str = Field(pattern=r"^(operator|webhook):[A-Za-z0-9_-]{1,40}$")
    route: RouteName | Literal["any"] = "any"


class WebhookForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str = Field(min_length=1, max_length=120)
    url: str = Field(min_length=9, max_length=2000)

    @field_validator("name", "url", mode="before")
    @classmethod
    def _trim(cls, value: object) -> object:
        return value.strip() if isinstance(value, str) else value

    @field_validator("url")
    @classmethod
    def _https(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError("a webhook URL must start with https:// and name a host")
        return value


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    @router.get("/console/notifications", response_class=HTMLResponse)
    async def notifications_page(request: Request) -> Response:
        me = await viewer(deps, request)
        return await _notifications_page(deps, request, me)

    @router.post("/console/notifications/subscriptions", response_class=HTMLResponse)
    async def subscription_add(request: Request) -> Response:
        me = await actor(deps, request, owner=True)
        form = await parse_form(request, SubscriptionForm)
        async with deps.db.transaction() as session:
            operator_id, webhook_id, route = await _resolve_subscriber(session, me, form)
            _, _, subscriber_id = form.subscriber.partition(":")
            column = NotificationSubscription.operator_id if operator_id else NotificationSubscription.webhook_id
            duplicate = await session.scalar(
                select(NotificationSubscription.id).where(
                    NotificationSubscription.kind == form.kind,
                    column == subscriber_id,
                    NotificationSubscription.route == route,
                )
            )
            if duplicate is not None:
                raise ConflictError("this subscription already exists")
            row = await subscribe(
                session,
                tenant_id=me.tenant_id,
                kind=form.kind,
                now=deps.clock.now(),
                operator_id=operator_id,
                webhook_id=webhook_id,
                route=route,
            )
            audit(
                session,
                me,
                me.tenant_id,
                "subscription_added",
                deps.clock.now(),
                target=str(row.id),
                details={"kind": form.kind, "subscriber": form.subscriber, "route": route},
            )
        raise redirect("/console/notifications")

    @router.post("/console/notifications/subscriptions/{subscription_id}/delete", response_class=HTMLResponse)
    async def subscription_remove(request: Request, subscription_id: SubscriptionPath) -> Response:
        me = await actor(deps, request, owner=True)
        async with deps.db.transaction() as session:
            row = await session.scalar(
                select(NotificationSubscription).where(
                    NotificationSubscription.id == subscription_id,
                    NotificationSubscription.tenant_id == me.tenant_id,
                )
            )
            if row is None:
                raise NotFoundError("no such subscription")
            subscriber = f"operator:{row.operator_id}" if row.operator_id else f"webhook:{row.webhook_id}"
            details = {"kind": row.kind, "subscriber": subscriber, "route": row.route}
            await session.execute(delete(NotificationSubscription).where(NotificationSubscription.id == row.id))
            audit(
                session,
                me,
                me.tenant_id,
                "subscription_removed",
                deps.clock.now(),
                target=str(subscription_id),
                details=details,
            )
        raise redirect("/console/notifications")

    @router.post("/console/notifications/webhooks", response_class=HTMLResponse)
    async def webhook_add(request: Request) -> Response:
        me = await actor(deps, request, owner=True)
        form = await parse_form(request, WebhookForm)
        vault = vault_of(deps, request)
        if not vault.can_seal:
            raise ConflictError(
                "no vault key is configured, so a webhook's signing secret cannot be stored:"
                " set FRONTDESK_VAULT_KEY (docs/configuration.md#credential-vault)"
            )
        secret = token_source.token_urlsafe(32)
        async with deps.db.transaction() as session:
            row = await add_webhook(
                session,
                tenant_id=me.tenant_id,
                name=form.name,
                url=form.url,
                now=deps.clock.now(),
                allow=OutboundAllow.parse(deps.config.outbound_allow),
            )
            await vault.stage(session, me.tenant_id, row.secret_name, secret)
            audit(
                session,
                me,
                me.tenant_id,
                "webhook_added",
                deps.clock.now(),
                target=row.id,
                details={"name": row.name, "host": urlsplit(form.url).hostname or ""},
            )
            created = row.id
        # Shown once: this answer is the only page that ever holds the secret (no-store).
        return await _notifications_page(deps, request, me, new_secret=(created, secret), status=201)


async def _resolve_subscriber(
    session: AsyncSession, me: Principal, form: SubscriptionForm
) -> tuple[str | None, str | None, RouteName | Literal["any"]]:
    """The subscriber named by the form, checked to be this tenant's: (operator id, webhook id,
    route), exactly one of the ids set."""
    what, _, subscriber_id = form.subscriber.partition(":")
    if what == "operator":
        if form.route not in OPERATOR_ROUTES:
            raise PayloadError("invalid form: route: operators are reached by e-mail or Telegram")
        operator_id = await session.scalar(
            select(Operator.id).where(Operator.id == subscriber_id, Operator.tenant_id == me.tenant_id)
        )
        if operator_id is None:
            raise NotFoundError("no such operator")
        return operator_id, None, form.route
    webhook_id = await session.scalar(
        select(NotificationWebhook.id).where(
            NotificationWebhook.id == subscriber_id, NotificationWebhook.tenant_id == me.tenant_id
        )
    )
    if webhook_id is None:
        raise NotFoundError("no such webhook")
    return None, webhook_id, "webhook"


def _mask_url(url: str) -> str:
    """A webhook URL as listed: scheme and host (its path or query may itself be the secret)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}/…"


async def _notifications_page(
    deps: ConsoleDeps,
    request: Request,
    me: Principal,
    *,
    new_secret: tuple[str, str] | None = None,
    status: int = 200,
) -> Response:
    async with deps.db.read() as session:
        operators = list(
            await session.scalars(
                select(Operator)
                .where(Operator.tenant_id == me.tenant_id, Operator.active.is_(True))
                .order_by(Operator.name)
            )
        )
        webhooks = list(
            await session.scalars(
                select(NotificationWebhook)
                .where(NotificationWebhook.tenant_id == me.tenant_id)
                .order_by(NotificationWebhook.created_at)
            )
        )
        last_tries = await _last_attempts(session, me.tenant_id, [f"webhook:{w.id}" for w in webhooks])
        subscriptions = list(
            await session.scalars(
                select(NotificationSubscription)
                .where(NotificationSubscription.tenant_id == me.tenant_id)
                .order_by(NotificationSubscription.kind, NotificationSubscription.id)
            )
        )
    names = {f"operator:{o.id}": o.name for o in operators} | {f"webhook:{w.id}": w.name for w in webhooks}
    rows = [
        {
            "id": s.id,
            "kind": s.kind,
            "subscriber": names.get(f"operator:{s.operator_id}" if s.operator_id else f"webhook:{s.webhook_id}", "—"),
            "route": s.route,
        }
        for s in subscriptions
    ]
    hooks = [
        {
            "id": w.id,
            "name": w.name,
            "url": _mask_url(w.url),
            "active": w.active,
            "last": last_tries.get(f"webhook:{w.id}"),
        }
        for w in webhooks
    ]
    return page(
        "notifications.html",
        me,
        status=status,
        subscriptions=rows,
        webhooks=hooks,
        operators=[(o.id, o.name) for o in operators],
        kinds=KINDS,
        routes=OPERATOR_ROUTES,
        new_secret=new_secret,
        can_seal=vault_of(deps, request).can_seal,
    )


async def _last_attempts(
    session: AsyncSession, tenant_id: str, subscribers: list[str]
) -> dict[str, NotificationAttempt]:
    """Each subscriber's latest delivery attempt: an owner sees a webhook that the outbound guard
    refuses, or that answers errors, where they manage it (the reason names a host, never a path)."""
    if not subscribers:
        return {}
    latest = (
        select(func.max(NotificationAttempt.id))
        .where(NotificationAttempt.tenant_id == tenant_id, NotificationAttempt.subscriber.in_(subscribers))
        .group_by(NotificationAttempt.subscriber)
    )
    rows = await session.scalars(select(NotificationAttempt).where(NotificationAttempt.id.in_(latest)))
    return {row.subscriber: row for row in rows}
