"""Managing who is told: kind-level subscriptions, entity-level assignments, outgoing webhooks.

These write in the caller's transaction; the console and the CLI are their callers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.errors import PayloadError
from frontdesk.humans.notifications.events import Kind, RouteName
from frontdesk.humans.notifications.webhook import NOTHING_ALLOWED, check_webhook_url
from frontdesk.platform.ids import new_id
from frontdesk.platform.outbound import OutboundAllow
from frontdesk.platform.store.schema_notifications import (
    NotificationAssignment,
    NotificationSubscription,
    NotificationWebhook,
)


async def subscribe(
    session: AsyncSession,
    *,
    tenant_id: str,
    kind: Kind,
    now: datetime,
    operator_id: str | None = None,
    webhook_id: str | None = None,
    route: RouteName | Literal["any"] = "any",
) -> NotificationSubscription:
    """Events of ``kind`` go to this operator (on ``route``) or this webhook."""
    if (operator_id is None) == (webhook_id is None):
        raise PayloadError("subscribe exactly one of an operator or a webhook")
    if webhook_id is not None and route not in ("any", "webhook"):
        raise PayloadError("a webhook is only reached by the webhook route")
    if operator_id is not None and route == "webhook":
        raise PayloadError("operators are reached by e-mail or Telegram")
    row = NotificationSubscription(
        tenant_id=tenant_id,
        kind=kind,
        operator_id=operator_id,
        webhook_id=webhook_id,
        route="webhook" if webhook_id is not None else route,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    return row


async def assign(
    session: AsyncSession,
    *,
    tenant_id: str,
    operator_id: str,
    now: datetime,
    conversation_id: str | None = None,
    task_id: str | None = None,
) -> NotificationAssignment:
    """This operator follows one conversation or one task."""
    if (conversation_id is None) == (task_id is None):
        raise PayloadError("assign an operator to exactly one of a conversation or a task")
    row = NotificationAssignment(
        tenant_id=tenant_id, operator_id=operator_id, conversation_id=conversation_id, task_id=task_id, created_at=now
    )
    session.add(row)
    await session.flush()
    return row


async def add_webhook(
    session: AsyncSession,
    *,
    tenant_id: str,
    name: str,
    url: str,
    now: datetime,
    secret_name: str | None = None,
    allow: OutboundAllow = NOTHING_ALLOWED,
) -> NotificationWebhook:
    """An outgoing webhook. Store its signing secret in the vault under ``secret_name`` (default
    ``notify/webhook/<id>``); the row only names it. ``allow`` is the ``outbound_allow`` setting:
    without it, no URL to a literal loopback, private or link-local address is taken."""
    check_webhook_url(url, allow)
    webhook_id = new_id("whk")
    row = NotificationWebhook(
        id=webhook_id,
        tenant_id=tenant_id,
        name=name[:120],
        url=url,
        secret_name=secret_name or f"notify/webhook/{webhook_id}",
        active=True,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    return row
