"""Tasks, the per-thread AI switch, and operator notifications (recorded as rows).

Everything here runs inside the caller's transaction, so a compound action (save the contact,
open the task, notify) commits or fails as one. Delivery routes for notifications (e-mail, chat)
arrive with the operator console; until then a notification is a queryable row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.platform.ids import new_id
from frontdesk.platform.store.engine import rows_affected
from frontdesk.platform.store.schema import Conversation, Notification, Task

TaskKind = Literal["follow_up", "handoff"]
Priority = Literal["normal", "high"]
OPEN = "open"


async def open_task(
    session: AsyncSession,
    *,
    tenant_id: str,
    conversation_id: str,
    kind: TaskKind,
    priority: Priority,
    title: str,
    details: dict[str, Any],
    now: datetime,
) -> Task:
    task = Task(
        id=new_id("task"),
        tenant_id=tenant_id,
        conversation_id=conversation_id,
        kind=kind,
        priority=priority,
        status=OPEN,
        title=title[:300],
        details=details,
        created_at=now,
        updated_at=now,
    )
    session.add(task)
    await session.flush()
    return task


async def open_tasks(session: AsyncSession, conversation_id: str, kind: TaskKind | None = None) -> list[Task]:
    query = select(Task).where(Task.conversation_id == conversation_id, Task.status == OPEN).order_by(Task.created_at)
    if kind is not None:
        query = query.where(Task.kind == kind)
    return list(await session.scalars(query))


async def notify(
    session: AsyncSession,
    *,
    tenant_id: str,
    kind: str,
    text: str,
    now: datetime,
    conversation_id: str | None = None,
    task_id: str | None = None,
    dedupe_key: str | None = None,
) -> bool:
    """Record an operator notification. With a ``dedupe_key`` already used, nothing is written
    and False is returned (nobody is paged twice for the same run)."""
    values = {
        "tenant_id": tenant_id,
        "kind": kind,
        "text": text,
        "conversation_id": conversation_id,
        "task_id": task_id,
        "dedupe_key": dedupe_key,
        "created_at": now,
    }
    insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else postgresql_insert
    result = await session.execute(insert(Notification).values(**values).on_conflict_do_nothing())
    return rows_affected(result) > 0


async def set_ai_enabled(session: AsyncSession, conversation_id: str, enabled: bool, now: datetime) -> None:
    """The per-thread switch: with AI off, customer messages are stored and not answered."""
    await session.execute(
        update(Conversation).where(Conversation.id == conversation_id).values(ai_enabled=enabled, updated_at=now)
    )


async def hand_off(
    session: AsyncSession,
    *,
    tenant_id: str,
    conversation_id: str,
    reason: str,
    run_key: str,
    now: datetime,
    details: dict[str, Any] | None = None,
) -> Task:
    """Give this thread to a person: AI off for this thread only, a high-priority task with the
    reason (already in the operator's language), and one notification per agent run."""
    await set_ai_enabled(session, conversation_id, False, now)
    existing = await open_tasks(session, conversation_id, "handoff")
    task = existing[0] if existing else None
    if task is None:
        task = await open_task(
            session,
            tenant_id=tenant_id,
            conversation_id=conversation_id,
            kind="handoff",
            priority="high",
            title=reason,
            details={"reason": reason, **(details or {})},
            now=now,
        )
    await notify(
        session,
        tenant_id=tenant_id,
        kind="handoff",
        text=reason,
        now=now,
        conversation_id=conversation_id,
        task_id=task.id,
        dedupe_key=f"handoff:{conversation_id}:{run_key}",
    )
    return task
