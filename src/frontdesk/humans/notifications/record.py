"""Recording an event inside the caller's transaction: the ``notifications`` row, its typed
payload, and one dispatch job, all committed (or rolled back) with the business change."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.humans.notifications.events import Event
from frontdesk.platform.jobs import QUEUED
from frontdesk.platform.store.schema import Job, Notification
from frontdesk.platform.store.schema_notifications import NotificationEvent

DISPATCH_NOTIFICATION = "dispatch_notification"
# Bounds both the dispatch job and each route's retries (``dispatch.Dispatcher``): with the job
# queue's exponential backoff, a route that stays down is given up after about half a minute of
# default backoff instead of paging an operator an hour late.
DISPATCH_ATTEMPTS = 5


async def notify(session: AsyncSession, event: Event, *, now: datetime) -> int | None:
    """Record ``event`` and queue its delivery, in the caller's transaction. Returns the
    notification's id, or None when ``event.dedupe_key`` was already used (nothing is written:
    a retried run or a repeated tool call never pages anyone twice)."""
    payload = event.payload
    insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else postgresql_insert
    notification_id = await session.scalar(
        insert(Notification)
        .values(
            tenant_id=event.tenant_id,
            kind=event.kind,
            text=payload.text(),
            conversation_id=payload.conversation_id,
            task_id=payload.task_id,
            dedupe_key=event.dedupe_key,
            created_at=now,
        )
        .on_conflict_do_nothing()
        .returning(Notification.id)
    )
    if notification_id is None:
        return None
    session.add(
        NotificationEvent(
            notification_id=notification_id,
            payload=payload.model_dump(mode="json"),
            recipients=[r.model_dump(mode="json", exclude_none=True) for r in event.recipients],
        )
    )
    # Written here rather than through ``JobQueue.enqueue``: callers (tools, ``hand_off``) hold a
    # session, not the queue. The job is picked up at the workers' next poll; the notification row
    # above is the dedupe, so exactly one job exists per notification.
    session.add(
        Job(
            kind=DISPATCH_NOTIFICATION,
            key=f"notification:{notification_id}",
            payload={"notification_id": notification_id},
            status=QUEUED,
            attempts=0,
            max_attempts=DISPATCH_ATTEMPTS,
            run_after=now,
            created_at=now,
            updated_at=now,
        )
    )
    return int(notification_id)
