"""Channel accounts as adapters and renderers see them: config plus credentials, cached briefly.

An account's credentials are vault entries named ``channel/<account id>/<secret>`` (see
``platform.vault``: sealed at rest, environment fallback for local development). Without a vault
master key they stay in the legacy plaintext column ``channel_accounts.secrets`` (development
only); ``seal_plaintext_secrets`` moves them into the vault once a key is configured.
Lookup order: the vault, then the environment, then the legacy column.

Credentials leave this module only as the ``Credentials`` object, whose ``repr`` masks every
value, so a stray log line or trace cannot print a token.
"""

from __future__ import annotations

import hmac
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from frontdesk.errors import AuthError, NotFoundError
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount
from frontdesk.platform.vault import MasterKeys, Vault

log = logging.getLogger(__name__)

CACHE_TTL_S = 30.0
# Misses are cached too (a burst for an unknown id costs one read), and anyone can make up ids:
# past this many entries the expired ones go, then all, so made-up ids cannot grow memory.
CACHE_MAX_ENTRIES = 4096


# Meta's handshake sends our verify token in the query string (``hub.verify_token=...``), and
# uvicorn's access log prints the whole query. Redact any token/secret-named parameter there.
_SECRET_QUERY = re.compile(r"([?&][^=&\s\"]*(?:token|secret|password)[^=&\s\"]*=)[^&\s\"]*", re.IGNORECASE)


class RedactQuerySecrets(logging.Filter):
    """Masks secret-looking query parameters in access-log lines, whoever configures logging."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(isinstance(a, str) and "=" in a for a in record.args):
            record.args = tuple(_SECRET_QUERY.sub(r"\1***", a) if isinstance(a, str) else a for a in record.args)
        return True


_access_log = logging.getLogger("uvicorn.access")
if not any(isinstance(f, RedactQuerySecrets) for f in _access_log.filters):
    _access_log.addFilter(RedactQuerySecrets())


@dataclass(frozen=True)
class OwnId:
    """The config key naming the platform identity an account answers as, for a channel whose
    webhook secret does not name it (one Meta app secret signs every Page and number of the
    app). The channel registry declares it; ``frontdesk accounts add`` requires it."""

    key: str  # "page_id"
    names: str  # what it names, for messages: "Page"

    def problem(self, config: Mapping[str, Any]) -> str | None:
        """What is wrong with ``config``, as "has no page_id", or None."""
        value = config.get(self.key)
        if value is None or value == "":
            return f"has no {self.key}"
        if isinstance(value, bool) or not _NUMERIC_ID.fullmatch(str(value)):
            return f"has a {self.key} that is not a numeric id ({str(value)[:40]!r})"
        return None

    def consequence(self, config: Mapping[str, Any]) -> str:
        """What an account stored with ``config`` does with webhooks, for a ``problem``."""
        if config.get(self.key) in (None, ""):
            return f"it takes the webhooks of every {self.names} of its Meta app"
        return "it ignores every webhook"


_NUMERIC_ID = re.compile(r"[0-9]{1,30}")  # Meta's Page, Instagram account and phone number ids


def credential_prefix(account_id: str) -> str:
    return f"channel/{account_id}/"


def credential_name(account_id: str, secret: str) -> str:
    """The vault name of one secret of a channel account."""
    return f"{credential_prefix(account_id)}{secret}"


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


@dataclass(frozen=True)
class _Row:
    id: str
    tenant_id: str
    channel: str
    config: Mapping[str, Any]
    legacy: Mapping[str, Any] = field(repr=False)


class AccountDirectory:
    """Looks accounts up by id for webhooks and renderers. The account row is cached for
    ``ttl_s`` (a webhook burst should not cost a read per call; a config change is seen within
    it); credentials come through the vault, whose own cache a vault write clears at once.

    ``vault``: None means a vault with no master key (tests, the demo): environment fallback
    and the legacy plaintext column only."""

    def __init__(self, db: Database, vault: Vault | None = None, *, ttl_s: float = CACHE_TTL_S) -> None:
        self._db = db
        self.vault = vault if vault is not None else Vault(db, MasterKeys())
        self._ttl_s = ttl_s
        self._cache: dict[str, tuple[float, _Row | None]] = {}

    async def get(self, account_id: str, channels: tuple[str, ...]) -> AccountView:
        """The account, if it exists and serves one of ``channels``; else ``NotFoundError``."""
        cached = self._cache.get(account_id)
        if cached is not None and time.monotonic() - cached[0] < self._ttl_s:
            row = cached[1]
        else:
            async with self._db.read() as session:
                found = await session.get(ChannelAccount, account_id)
            row = (
                _Row(found.id, found.tenant_id, found.channel, dict(found.config), dict(found.secrets or {}))
                if found is not None
                else None
            )
            self._remember(account_id, row)
        if row is None or row.channel not in channels:
            raise NotFoundError(f"no {'/'.join(channels)} channel account {account_id!r}")
        vaulted = await self.vault.get_prefix(row.tenant_id, credential_prefix(row.id))
        return AccountView(row.id, row.tenant_id, row.channel, row.config, Credentials({**row.legacy, **vaulted}))

    def forget(self, account_id: str) -> None:
        self._cache.pop(account_id, None)

    def cached(self) -> int:
        """How many account ids (found or not) the cache holds."""
        return len(self._cache)

    def _remember(self, account_id: str, row: _Row | None) -> None:
        now = time.monotonic()
        if len(self._cache) >= CACHE_MAX_ENTRIES:
            self._cache = {k: v for k, v in self._cache.items() if now - v[0] < self._ttl_s}
            if len(self._cache) >= CACHE_MAX_ENTRIES:
                self._cache.clear()
        self._cache[account_id] = (now, row)


async def seal_plaintext_secrets(db: Database, vault: Vault) -> int:
    """Move every plaintext ``channel_accounts.secrets`` value into the vault and empty the
    column, in one transaction; returns how many secrets moved. Idempotent (the runtime calls it
    at every start). Without a master key nothing moves and a warning says what to do."""
    async with db.read() as session:
        holders = [a.id for a in await session.scalars(select(ChannelAccount)) if a.secrets]
    if not holders:
        return 0
    if not vault.can_seal:
        log.warning(
            "%d channel account(s) keep credentials unencrypted (channel_accounts.secrets):"
            " set FRONTDESK_VAULT_KEY to seal them (docs/operations.md, Key management)",
            len(holders),
        )
        return 0
    moved = 0
    async with db.transaction() as session:
        for account in await session.scalars(select(ChannelAccount).where(ChannelAccount.id.in_(holders))):
            for secret, value in (account.secrets or {}).items():
                if value not in (None, ""):
                    await vault.stage(session, account.tenant_id, credential_name(account.id, secret), str(value))
                    moved += 1
            account.secrets = {}
    log.info("vault: sealed %d plaintext channel secret(s) of %d account(s)", moved, len(holders))
    return moved


def same_secret(given: str | bytes | None, expected: str | bytes | None) -> bool:
    """Constant-time comparison; a missing value on either side never matches."""
    if not given or not expected:
        return False
    a = given.encode() if isinstance(given, str) else given
    b = expected.encode() if isinstance(expected, str) else expected
    return hmac.compare_digest(a, b)
