"""Durable workflow/draft state: multi-step flows that survive restarts, with compare-and-set on
``version``, a TTL, and submits that run their side effect at most once per idempotency key."""

from frontdesk.workflows.draft import (
    Action,
    Draft,
    DraftId,
    DraftStatus,
    SubmitPending,
    SubmitResult,
    Submitted,
)
from frontdesk.workflows.errors import (
    DraftClosed,
    DraftExists,
    DraftExpired,
    DraftNotFound,
    IdempotencyKeyReused,
    NotBeingSubmitted,
    StaleDraft,
)
from frontdesk.workflows.store import DEFAULT_KEEP_SUBMITTED_S, DEFAULT_TTL_S, WorkflowStore

__all__ = [
    "DEFAULT_KEEP_SUBMITTED_S",
    "DEFAULT_TTL_S",
    "Action",
    "Draft",
    "DraftClosed",
    "DraftExists",
    "DraftExpired",
    "DraftId",
    "DraftNotFound",
    "DraftStatus",
    "IdempotencyKeyReused",
    "NotBeingSubmitted",
    "StaleDraft",
    "SubmitPending",
    "SubmitResult",
    "Submitted",
    "WorkflowStore",
]
