"""CSRF: a synchronizer token per session, posted back by every form (``csrf`` field) or sent
as ``X-CSRF-Token`` by script; compared in constant time. The sign-in form, which has no
session yet, uses a double-submit cookie instead."""

from __future__ import annotations

import hmac

from fastapi import Request

from frontdesk.errors import ForbiddenError, PayloadError

FIELD = "csrf"
HEADER = "x-csrf-token"
PRE_LOGIN_COOKIE = "frontdesk_console_login"
MAX_FORM_BYTES = 64 * 1024  # the largest console form (policy) is a few kilobytes


async def posted_token(request: Request) -> str:
    header = request.headers.get(HEADER)
    if header:
        return header
    content_type = request.headers.get("content-type", "")
    if int(request.headers.get("content-length") or 0) > MAX_FORM_BYTES:
        raise PayloadError(f"the form is larger than {MAX_FORM_BYTES} bytes")
    if content_type.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        value = (await request.form()).get(FIELD)  # starlette caches the parsed form
        return value if isinstance(value, str) else ""
    return ""


async def require(request: Request, expected: str) -> None:
    """Refuse (403) a state-changing request whose token does not match ``expected``."""
    given = await posted_token(request)
    if not expected or not given or not hmac.compare_digest(given.encode(), expected.encode()):
        raise ForbiddenError("missing or invalid CSRF token: reload the page and try again")
