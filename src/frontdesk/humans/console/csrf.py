"""CSRF: a synchronizer token per session, posted back by every form (``csrf`` field) or sent
as ``X-CSRF-Token`` by script; compared in constant time. The sign-in form, which has no
session yet, uses a double-submit cookie instead."""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import Request
from starlette.datastructures import FormData

from frontdesk.errors import ForbiddenError, TooLargeError

FIELD = "csrf"
HEADER = "x-csrf-token"
PRE_LOGIN_COOKIE = "frontdesk_console_login"
MAX_FORM_BYTES = 64 * 1024  # the largest console form (policy) is a few kilobytes


async def read_form(request: Request, limit: int = MAX_FORM_BYTES) -> FormData:
    """The posted form, refused (413) once it passes ``limit`` bytes: by its declared length
    before a byte is read, else while it streams in (a chunked body declares none). Read once
    per request; later calls get the same form. The sign-in form is posted before anyone is
    known, so nothing bigger than a form may reach memory; only a photo upload, whose session
    and role are checked first, reads with a larger ``limit``."""
    cached = getattr(request.state, "console_form", None)
    if isinstance(cached, FormData):
        return cached
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise TooLargeError(f"the form is {declared} bytes; the limit is {limit}")
    received = 0

    async def capped() -> Any:
        nonlocal received
        message = await request.receive()
        received += len(message.get("body", b""))
        if received > limit:
            raise TooLargeError(f"the form is over the {limit}-byte limit")
        return message

    form = await Request(request.scope, capped).form()
    request.state.console_form = form
    return form


async def posted_token(request: Request) -> str:
    header = request.headers.get(HEADER)
    if header:
        return header
    content_type = request.headers.get("content-type", "")
    if content_type.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        value = (await read_form(request)).get(FIELD)
        return value if isinstance(value, str) else ""
    return ""


async def require(request: Request, expected: str) -> None:
    """Refuse (403) a state-changing request whose token does not match ``expected``."""
    given = await posted_token(request)
    if not expected or not given or not hmac.compare_digest(given.encode(), expected.encode()):
        raise ForbiddenError("missing or invalid CSRF token: reload the page and try again")
