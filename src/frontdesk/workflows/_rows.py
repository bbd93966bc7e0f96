"""Row-level steps of the workflow store, each inside the caller's (short) transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.platform.store.schema import WorkflowDraft
from frontdesk.workflows.draft import OPEN, SUBMITTED, SUBMITTING, Draft, DraftId
from frontdesk.workflows.errors import DraftClosed, DraftExpired, DraftNotFound, StaleDraft

# Writes are one UPDATE ... RETURNING whose WHERE clause is the compare-and-set (no read-modify-write
# window); ``populate_existing`` refreshes a row this session may already hold from an earlier read.
_REFRESH = {"synchronize_session": False, "populate_existing": True}


async def load(session: AsyncSession, draft_id: DraftId) -> Draft | None:
    row = await session.scalar(
        select(WorkflowDraft).where(WorkflowDraft.id == draft_id).execution_options(populate_existing=True)
    )
    return None if row is None else Draft.from_row(row)


def writable(draft: Draft | None, draft_id: DraftId, expected_version: int, now: datetime) -> Draft:
    """The draft if a write at ``expected_version`` may proceed; otherwise the error that says why.
    Closed and expired come first: retrying with a fresh version would not help."""
    if draft is None:
        raise DraftNotFound(draft_id)
    if draft.status != OPEN:
        raise DraftClosed(draft)
    if draft.is_expired(now):
        raise DraftExpired(draft)
    if draft.version != expected_version:
        raise StaleDraft(draft, expected_version)
    return draft


async def compare_and_set(
    session: AsyncSession, draft_id: DraftId, expected_version: int, now: datetime, values: dict[str, Any]
) -> Draft:
    """Write ``values`` (and bump the version) if the draft is still open, unexpired and at
    ``expected_version``; otherwise raise why not."""
    row = (
        await session.scalars(
            update(WorkflowDraft)
            .where(
                WorkflowDraft.id == draft_id,
                WorkflowDraft.version == expected_version,
                WorkflowDraft.status == OPEN,
                WorkflowDraft.expires_at > now,
            )
            .values(version=WorkflowDraft.version + 1, updated_at=now, **values)
            .returning(WorkflowDraft)
            .execution_options(**_REFRESH)
        )
    ).first()
    if row is not None:
        return Draft.from_row(row)
    # Lost (on PostgreSQL, possibly after waiting for a concurrent writer's row lock): say why.
    current = writable(await load(session, draft_id), draft_id, expected_version, now)
    raise StaleDraft(current, expected_version)


async def settle(
    session: AsyncSession, draft_id: DraftId, key: str, now: datetime, values: dict[str, Any]
) -> Draft | None:
    """End a submit's claim (``submitting`` with ``key``) with ``values``; None if it is not held."""
    row = (
        await session.scalars(
            update(WorkflowDraft)
            .where(
                WorkflowDraft.id == draft_id,
                WorkflowDraft.status == SUBMITTING,
                WorkflowDraft.idempotency_key == key,
            )
            .values(version=WorkflowDraft.version + 1, updated_at=now, **values)
            .returning(WorkflowDraft)
            .execution_options(**_REFRESH)
        )
    ).first()
    return None if row is None else Draft.from_row(row)


def submitted(result: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The values that close a claim as done: the flow's slot is freed for a new draft."""
    return {"status": SUBMITTED, "open_slot": None, "result": result, "submitted_at": now}


def reopened() -> dict[str, Any]:
    """The values that close a claim as not done: the draft is open again and the key released."""
    return {"status": OPEN, "idempotency_key": None}
