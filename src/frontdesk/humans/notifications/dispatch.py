"""The ``dispatch_notification`` job: plan the deliveries once, then send each one at most once.

1. **Plan** (first run only): resolve the subscribers (``resolution``) and insert one attempt row
   per (notification, subscriber, route). The unique key makes a second planner a no-op, so the
   set of people told is fixed when the notification is first dispatched.
2. **Claim**: each ``pending`` row (or a ``sending`` row whose claim lapsed: its worker died) is
   moved to ``sending`` by a compare-and-set; a row another worker claimed is left alone.
3. **Send** outside any transaction, every route concurrently; one route failing or hanging does
   not hold up another.
4. **Record**: ``sent``, ``skipped``, ``failed`` (refused, or out of attempts), or back to
   ``pending`` with the error. If anything is pending, the job fails on purpose and the queue
   retries it with backoff; rows already sent are never sent again.

A crash between a route accepting a message and step 4 can still repeat that one delivery when
the claim lapses; webhooks carry ``Frontdesk-Delivery`` so receivers can drop the repeat.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, exists, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.humans.notifications.events import Recipient
from frontdesk.humans.notifications.record import DISPATCH_ATTEMPTS
from frontdesk.humans.notifications.resolution import OPERATOR, WEBHOOK, resolve
from frontdesk.humans.notifications.routes import Delivery, DeliveryError, Route, RouteUnavailable
from frontdesk.humans.notifications.templates import DEFAULT_LANGUAGE, render
from frontdesk.platform.clock import Clock
from frontdesk.platform.jobs import ClaimedJob
from frontdesk.platform.store.engine import Database, rows_affected
from frontdesk.platform.store.schema import Notification, Tenant
from frontdesk.platform.store.schema_console import Operator
from frontdesk.platform.store.schema_notifications import NotificationAttempt, NotificationEvent, NotificationWebhook

log = logging.getLogger(__name__)

PENDING, SENDING, SENT, FAILED, SKIPPED = "pending", "sending", "sent", "failed", "skipped"
_RETRY = "retry"  # an outcome, never stored: becomes PENDING or FAILED
NOT_CONFIGURED = {
    "email": "e-mail is not configured (FRONTDESK_SMTP_URL)",
    "telegram": "the Telegram route is not configured",
    "webhook": "the webhook route is not configured",
}


class DeliveriesPending(Exception):
    """Some routes failed and will be retried: the job queue reschedules the job."""


@dataclass(frozen=True)
class _Claimed:
    attempt_id: int
    attempts: int
    route: Route
    delivery: Delivery


@dataclass(frozen=True)
class _Outcome:
    attempt_id: int
    attempts: int
    status: str
    error: str | None = None


class Dispatcher:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        routes: Mapping[str, Route],
        *,
        timeout_s: float,
        conversation_url: str | None = None,
    ) -> None:
        """``routes`` maps a route name to its implementation (a missing one records ``skipped``);
        ``timeout_s`` is the routes' own timeout (``notify_timeout_s``); ``conversation_url`` is a
        link template with ``{conversation_id}`` (the console's page)."""
        self._db = db
        self._clock = clock
        self._routes = dict(routes)
        self._conversation_url = conversation_url
        # A route that overruns its own timeouts is abandoned after this, and its claim outlives
        # it, so no second worker sends while the first may still be talking to the server.
        self._backstop_s = timeout_s * 3
        self._claim_s = self._backstop_s + 30

    async def run(self, job: ClaimedJob) -> None:
        notification_id = int(job.payload["notification_id"])
        await self.plan(notification_id)
        claimed = await self._claim(notification_id)
        outcomes = await asyncio.gather(*(self._send(c) for c in claimed))
        await self._record(outcomes, last_pass=job.attempts >= DISPATCH_ATTEMPTS)
        # ``sending`` rows left now belong to a worker that lost this job (it died mid-send):
        # come back once their claim has lapsed rather than leave them unsent.
        async with self._db.read() as session:
            waiting = await session.scalar(
                select(func.count()).where(
                    NotificationAttempt.notification_id == notification_id,
                    NotificationAttempt.status.in_([PENDING, SENDING]),
                )
            )
        if waiting:
            raise DeliveriesPending(f"{waiting} deliveries of notification {notification_id} will be retried")

    async def plan(self, notification_id: int) -> None:
        async with self._db.transaction() as session:
            planned_before = await session.scalar(
                select(exists().where(NotificationAttempt.notification_id == notification_id))
            )
            notification = await session.get(Notification, notification_id)
            if planned_before or notification is None:
                return
            event = await session.get(NotificationEvent, notification_id)
            planned = await resolve(
                session,
                tenant_id=notification.tenant_id,
                kind=notification.kind,
                conversation_id=notification.conversation_id,
                task_id=notification.task_id,
                recipients=[Recipient.model_validate(r) for r in (event.recipients if event else [])],
            )
            now = self._clock.now()
            insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else postgresql_insert
            for p in planned:
                await session.execute(
                    insert(NotificationAttempt)
                    .values(
                        notification_id=notification_id,
                        tenant_id=notification.tenant_id,
                        subscriber=p.subscriber,
                        route=p.route,
                        level=p.level,
                        status=PENDING,
                        attempts=0,
                        created_at=now,
                        updated_at=now,
                    )
                    .on_conflict_do_nothing()
                )
        log.info("notification %s planned for %d deliveries", notification_id, len(planned))

    async def _claim(self, notification_id: int) -> list[_Claimed]:
        now = self._clock.now()
        claimed: list[_Claimed] = []
        async with self._db.transaction() as session:
            rows = list(
                await session.scalars(
                    select(NotificationAttempt)
                    .where(
                        NotificationAttempt.notification_id == notification_id,
                        or_(
                            NotificationAttempt.status == PENDING,
                            and_(NotificationAttempt.status == SENDING, NotificationAttempt.claimed_until < now),
                        ),
                    )
                    .order_by(NotificationAttempt.id)
                )
            )
            if not rows:
                return []
            notification = await session.get(Notification, notification_id)
            event = await session.get(NotificationEvent, notification_id)
            tenant = await session.get(Tenant, notification.tenant_id) if notification else None
            if notification is None or tenant is None:
                return []
            payload = event.payload if event else {}
            for row in rows:
                attempt_id, attempts, route_name = row.id, row.attempts, row.route
                route = self._routes.get(route_name)
                if route is None:
                    await self._finish(session, attempt_id, SKIPPED, NOT_CONFIGURED.get(route_name, "unknown route"))
                    continue
                taken = await session.execute(
                    update(NotificationAttempt)
                    .where(
                        NotificationAttempt.id == attempt_id,
                        NotificationAttempt.status == row.status,
                        NotificationAttempt.attempts == attempts,
                    )
                    .values(
                        status=SENDING,
                        attempts=attempts + 1,
                        claimed_until=now + timedelta(seconds=self._claim_s),
                        updated_at=now,
                    )
                )
                if rows_affected(taken) == 0:
                    continue  # another worker has it
                delivery = await self._delivery(session, row, notification, tenant.name, payload)
                if delivery is None:
                    await self._finish(session, attempt_id, SKIPPED, "the subscriber no longer exists")
                    continue
                claimed.append(_Claimed(attempt_id, attempts + 1, route, delivery))
        return claimed

    async def _delivery(
        self,
        session: AsyncSession,
        attempt: NotificationAttempt,
        notification: Notification,
        business: str,
        payload: Mapping[str, Any],
    ) -> Delivery | None:
        type_, _, id_ = attempt.subscriber.partition(":")
        link = (
            self._conversation_url.format(conversation_id=notification.conversation_id)
            if self._conversation_url and notification.conversation_id
            else None
        )
        document = {
            "id": notification.id,
            "kind": notification.kind,
            "tenant_id": notification.tenant_id,
            "created_at": notification.created_at.isoformat(),
            "text": notification.text,
            "conversation_id": notification.conversation_id,
            "task_id": notification.task_id,
            "conversation_url": link,
            "payload": dict(payload),
        }
        secret_name: str | None = None
        if type_ == OPERATOR:
            operator = await session.get(Operator, id_)
            if operator is None:
                return None
            language = operator.language
            address = operator.email if attempt.route == "email" else operator.telegram_chat_id or ""
        elif type_ == WEBHOOK:
            webhook = await session.get(NotificationWebhook, id_)
            if webhook is None:
                return None
            language, address, secret_name = DEFAULT_LANGUAGE, webhook.url, webhook.secret_name
        else:
            return None
        message = render(notification.kind, payload, notification.text, language=language, business=business, link=link)
        return Delivery(attempt.id, notification.tenant_id, address, message, document, secret_name)

    async def _send(self, claimed: _Claimed) -> _Outcome:
        def outcome(status: str, error: str | None = None) -> _Outcome:
            return _Outcome(claimed.attempt_id, claimed.attempts, status, error)

        try:
            async with asyncio.timeout(self._backstop_s):
                await claimed.route.send(claimed.delivery)
        except RouteUnavailable as exc:
            return outcome(SKIPPED, str(exc))
        except DeliveryError as exc:
            return outcome(FAILED if exc.permanent else _RETRY, str(exc))
        except TimeoutError:
            return outcome(_RETRY, f"no answer within {self._backstop_s:g}s")
        except Exception as exc:  # a bug in one route must not take the others down
            # The type only: an unknown exception's text may hold anything, a URL with a token too.
            log.warning("notification attempt %s: route raised %s", claimed.attempt_id, type(exc).__name__)
            return outcome(_RETRY, f"unexpected {type(exc).__name__}")
        return outcome(SENT)

    async def _record(self, outcomes: list[_Outcome], *, last_pass: bool) -> None:
        if not outcomes:
            return
        async with self._db.transaction() as session:
            for o in outcomes:
                status = o.status
                if status == _RETRY:
                    status = FAILED if last_pass or o.attempts >= DISPATCH_ATTEMPTS else PENDING
                await self._finish(session, o.attempt_id, status, o.error)
        sent = sum(o.status == SENT for o in outcomes)
        log.info("notification deliveries: %d sent, %d not sent", sent, len(outcomes) - sent)

    async def _finish(self, session: AsyncSession, attempt_id: int, status: str, error: str | None) -> None:
        now = self._clock.now()
        values: dict[str, Any] = {"status": status, "claimed_until": None, "updated_at": now}
        if status == SENT:
            values["sent_at"] = now  # the last error stays: "sent on the 2nd try, after a 502" is worth knowing
        else:
            values["error"] = error[:1000] if error else None
        await session.execute(update(NotificationAttempt).where(NotificationAttempt.id == attempt_id).values(**values))
