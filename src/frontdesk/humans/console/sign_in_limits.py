"""How many passwords the console checks: attempts are counted before the check, per key.

Keys, each with a fixed window (``console_login_window_s``):

- ``ip:<address>``: every attempt from a client address (one address guessing many operators);
- ``account:<email>``: attempts at one operator from browsers they have never signed in from;
- ``device:<id>``: attempts from one browser the operator has signed in from before (its device
  cookie). A stranger's guesses fill the first two, never this one, so they cannot lock the
  operator out of the browser they use (OWASP's "device cookies"); a stolen device cookie gets
  its own few guesses and nothing more.

An attempt claims its keys in one transaction, with a conditional UPDATE per key: on PostgreSQL
parallel claims queue on the row lock and each sees the count the previous one left; SQLite
serialises writers anyway. So 150 guesses sent at once get exactly the limit's number of checks,
as 150 sent one by one would. A success gives its attempt back (a typo then a sign-in is not two
strikes). Counters are per window, not sliding: at a window's edge up to twice the limit can pass,
which still caps a guesser at a few attempts a minute.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from sqlalchemy import case, delete, literal, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.platform.store.schema import UTCDateTime
from frontdesk.platform.store.schema_console import ConsoleDevice, ConsoleLoginCounter, Operator

DEVICE_COOKIE = "frontdesk_device"
SECURE_DEVICE_COOKIE = "__Host-frontdesk_device"
DEVICE_TTL_S = 180 * 24 * 3600.0  # a browser unused this long is a stranger again


class _OverLimit(Exception):
    """Raised inside the claiming transaction so that no key of a refused attempt is counted."""


def device_cookie_name(deps: ConsoleDeps) -> str:
    return SECURE_DEVICE_COOKIE if deps.config.secure_cookies else DEVICE_COOKIE


def _device_id(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def known_device(deps: ConsoleDeps, email: str, token: str | None) -> str | None:
    """The id of the device cookie ``token`` when it is one of the active operator ``email``'s."""
    if not token or len(token) > 100:
        return None
    since = deps.clock.now() - timedelta(seconds=DEVICE_TTL_S)
    async with deps.db.read() as session:
        found = await session.scalar(
            select(ConsoleDevice.id)
            .join(Operator, Operator.id == ConsoleDevice.operator_id)
            .where(
                ConsoleDevice.id == _device_id(token),
                ConsoleDevice.last_used_at > since,
                Operator.email == email,
                Operator.active.is_(True),
            )
        )
    return found


def attempt_keys(email: str, ip: str, device_id: str | None) -> list[tuple[str, str]]:
    """(key, which limit) pairs an attempt is counted against; the order is the locking order."""
    if device_id is not None:
        return [(f"device:{device_id}", "account")]
    return [(f"ip:{ip}", "ip"), (f"account:{email}", "account")]


async def claim(deps: ConsoleDeps, keys: list[tuple[str, str]]) -> bool:
    """Count one attempt against every key, or against none when one is at its limit."""
    limits = {"ip": deps.config.login_max_attempts_per_ip, "account": deps.config.login_max_attempts}
    now = deps.clock.now()
    cutoff = now - timedelta(seconds=deps.config.login_window_s)
    try:
        async with deps.db.transaction() as session:
            for key, kind in keys:
                if not await _claim_one(session, key, limits[kind], now, cutoff):
                    raise _OverLimit
    except _OverLimit:
        return False
    return True


async def _claim_one(session: AsyncSession, key: str, limit: int, now: datetime, cutoff: datetime) -> bool:
    # UPDATE first (the common case: the row is there); a missing row is inserted already
    # counting this attempt; a row that appeared meanwhile (a parallel first attempt) is updated.
    insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else postgresql_insert
    expired = ConsoleLoginCounter.window_start <= cutoff
    counted = (
        update(ConsoleLoginCounter)
        .where(ConsoleLoginCounter.key == key, or_(expired, ConsoleLoginCounter.attempts < limit))
        .values(
            attempts=case((expired, 1), else_=ConsoleLoginCounter.attempts + 1),
            window_start=case((expired, literal(now, UTCDateTime())), else_=ConsoleLoginCounter.window_start),
        )
        .returning(ConsoleLoginCounter.attempts)
    )
    first = (
        insert(ConsoleLoginCounter)
        .values(key=key, window_start=now, attempts=1)
        .on_conflict_do_nothing(index_elements=["key"])
        .returning(ConsoleLoginCounter.key)
    )
    for statement in (counted, first, counted):
        if (await session.execute(statement)).first() is not None:
            return True
    return False


async def give_back(session: AsyncSession, keys: list[tuple[str, str]]) -> None:
    """A successful attempt is not held against anyone."""
    await session.execute(
        update(ConsoleLoginCounter)
        .where(ConsoleLoginCounter.key.in_([key for key, _ in keys]), ConsoleLoginCounter.attempts > 0)
        .values(attempts=ConsoleLoginCounter.attempts - 1)
    )


async def remember_device(session: AsyncSession, operator_id: str, device_id: str | None, now: datetime) -> str | None:
    """Mark the browser as this operator's: a new device cookie token to set, or None when the
    browser already holds one of theirs (its row is touched)."""
    if device_id is not None:
        await session.execute(update(ConsoleDevice).where(ConsoleDevice.id == device_id).values(last_used_at=now))
        return None
    token = secrets.token_urlsafe(32)
    session.add(ConsoleDevice(id=_device_id(token), operator_id=operator_id, created_at=now, last_used_at=now))
    return token


async def forget_old(session: AsyncSession, now: datetime, window_s: float) -> None:
    """Housekeeping on sign-in: devices unused past their lifetime, counters past their window."""
    await session.execute(
        delete(ConsoleDevice).where(ConsoleDevice.last_used_at <= now - timedelta(seconds=DEVICE_TTL_S))
    )
    await session.execute(
        delete(ConsoleLoginCounter).where(ConsoleLoginCounter.window_start <= now - timedelta(seconds=window_s))
    )
