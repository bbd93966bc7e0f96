"""Why the workflow store refused. Each carries JSON-safe ``details`` for the API's error body and,
where there is one, the draft as it stands now, so a tool can tell the user what to do next.

ConflictError (409)
├── DraftExists            a live draft of this workflow is already open in the conversation
├── StaleDraft             the caller's version is not the current one (someone wrote first)
├── DraftExpired           the draft's TTL ran out before this write
├── DraftClosed            the draft is being submitted, submitted or cancelled
├── IdempotencyKeyReused   the key already belongs to a different draft
└── NotBeingSubmitted      ``resolve`` found no submit holding the draft with that key
NotFoundError (404)
└── DraftNotFound
"""

from __future__ import annotations

from frontdesk.errors import ConflictError, NotFoundError
from frontdesk.workflows.draft import Draft


def _details(draft: Draft) -> dict[str, object]:
    return {"draft_id": draft.id, "status": draft.status, "version": draft.version}


class DraftNotFound(NotFoundError):
    code = "draft_not_found"

    def __init__(self, draft_id: str) -> None:
        super().__init__(f"no workflow draft {draft_id!r}", details={"draft_id": draft_id})


class DraftExists(ConflictError):
    """Starting a second draft never replaces the first: the user's answers so far would be lost
    silently. Continue ``draft`` or cancel it first."""

    code = "draft_exists"

    def __init__(self, draft: Draft) -> None:
        super().__init__(
            f"a {draft.workflow!r} draft is already {draft.status} in this conversation", details=_details(draft)
        )
        self.draft = draft


class StaleDraft(ConflictError):
    """Compare-and-set lost: re-read the draft (``current_version``) and decide again."""

    code = "draft_stale"

    def __init__(self, draft: Draft, expected_version: int, reason: str = "") -> None:
        super().__init__(
            f"draft {draft.id} is at version {draft.version}, not {expected_version}{reason}",
            details={**_details(draft), "expected_version": expected_version},
        )
        self.draft = draft
        self.current_version = draft.version
        self.expected_version = expected_version


class DraftExpired(ConflictError):
    code = "draft_expired"

    def __init__(self, draft: Draft) -> None:
        super().__init__(
            f"draft {draft.id} expired at {draft.expires_at.isoformat()}",
            details={**_details(draft), "expires_at": draft.expires_at.isoformat()},
        )
        self.draft = draft


class DraftClosed(ConflictError):
    code = "draft_closed"

    def __init__(self, draft: Draft) -> None:
        super().__init__(f"draft {draft.id} is {draft.status} and can no longer change", details=_details(draft))
        self.draft = draft


class IdempotencyKeyReused(ConflictError):
    code = "idempotency_conflict"

    def __init__(self, key: str, owner: Draft) -> None:
        super().__init__(
            f"idempotency key {key!r} was already used to submit draft {owner.id}",
            details={"idempotency_key": key, "draft_id": owner.id},
        )
        self.draft = owner


class NotBeingSubmitted(ConflictError):
    code = "draft_not_submitting"

    def __init__(self, draft: Draft, key: str) -> None:
        super().__init__(
            f"draft {draft.id} is {draft.status}, not being submitted with key {key!r}",
            details={**_details(draft), "idempotency_key": key},
        )
        self.draft = draft
