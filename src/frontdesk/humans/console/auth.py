"""Sign-in: argon2id password hashes, server-side sessions, login rate limiting, roles.

Sessions live in a table (``console_sessions``), not in a signed cookie: signing out, an
expired session and a deactivated operator take effect at once on every instance, and the
cookie carries nothing but an unguessable token (its SHA-256 is the row's key). That costs one
primary-key read per request, which the console can afford.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from fastapi import Request
from sqlalchemy import delete, select

from frontdesk.humans.console import sign_in_limits
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console.passwords import MIN_PASSWORD as MIN_PASSWORD  # the CLI prompt names it
from frontdesk.humans.console.passwords import password_problem
from frontdesk.platform.store.schema_console import ConsoleLoginAttempt, ConsoleSession, Operator

Role = Literal["owner", "agent"]
ROLES: tuple[Role, ...] = ("owner", "agent")
COOKIE = "frontdesk_console"
SECURE_COOKIE = "__Host-frontdesk_console"  # the prefix forbids Domain and requires Secure + Path=/

# argon2-cffi's defaults are the RFC 9106 "low memory" argon2id profile (64 MiB, t=3, p=4).
_HASHER = PasswordHasher()
# Verified against when the e-mail is unknown, so a miss costs as long as a wrong password.
_DUMMY_HASH = _HASHER.hash(secrets.token_urlsafe(16))
ATTEMPTS_KEPT_S = 7 * 24 * 3600.0  # sign-in attempts stay a week for anyone investigating abuse


@dataclass(frozen=True)
class Principal:
    """The signed-in operator, as every console route sees them."""

    session_id: str
    operator_id: str
    tenant_id: str
    name: str
    email: str
    role: str
    language: str
    csrf_token: str

    @property
    def is_owner(self) -> bool:
        return self.role == "owner"


def hash_password(password: str, *, email: str = "", name: str = "") -> str:
    """The argon2id hash of an operator's new password; ValueError (its reason) when the rules
    in ``passwords.py`` refuse it. ``email`` and ``name``: the operator's, which it must not contain."""
    problem = password_problem(password, email=email, name=name)
    if problem is not None:
        raise ValueError(problem)
    return _HASHER.hash(password)


def password_matches(stored_hash: str | None, password: str) -> bool:
    try:
        return _HASHER.verify(stored_hash or _DUMMY_HASH, password) and stored_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def cookie_name(deps: ConsoleDeps) -> str:
    return SECURE_COOKIE if deps.config.secure_cookies else COOKIE


def _key(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def client_ip(request: Request) -> str:
    # The direct peer, or the client a trusted proxy names: ``serve`` has uvicorn rewrite
    # ``request.client`` from X-Forwarded-For only for the proxies in ``forwarded_allow_ips``.
    return (request.client.host if request.client else "unknown")[:64]


async def authenticate(
    deps: ConsoleDeps, email: str, password: str, ip: str, claimed: list[tuple[str, str]]
) -> Operator | None:
    """The active operator with this e-mail and password, with the attempt recorded either way.
    ``claimed``: the keys this attempt was counted against (``sign_in_limits.claim``), given back
    when it succeeds."""
    async with deps.db.read() as session:
        operator = await session.scalar(select(Operator).where(Operator.email == email, Operator.active.is_(True)))
    # argon2 takes tens of milliseconds of CPU: keep it off the event loop.
    ok = await asyncio.to_thread(password_matches, operator.password_hash if operator else None, password)
    async with deps.db.transaction() as session:
        session.add(ConsoleLoginAttempt(email=email, ip=ip, ok=ok, created_at=deps.clock.now()))
        if ok and operator is not None:
            await sign_in_limits.give_back(session, claimed)
            stored = await session.get(Operator, operator.id)
            if stored is not None:
                stored.last_login_at = deps.clock.now()
    return operator if ok else None


async def start_session(deps: ConsoleDeps, operator: Operator) -> str:
    """A new session for ``operator``; returns the cookie's token (never stored as such)."""
    token = secrets.token_urlsafe(32)
    now = deps.clock.now()
    async with deps.db.transaction() as session:
        session.add(
            ConsoleSession(
                id=_key(token),
                operator_id=operator.id,
                tenant_id=operator.tenant_id,
                csrf_token=secrets.token_urlsafe(32),
                created_at=now,
                expires_at=now + timedelta(seconds=deps.config.session_ttl_s),
            )
        )
        # Housekeeping rides on sign-in (rare, and off every page's path): expired sessions and
        # attempts older than any window still being counted go.
        await session.execute(delete(ConsoleSession).where(ConsoleSession.expires_at <= now))
        keep_after = now - timedelta(seconds=max(deps.config.login_window_s, ATTEMPTS_KEPT_S))
        await session.execute(delete(ConsoleLoginAttempt).where(ConsoleLoginAttempt.created_at < keep_after))
        await sign_in_limits.forget_old(session, now, deps.config.login_window_s)
    return token


async def end_session(deps: ConsoleDeps, session_id: str) -> None:
    async with deps.db.transaction() as session:
        await session.execute(delete(ConsoleSession).where(ConsoleSession.id == session_id))


async def current_principal(deps: ConsoleDeps, request: Request) -> Principal | None:
    """The operator behind the request's cookie, if the session is live and they are active."""
    token = request.cookies.get(cookie_name(deps))
    if not token or len(token) > 100:
        return None
    async with deps.db.read() as session:
        row = (
            await session.execute(
                select(ConsoleSession, Operator)
                .join(Operator, Operator.id == ConsoleSession.operator_id)
                .where(ConsoleSession.id == _key(token))
            )
        ).first()
    if row is None:
        return None
    stored, operator = row
    if stored.expires_at <= deps.clock.now() or not operator.active or operator.tenant_id != stored.tenant_id:
        return None
    return Principal(
        session_id=stored.id,
        operator_id=operator.id,
        tenant_id=stored.tenant_id,
        name=operator.name,
        email=operator.email,
        role=operator.role,
        language=operator.language,
        csrf_token=stored.csrf_token,
    )
