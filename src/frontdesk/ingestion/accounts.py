"""Channel accounts as adapters and renderers see them: config plus credentials, cached briefly.

Credentials live in ``channel_accounts.secrets`` and leave this module only as the ``Credentials``
object, whose ``repr`` masks every value, so a stray log line or trace cannot print a token.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from frontdesk.errors import AuthError, NotFoundError
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount

CACHE_TTL_S = 30.0


class Credentials:
    """Read-only secrets of one account. ``str``/``repr`` never show a value."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = {k: str(v) for k, v in values.items() if v not in (None, "")}

    def get(self, name: str) -> str | None:
        return self._values.get(name)

    def require(self, name: str) -> str:
        value = self._values.get(name)
        if value is None:
            raise AuthError(f"this channel account has no {name} configured")
        return value

    def __repr__(self) -> str:
        return f"Credentials({', '.join(f'{k}=***' for k in sorted(self._values))})"

    __str__ = __repr__


@dataclass(frozen=True)
class AccountView:
    id: str
    tenant_id: str
    channel: str
    config: Mapping[str, Any]
    credentials: Credentials = field(repr=False)


class AccountDirectory:
    """Looks accounts up by id for webhooks and renderers, with a short cache (a webhook burst
    should not cost a read per call; a credential change is seen within ``CACHE_TTL_S``)."""

    def __init__(self, db: Database, ttl_s: float = CACHE_TTL_S) -> None:
        self._db = db
        self._ttl_s = ttl_s
        self._cache: dict[str, tuple[float, AccountView | None]] = {}

    async def get(self, account_id: str, channels: tuple[str, ...]) -> AccountView:
        """The account, if it exists and serves one of ``channels``; else ``NotFoundError``."""
        cached = self._cache.get(account_id)
        if cached is not None and time.monotonic() - cached[0] < self._ttl_s:
            view = cached[1]
        else:
            async with self._db.read() as session:
                row = await session.get(ChannelAccount, account_id)
            view = (
                AccountView(row.id, row.tenant_id, row.channel, dict(row.config), Credentials(row.secrets or {}))
                if row is not None
                else None
            )
            self._cache[account_id] = (time.monotonic(), view)
        if view is None or view.channel not in channels:
            raise NotFoundError(f"no {'/'.join(channels)} channel account {account_id!r}")
        return view

    def forget(self, account_id: str) -> None:
        self._cache.pop(account_id, None)


def same_secret(given: str | bytes | None, expected: str | bytes | None) -> bool:
    """Constant-time comparison; a missing value on either side never matches."""
    if not given or not expected:
        return False
    a = given.encode() if isinstance(given, str) else given
    b = expected.encode() if isinstance(expected, str) else expected
    return hmac.compare_digest(a, b)
