"""Durable drafts: the state of a multi-step flow (create draft → set fields → review → submit) kept
in the store, so any instance can serve the next turn and a restart loses nothing (invariant 1).

Decisions, in one place:

- One live draft per (conversation, workflow). ``start`` while one is open (or being submitted)
  raises ``DraftExists`` carrying it; an *expired* open draft is retired (status ``expired``) so a
  new flow can begin. The unique constraint on ``open_slot`` settles two racing starts.
- Every write is a compare-and-set on ``version`` (``StaleDraft`` carries the current version);
  nothing is ever overwritten blindly. Only open, unexpired drafts can change.
- ``submit`` never holds a transaction across the action: claim (CAS to ``submitting`` with the
  key) → run the action → record the result. The key is unique, so a second submit with it runs
  nothing: it returns the first result, waits briefly for a claim in flight, or returns
  ``SubmitPending`` when the claimer died between side effect and record (the caller says
  "processing"; an operator settles it with ``resolve``). An action that *raises* reopens the
  draft and releases the key: the caller saw the failure, so a retry is deliberate.
- A submit may name its ``submitter`` (an agent run): the claim makes it the draft's ``owner``,
  and ``current_or_submitted_by`` finds the draft again once it is no longer live. A model that
  calls "submit" twice in one run (two parallel calls, or once more after the first answered)
  gets the first answer both times instead of "nothing to submit"; a later run is told the flow
  is over.
- A claimed draft no longer expires (its side effect may have happened). ``cleanup_expired``
  deletes open/cancelled/expired drafts past ``expires_at`` and submitted drafts older than
  ``keep_submitted_s`` (90 days by default: the record of what was done, and of its keys).
"""

from __future__ import annotations

import asyncio
import logging
import math
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError

from frontdesk.errors import NotFoundError, PayloadError
from frontdesk.platform.clock import Clock
from frontdesk.platform.ids import ConversationId, new_id
from frontdesk.platform.store.engine import Database, rows_affected
from frontdesk.platform.store.schema import WorkflowDraft
from frontdesk.workflows._rows import compare_and_set, load, reopened, settle, submitted, writable
from frontdesk.workflows.draft import (
    CANCELLED,
    EXPIRED,
    OPEN,
    SUBMITTED,
    SUBMITTING,
    Action,
    Draft,
    DraftId,
    SubmitPending,
    SubmitResult,
    Submitted,
)
from frontdesk.workflows.errors import (
    DraftClosed,
    DraftExists,
    DraftNotFound,
    IdempotencyKeyReused,
    NotBeingSubmitted,
    StaleDraft,
)

log = logging.getLogger(__name__)

DEFAULT_TTL_S = 24 * 3600.0
DEFAULT_KEEP_SUBMITTED_S = 90 * 86400.0
_POLL_S = 0.05
_MAX_KEY_LENGTH = 200  # the column's width


class WorkflowStore:
    def __init__(self, db: Database, clock: Clock, *, keep_submitted_s: float = DEFAULT_KEEP_SUBMITTED_S) -> None:
        self._db = db
        self._clock = clock
        self._keep_submitted = timedelta(seconds=keep_submitted_s)

    async def start(
        self,
        conversation_id: ConversationId,
        workflow: str,
        owner: str,
        data: dict[str, Any] | None = None,
        phase: str = "start",
        ttl_s: float = DEFAULT_TTL_S,
    ) -> Draft:
        """Open a draft at version 1. Raises ``DraftExists`` if a live one is already open."""
        if ttl_s <= 0:
            raise ValueError("ttl_s must be positive")
        now = self._clock.now()
        row = WorkflowDraft(
            id=new_id("draft"),
            conversation_id=conversation_id,
            workflow=workflow,
            phase=phase,
            status=OPEN,
            open_slot=True,
            data=dict(data or {}),
            version=1,
            owner=owner,
            expires_at=now + timedelta(seconds=ttl_s),
            created_at=now,
            updated_at=now,
        )
        same_flow = (WorkflowDraft.conversation_id == conversation_id, WorkflowDraft.workflow == workflow)
        try:
            async with self._db.transaction() as session:
                # An expired draft keeps its slot until the sweep runs; it must not block a new flow.
                await session.execute(
                    update(WorkflowDraft)
                    .where(*same_flow, WorkflowDraft.status == OPEN, WorkflowDraft.expires_at <= now)
                    .values(status=EXPIRED, open_slot=None, updated_at=now)
                    .execution_options(synchronize_session=False)
                )
                live = await session.scalar(
                    select(WorkflowDraft).where(*same_flow, WorkflowDraft.open_slot.is_not(None))
                )
                if live is not None:
                    raise DraftExists(Draft.from_row(live))
                session.add(row)
        except IntegrityError as exc:
            # A concurrent start took the slot first, or the conversation does not exist.
            winner = await self.current(conversation_id, workflow)
            if winner is None:
                raise NotFoundError(f"no conversation {conversation_id!r}") from exc
            raise DraftExists(winner) from None
        return Draft.from_row(row)

    async def current(self, conversation_id: ConversationId, workflow: str) -> Draft | None:
        """The live draft of this flow: open and unexpired, or being submitted. None otherwise."""
        async with self._db.read() as session:
            row = await session.scalar(
                select(WorkflowDraft).where(
                    WorkflowDraft.conversation_id == conversation_id,
                    WorkflowDraft.workflow == workflow,
                    WorkflowDraft.open_slot.is_not(None),
                )
            )
        draft = None if row is None else Draft.from_row(row)
        return None if draft is None or draft.is_expired(self._clock.now()) else draft

    async def current_or_submitted_by(
        self, conversation_id: ConversationId, workflow: str, submitter: str
    ) -> Draft | None:
        """The live draft (``current``); with none, the newest draft of this flow whose submit
        ``submitter`` claimed, in flight or done: a caller repeating its submit gets the first
        answer instead of "nothing to submit"."""
        live = await self.current(conversation_id, workflow)
        if live is not None or not submitter:
            return live
        async with self._db.read() as session:
            row = await session.scalar(
                select(WorkflowDraft)
                .where(
                    WorkflowDraft.conversation_id == conversation_id,
                    WorkflowDraft.workflow == workflow,
                    WorkflowDraft.owner == submitter,
                    WorkflowDraft.status.in_([SUBMITTING, SUBMITTED]),
                )
                .order_by(WorkflowDraft.updated_at.desc())
                .limit(1)
            )
        return None if row is None else Draft.from_row(row)

    async def get(self, draft_id: DraftId) -> Draft:
        """Any draft by id, whatever its status (raises ``DraftNotFound``)."""
        async with self._db.read() as session:
            draft = await load(session, draft_id)
        if draft is None:
            raise DraftNotFound(draft_id)
        return draft

    async def update(
        self,
        draft_id: DraftId,
        expected_version: int,
        *,
        phase: str | None = None,
        data_changes: dict[str, Any] | None = None,
        ttl_s: float | None = None,
    ) -> Draft:
        """Compare-and-set: move to ``phase``, merge ``data_changes`` into ``data`` (top-level keys
        replace, others stay), and with ``ttl_s`` push ``expires_at`` to now + ttl_s."""
        now = self._clock.now()
        async with self._db.transaction() as session:
            draft = writable(await load(session, draft_id), draft_id, expected_version, now)
            values: dict[str, Any] = {}
            if phase is not None:
                values["phase"] = phase
            if data_changes:
                values["data"] = {**draft.data, **data_changes}
            if ttl_s is not None:
                values["expires_at"] = now + timedelta(seconds=ttl_s)
            return await compare_and_set(session, draft_id, expected_version, now, values)

    async def cancel(self, draft_id: DraftId, expected_version: int) -> Draft:
        """Close an open draft without submitting it; the next sweep deletes it."""
        now = self._clock.now()
        async with self._db.transaction() as session:
            values = {"status": CANCELLED, "open_slot": None, "expires_at": now}
            return await compare_and_set(session, draft_id, expected_version, now, values)

    async def submit(
        self,
        draft_id: DraftId,
        expected_version: int,
        idempotency_key: str,
        action: Action,
        *,
        wait_s: float = 5.0,
        submitter: str = "",
    ) -> SubmitResult:
        """Run ``action`` at most once per ``idempotency_key`` and record its result on the draft.

        A duplicate (same key, same draft) runs nothing: it gets the first result (``replayed``),
        waiting up to ``wait_s`` for a submit in flight, else ``SubmitPending``. ``expected_version``
        is only checked by the submit that claims the draft. A ``submitter`` that claims becomes the
        draft's owner (see ``current_or_submitted_by``)."""
        if not 0 < len(idempotency_key) <= _MAX_KEY_LENGTH:
            raise PayloadError(f"an idempotency key has 1 to {_MAX_KEY_LENGTH} characters")
        try:
            claimed = await self._claim(draft_id, expected_version, idempotency_key, submitter)
        except IntegrityError:
            # The unique index caught a submit that took this key between our look-up and our write.
            claimed = None
        if claimed is None:
            return await self._follow(draft_id, expected_version, idempotency_key, wait_s)
        try:
            result = await action(claimed)
        except Exception:
            # The action failed and the caller sees why; reopen so the flow can be fixed and retried.
            # Cancellation and crashes skip this on purpose: the effect may have happened, so the
            # draft stays "submitting" and retries get SubmitPending.
            await self._settle(claimed.id, idempotency_key, reopened())
            raise
        recorded = await self._settle(claimed.id, idempotency_key, submitted(result, self._clock.now()))
        if recorded is None:  # an operator settled the claim while the action ran; our result stands
            log.warning("draft %s was resolved while its submit was running", claimed.id)
            recorded = await self.get(claimed.id)
        return Submitted(recorded, result, replayed=False)

    async def resolve(self, draft_id: DraftId, idempotency_key: str, result: dict[str, Any] | None) -> Draft:
        """Settle a claim whose submitter died (a ``SubmitPending`` that never finishes). With
        ``result`` an operator confirms the side effect happened and records it; with None, that it
        did not, and the draft reopens for another submit."""
        values = reopened() if result is None else submitted(result, self._clock.now())
        settled = await self._settle(draft_id, idempotency_key, values)
        if settled is None:
            raise NotBeingSubmitted(await self.get(draft_id), idempotency_key)
        return settled

    async def stuck_submissions(self, claimed_before: datetime) -> list[Draft]:
        """Drafts claimed for submit before ``claimed_before`` with no result yet: for an operator."""
        async with self._db.read() as session:
            rows = await session.scalars(
                select(WorkflowDraft)
                .where(WorkflowDraft.status == SUBMITTING, WorkflowDraft.updated_at < claimed_before)
                .order_by(WorkflowDraft.updated_at)
            )
            return [Draft.from_row(row) for row in rows]

    async def cleanup_expired(self, now: datetime) -> int:
        """Delete never-submitted drafts past ``expires_at`` and submitted ones past the retention.
        Drafts being submitted are never deleted. Returns how many rows went."""
        async with self._db.transaction() as session:
            abandoned = await session.execute(
                delete(WorkflowDraft)
                .where(WorkflowDraft.status.in_([OPEN, CANCELLED, EXPIRED]), WorkflowDraft.expires_at <= now)
                .execution_options(synchronize_session=False)
            )
            purged = await session.execute(
                delete(WorkflowDraft)
                .where(WorkflowDraft.status == SUBMITTED, WorkflowDraft.submitted_at <= now - self._keep_submitted)
                .execution_options(synchronize_session=False)
            )
        return rows_affected(abandoned) + rows_affected(purged)

    # -- internals ---------------------------------------------------------------------------------

    async def _claim(self, draft_id: DraftId, expected_version: int, key: str, submitter: str) -> Draft | None:
        """Take the draft for submit with ``key``; None if some submit already holds the key."""
        now = self._clock.now()
        async with self._db.transaction() as session:
            if await session.scalar(select(WorkflowDraft.id).where(WorkflowDraft.idempotency_key == key)) is not None:
                return None
            try:
                claim = {"status": SUBMITTING, "idempotency_key": key} | ({"owner": submitter} if submitter else {})
                return await compare_and_set(session, draft_id, expected_version, now, claim)
            except (StaleDraft, DraftClosed) as refused:
                if refused.draft.idempotency_key == key:
                    return None  # a concurrent submit with the same key claimed it just before us
                raise

    async def _follow(self, draft_id: DraftId, expected_version: int, key: str, wait_s: float) -> SubmitResult:
        """Report on the submit that holds ``key``, waiting up to ``wait_s`` for its result. Polls by
        count, not by clock: an injected test clock does not move while we wait."""
        polls_left = math.ceil(max(wait_s, 0.0) / _POLL_S)
        while True:
            async with self._db.read() as session:
                holder = await session.scalar(select(WorkflowDraft).where(WorkflowDraft.idempotency_key == key))
                draft = None if holder is None else Draft.from_row(holder)
            if draft is None:
                # The holder's action raised and released the key: nothing was done.
                current = await self.get(draft_id)
                raise StaleDraft(current, expected_version, " (a concurrent submit with this key failed)")
            if draft.id != draft_id:
                raise IdempotencyKeyReused(key, draft)
            if draft.status == SUBMITTED and draft.result is not None:
                return Submitted(draft, draft.result, replayed=True)
            if polls_left == 0:
                return SubmitPending(draft)
            polls_left -= 1
            await asyncio.sleep(_POLL_S)

    async def _settle(self, draft_id: DraftId, key: str, values: dict[str, Any]) -> Draft | None:
        async with self._db.transaction() as session:
            return await settle(session, draft_id, key, self._clock.now(), values)
