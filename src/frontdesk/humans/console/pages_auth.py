"""Sign-in and sign-out."""

from __future__ import annotations

import secrets

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from frontdesk.humans.console import csrf, sign_in_limits
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._guard import LOGIN_PATH, actor
from frontdesk.humans.console._render import audit, page, parse_form
from frontdesk.humans.console.auth import (
    authenticate,
    client_ip,
    cookie_name,
    current_principal,
    end_session,
    start_session,
)
from frontdesk.humans.console.i18n import from_accept_language
from frontdesk.humans.console.sign_in_limits import DEVICE_TTL_S, device_cookie_name


class LoginForm(BaseModel):
    model_config = ConfigDict(frozen=True, str_strip_whitespace=True)
    email: str = Field(min_length=3, max_length=254)
    password: str = Field(min_length=1, max_length=1024)


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    @router.get("/console/login", response_class=HTMLResponse)
    async def login_page(request: Request) -> Response:
        if await current_principal(deps, request) is not None:
            return RedirectResponse("/console", status_code=303)
        return _login_form(deps, request, error=None, status=200)

    @router.post("/console/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:
        await csrf.require(request, request.cookies.get(csrf.PRE_LOGIN_COOKIE, ""))
        form = await parse_form(request, LoginForm)
        email, ip = form.email.lower(), client_ip(request)
        device = await sign_in_limits.known_device(deps, email, request.cookies.get(device_cookie_name(deps)))
        keys = sign_in_limits.attempt_keys(email, ip, device)
        if not await sign_in_limits.claim(deps, keys):  # counted before the password is checked
            return _login_form(deps, request, error="login.too_many", status=429)
        operator = await authenticate(deps, email, form.password, ip, keys)
        if operator is None:
            return _login_form(deps, request, error="login.failed", status=401)
        token = await start_session(deps, operator)
        async with deps.db.transaction() as session:
            new_device = await sign_in_limits.remember_device(session, operator.id, device, deps.clock.now())
            audit(
                session,
                None,
                operator.tenant_id,
                "signed_in",
                deps.clock.now(),
                target=operator.id,
                operator_id=operator.id,
            )
        response = RedirectResponse("/console", status_code=303)
        response.set_cookie(
            cookie_name(deps),
            token,
            max_age=int(deps.config.session_ttl_s),
            path="/",
            secure=deps.config.secure_cookies,
            httponly=True,
            samesite="lax",
        )
        if new_device is not None:
            response.set_cookie(
                device_cookie_name(deps),
                new_device,
                max_age=int(DEVICE_TTL_S),
                path="/",
                secure=deps.config.secure_cookies,
                httponly=True,
                samesite="strict",
            )
        response.delete_cookie(csrf.PRE_LOGIN_COOKIE, path="/console")
        return response

    @router.post("/console/logout")
    async def logout(request: Request) -> Response:
        me = await actor(deps, request)
        await end_session(deps, me.session_id)
        async with deps.db.transaction() as session:
            audit(session, me, me.tenant_id, "signed_out", deps.clock.now(), target=me.operator_id)
        response = RedirectResponse(LOGIN_PATH, status_code=303)
        response.delete_cookie(cookie_name(deps), path="/", secure=deps.config.secure_cookies, httponly=True)
        return response


def _login_form(deps: ConsoleDeps, request: Request, *, error: str | None, status: int) -> Response:
    # Double-submit token: a cross-site page can post the form but cannot read or set our cookie.
    token = secrets.token_urlsafe(24)
    language = from_accept_language(request.headers.get("accept-language"))
    response = page("login.html", None, language=language, status=status, error=error, csrf_token=token)
    response.set_cookie(
        csrf.PRE_LOGIN_COOKIE,
        token,
        max_age=3600,
        path="/console",
        secure=deps.config.secure_cookies,
        httponly=True,
        samesite="strict",
    )
    return response
