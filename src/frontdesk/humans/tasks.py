"""Tasks, the per-thread AI switch, and operator notifications.

Everything here runs inside the caller's transaction, so a compound action (save the contact,
open the task, notify) commits or fails as one. A notification is recorded together with its one
dispatch job (``humans.notifications``), so it is delivered exactly when the change commits.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.humans.notifications import Event, Handoff, NeedsReply, NewLead
from frontdesk.humans.notifications import notify as record_event
from frontdesk.platform.ids import new_id
from frontdesk.platform.store.schema import Conversation, Task

TaskKind = Literal["follow_up", "handoff", "needs_reply"]
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
    """Record an operator notification of ``kind`` ``handoff`` or ``lead`` (the typed API is
    ``humans.notifications.notify``). With a ``dedupe_key`` already used, nothing is written and
    False is returned (nobody is paged twice for the same run)."""
    if conversation_id is None:
        raise ValueError("a hand-off or lead notification belongs to a conversation")
    payload: Handoff | NewLead
    if kind == "handoff":
        if task_id is None:
            raise ValueError("a hand-off notification names its task")
        payload = Handoff(conversation_id=conversation_id, task_id=task_id, reason=text[:2000])
    elif kind == "lead":
        payload = NewLead(conversation_id=conversation_id, task_id=task_id, summary=text[:2000])
    else:
        raise ValueError(f"no typed event for notification kind {kind!r}: use humans.notifications.notify")
    event = Event(tenant_id=tenant_id, payload=payload, dedupe_key=dedupe_key)
    return await record_event(session, event, now=now) is not None


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


# What a "needs a reply" task is called, in the operators' language.
NEEDS_REPLY_TITLES = {
    "en": "Reply to this customer: the assistant could not prove its answer",
    "es": "Responder a este cliente: el asistente no pudo comprobar su respuesta",
    "vi": "Trả lời khách này: trợ lý không kiểm chứng được câu trả lời",
}
MAX_HOLDS_KEPT = 5  # the latest refused drafts on one task; older ones are in the turn traces


async def hold_for_team(
    session: AsyncSession,
    *,
    tenant_id: str,
    conversation_id: str,
    operator_language: str,
    draft: str,
    reasons: list[str],
    turn_id: int,
    now: datetime,
    titles: dict[str, str] = NEEDS_REPLY_TITLES,
    tell_team: bool = True,
) -> Task:
    """The hold message promised the customer a person will reply: make it true. One open
    "needs a reply" task per conversation holds the refused draft and why it was refused (a later
    hold adds to it); the team is told once per task, through the notification routing, unless
    the caller tells them another way (``tell_team=False``: one notice for many held threads)."""
    hold = {"turn_id": turn_id, "at": now.isoformat(), "draft": draft[:4000], "reasons": reasons[:20]}
    existing = await open_tasks(session, conversation_id, "needs_reply")
    if existing:
        task = existing[0]
        task.details = {**task.details, "holds": [*task.details.get("holds", []), hold][-MAX_HOLDS_KEPT:]}
        task.updated_at = now
        return task
    task = await open_task(
        session,
        tenant_id=tenant_id,
        conversation_id=conversation_id,
        kind="needs_reply",
        priority="high",
        title=titles.get(operator_language, titles["en"]),
        details={"holds": [hold]},
        now=now,
    )
    if not tell_team:
        return task
    summary = "; ".join(reasons)[:1500] or "no answer could be proven"
    event = Event(
        tenant_id=tenant_id,
        payload=NeedsReply(conversation_id=conversation_id, task_id=task.id, summary=summary),
        dedupe_key=f"needs_reply:{task.id}",
    )
    await record_event(session, event, now=now)
    return task
