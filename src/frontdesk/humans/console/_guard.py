"""Who may call a route: a live session for every page, the CSRF token for every post, the
owner role for configuration."""

from __future__ import annotations

from fastapi import Request
from starlette.exceptions import HTTPException

from frontdesk.errors import AuthError, ForbiddenError
from frontdesk.humans.console import csrf
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console.auth import Principal, current_principal

LOGIN_PATH = "/console/login"


async def viewer(deps: ConsoleDeps, request: Request) -> Principal:
    """For pages: without a live session, go to the sign-in page."""
    principal = await current_principal(deps, request)
    if principal is None:
        raise HTTPException(303, "sign in first", headers={"Location": LOGIN_PATH})
    return principal


async def actor(deps: ConsoleDeps, request: Request, *, owner: bool = False) -> Principal:
    """For posts: a live session (401), its CSRF token (403), and the owner role if asked (403)."""
    principal = await current_principal(deps, request)
    if principal is None:
        raise AuthError("your session has ended: sign in again")
    await csrf.require(request, principal.csrf_token)
    if owner and not principal.is_owner:
        raise ForbiddenError("only an owner can change this")
    return principal


async def uploader(deps: ConsoleDeps, request: Request) -> Principal:
    """For uploads, before their body is read: a live session (401) and the owner role (403), so
    only an owner's browser ever makes us read a body the size of a photo. The caller then reads
    the body (capped) and checks its CSRF token (``csrf.require``)."""
    principal = await current_principal(deps, request)
    if principal is None:
        raise AuthError("your session has ended: sign in again")
    if not principal.is_owner:
        raise ForbiddenError("only an owner can change this")
    return principal


def redirect(location: str) -> HTTPException:
    """A 303 after a post (post/redirect/get), so a reload never repeats the action."""
    return HTTPException(303, "see other", headers={"Location": location})
