"""The values the workflow store hands out: a draft snapshot and the outcomes of a submit."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NewType, cast

from frontdesk.platform.ids import ConversationId
from frontdesk.platform.store.schema import WorkflowDraft

DraftId = NewType("DraftId", str)

DraftStatus = Literal["open", "submitting", "submitted", "cancelled", "expired"]
OPEN: DraftStatus = "open"
SUBMITTING: DraftStatus = "submitting"
SUBMITTED: DraftStatus = "submitted"
CANCELLED: DraftStatus = "cancelled"
EXPIRED: DraftStatus = "expired"


@dataclass(frozen=True)
class Draft:
    """A snapshot of one draft row. ``phase`` is the flow's own step ("choose_formula", "review"...);
    ``status`` is the lifecycle the store enforces. Changing a draft means ``WorkflowStore.update``
    with this snapshot's ``version``."""

    id: DraftId
    conversation_id: ConversationId
    workflow: str
    phase: str
    status: DraftStatus
    data: dict[str, Any]
    version: int
    owner: str
    expires_at: datetime
    created_at: datetime
    updated_at: datetime
    idempotency_key: str | None
    submitted_at: datetime | None
    result: dict[str, Any] | None

    def is_expired(self, now: datetime) -> bool:
        """Only an open draft expires: once claimed for submit, the side effect may have happened."""
        return self.status == OPEN and self.expires_at <= now

    @classmethod
    def from_row(cls, row: WorkflowDraft) -> Draft:
        # Deep copies: the snapshot must not share mutable JSON with an ORM object.
        return cls(
            id=DraftId(row.id),
            conversation_id=ConversationId(row.conversation_id),
            workflow=row.workflow,
            phase=row.phase,
            status=cast(DraftStatus, row.status),
            data=copy.deepcopy(row.data),
            version=row.version,
            owner=row.owner,
            expires_at=row.expires_at,
            created_at=row.created_at,
            updated_at=row.updated_at,
            idempotency_key=row.idempotency_key,
            submitted_at=row.submitted_at,
            result=copy.deepcopy(row.result),
        )


@dataclass(frozen=True)
class Submitted:
    """The side effect is done and ``result`` is what it produced. ``replayed``: an earlier submit
    with the same key ran it and nothing ran now (a retry, or the loser of a race)."""

    draft: Draft
    result: dict[str, Any]
    replayed: bool
    kind: Literal["submitted"] = "submitted"


@dataclass(frozen=True)
class SubmitPending:
    """A submit with this key has claimed the draft but recorded no result: it is still running, or
    its process died between the side effect and the record. Nothing ran now. Tell the user the
    request is being processed; an operator settles a stuck one with ``WorkflowStore.resolve``."""

    draft: Draft
    kind: Literal["pending"] = "pending"


SubmitResult = Submitted | SubmitPending

# The real side effect, given the draft as claimed (its data can no longer change). Returns the JSON
# result to record. It should pass the idempotency key on to any remote service it calls, so that a
# retry after an ambiguous failure is safe on the remote side too.
Action = Callable[[Draft], Awaitable[dict[str, Any]]]
