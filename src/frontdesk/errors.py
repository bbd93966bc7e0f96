"""The typed error tree. HTTP responses are made from these in one place (``app.py``).

FrontdeskError
├── ConfigError            our fault: a bad setting, an unknown model string
├── PayloadError           the sender's fault: malformed or invalid input        → 400 / 422
│   ├── ConflictError      an idempotency key reused with different content      → 409
│   └── TooLargeError      a body over the endpoint's size limit                 → 413
├── AuthError              the sender is not who they claim to be                → 401
│   └── ForbiddenError     a handshake with the wrong token (Meta expects 403)   → 403
├── NotFoundError          an id in the URL names nothing we know                → 404
├── ModelAPIError          a model vendor failed (status, retry_after, transient)
└── ChannelAPIError        a messaging platform failed (status, retry_after)
"""

from __future__ import annotations

from typing import Any


class FrontdeskError(Exception):
    """Base of every error frontdesk raises on purpose."""

    code = "error"

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class ConfigError(FrontdeskError):
    code = "config_invalid"


class PayloadError(FrontdeskError):
    """Input from outside failed validation. ``malformed`` means it was not even parseable."""

    code = "payload_invalid"

    def __init__(self, message: str, *, details: Any = None, malformed: bool = False) -> None:
        super().__init__(message, details=details)
        self.malformed = malformed
        if malformed:
            self.code = "payload_malformed"


class ConflictError(PayloadError):
    code = "idempotency_conflict"


class TooLargeError(PayloadError):
    code = "payload_too_large"


class AuthError(FrontdeskError):
    code = "unauthorized"


class ForbiddenError(AuthError):
    code = "forbidden"


class NotFoundError(FrontdeskError):
    code = "not_found"


class _VendorError(FrontdeskError):
    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class ModelAPIError(_VendorError):
    """``transient``: the same request may well succeed later (a timeout, no connection, 429,
    5xx), so a turn that has done nothing yet is worth retrying; otherwise (a refused request,
    an answer we cannot read) asking again would fail the same way."""

    code = "model_api_error"

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None, transient: bool = False
    ) -> None:
        super().__init__(message, status=status, retry_after=retry_after)
        self.transient = transient


# Statuses a vendor uses for "not now": timeout, conflict, too early, rate limit, and its own faults.
TRANSIENT_HTTP_STATUSES = frozenset({408, 409, 425, 429})


def transient_status(status: int) -> bool:
    return status in TRANSIENT_HTTP_STATUSES or status >= 500


class ChannelAPIError(_VendorError):
    """``permanent``: asking again would fail the same way (a 4xx that is not a "not now", a file
    over our limit, a URL we refuse to follow), so a job gives up at once instead of retrying;
    it defaults to what ``status`` says and, without a status, to worth retrying."""

    code = "channel_api_error"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        permanent: bool | None = None,
    ) -> None:
        super().__init__(message, status=status, retry_after=retry_after)
        self.permanent = permanent if permanent is not None else status is not None and not transient_status(status)
