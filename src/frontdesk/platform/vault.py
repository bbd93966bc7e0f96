"""The credential vault: secrets sealed at rest, looked up by ``(tenant_id, name)``.

* **Storage**: the ``credentials`` table holds AES-256-GCM envelopes (``vault_envelope``) bound to
  their tenant and name. With a master key configured nothing is written in plaintext.
* **Keys**: ``FRONTDESK_VAULT_KEY`` or ``FRONTDESK_VAULT_KEY_FILE``, newest first; the newest seals,
  all of them open, ``rotate`` re-seals everything under the newest (docs/operations.md).
* **No key** (the demo, tests, local development): the vault is read-only. ``put`` refuses with a
  ConfigError; lookups still see the environment fallback below. Envelopes already stored
  cannot be opened and say so (``VaultError``), they are never silently ignored.
* **Environment fallback** (read-only, below anything stored): ``FRONTDESK_SECRET__<TENANT>__<NAME>``
  with tenant and name upper-cased and every character outside ``A-Z 0-9`` replaced by ``_``:
  ``channel/tg-shop-01/bot_token`` of tenant ``demo`` is ``FRONTDESK_SECRET__DEMO__CHANNEL_TG_SHOP_01_BOT_TOKEN``.
* **Cache**: reads are cached per process for ``vault_cache_ttl_s``; a write through this object
  clears that tenant's entries at once. Other instances see a write within the TTL (they have
  their own cache), which is the price of not reading the table on every webhook.

Values leave this module only as return values: they are never logged, and nothing here has a
``repr`` that could show one.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.errors import ConfigError
from frontdesk.platform.clock import Clock, SystemClock
from frontdesk.platform.store.engine import Database, rows_affected
from frontdesk.platform.store.schema_vault import Credential
from frontdesk.platform.vault_envelope import MasterKeys, VaultError, generate_key, key_id

if TYPE_CHECKING:
    from frontdesk.settings import Settings

__all__ = [
    "ENV_PREFIX",
    "MasterKeys",
    "RotationReport",
    "Vault",
    "VaultError",
    "build_vault",
    "env_name",
    "env_spelling",
    "generate_key",
    "key_id",
]

log = logging.getLogger(__name__)

ENV_PREFIX = "FRONTDESK_SECRET__"
NAME_PATTERN = re.compile(r"[A-Za-z0-9._:/-]{1,200}")
_NOT_ENV = re.compile(r"[^A-Z0-9]")


def env_spelling(text: str) -> str:
    """``text`` as it appears in an environment variable name: upper case, punctuation as ``_``.
    Not one-to-one: ids that spell alike here must not live side by side (``upsert_account``)."""
    return _NOT_ENV.sub("_", text.upper())


def env_name(tenant_id: str, name: str) -> str:
    """The environment variable that may hold ``name`` of ``tenant_id`` when the vault does not."""
    return f"{ENV_PREFIX}{env_spelling(tenant_id)}__{env_spelling(name)}"


@dataclass(frozen=True)
class RotationReport:
    total: int
    resealed: int
    already_current: int
    current_key_id: str


class Vault:
    """Sealed credentials of every tenant. One per process, shared (the cache lives here)."""

    def __init__(
        self,
        db: Database,
        keys: MasterKeys,
        clock: Clock | None = None,
        *,
        cache_ttl_s: float = 30.0,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._db = db
        self._keys = keys
        self._clock = clock or SystemClock()
        self._ttl_s = cache_ttl_s
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        # (tenant, prefix) -> (read at, {name: value}); a name lookup is a prefix lookup of itself.
        self._cache: dict[tuple[str, str], tuple[float, dict[str, str]]] = {}
        self._writes = 0  # a read that overlapped a write must not cache what it read before it

    def __repr__(self) -> str:
        return f"Vault({self._keys!r}, cache_ttl_s={self._ttl_s})"

    @property
    def can_seal(self) -> bool:
        """A master key is configured: writes are accepted (and encrypted)."""
        return self._keys.configured

    # -- reads -----------------------------------------------------------------------------------

    async def get(self, tenant_id: str, name: str) -> str | None:
        """The stored value, else the environment fallback, else None."""
        return (await self._lookup(tenant_id, name, exact=True)).get(name)

    async def get_prefix(self, tenant_id: str, prefix: str) -> dict[str, str]:
        """Every credential whose name starts with ``prefix``, keyed by the rest of the name.
        Environment names cannot be mapped back exactly, so their rest is lower-cased
        (``..._BOT_TOKEN`` -> ``bot_token``); stored names win over environment ones."""
        found = await self._lookup(tenant_id, prefix, exact=False)
        return {name[len(prefix) :]: value for name, value in found.items()}

    async def names(self, tenant_id: str, prefix: str = "") -> list[str]:
        """Stored names (not the environment's), sorted. Never touches a value or a key."""
        _check_name(prefix, allow_empty=True)
        async with self._db.read() as session:
            rows = await session.scalars(
                select(Credential.name).where(
                    Credential.tenant_id == tenant_id, Credential.name.startswith(prefix, autoescape=True)
                )
            )
            return sorted(rows)

    async def _lookup(self, tenant_id: str, key: str, *, exact: bool) -> dict[str, str]:
        _check_name(key, allow_empty=not exact)
        cache_key = (tenant_id, ("=" if exact else "*") + key)
        cached = self._cache.get(cache_key)
        if cached is not None and self._clock.monotonic() - cached[0] < self._ttl_s:
            return cached[1]
        writes_before = self._writes
        found = self._from_env(tenant_id, key, exact=exact)
        async with self._db.read() as session:
            where = Credential.name == key if exact else Credential.name.startswith(key, autoescape=True)
            rows = (await session.execute(
                select(Credential.name, Credential.envelope).where(Credential.tenant_id == tenant_id, where)
            )).all()  # fmt: skip
        for name, envelope in rows:
            found[name] = self._keys.open(envelope, tenant_id, name)
        if self._writes == writes_before:
            self._cache[cache_key] = (self._clock.monotonic(), found)
        return found

    def _from_env(self, tenant_id: str, key: str, *, exact: bool) -> dict[str, str]:
        variable = env_name(tenant_id, key)
        if exact:
            value = self._environ.get(variable)
            return {key: value} if value else {}
        return {
            key + var[len(variable) :].lower(): value
            for var, value in self._environ.items()
            if var.startswith(variable) and len(var) > len(variable) and value
        }

    # -- writes ----------------------------------------------------------------------------------

    async def put(self, tenant_id: str, name: str, value: str) -> None:
        """Seal and store ``value`` (replacing any previous one). Needs a master key."""
        async with self._db.transaction() as session:
            await self.stage(session, tenant_id, name, value)

    async def delete(self, tenant_id: str, name: str) -> bool:
        """Remove a stored credential; True if there was one. (The environment is not touched.)"""
        async with self._db.transaction() as session:
            return await self.unstage(session, tenant_id, name)

    async def stage(self, session: AsyncSession, tenant_id: str, name: str, value: str) -> None:
        """``put`` inside the caller's transaction, so a credential commits with the row it
        belongs to (a channel account). The cache is cleared now; a rollback only costs a read."""
        _check_name(name)
        if not self._keys.configured:
            raise ConfigError(
                "the vault has no master key, so it cannot store secrets: set FRONTDESK_VAULT_KEY"
                " (make one with `frontdesk vault keygen`), or for local development export"
                f" {env_name(tenant_id, name)}"
            )
        if not value:
            raise ConfigError(f"an empty value for credential {name!r}: delete it instead")
        envelope = self._keys.seal(value, tenant_id, name)
        current = self._keys.current_id or ""
        now = self._clock.now()
        row = await session.scalar(select(Credential).where(Credential.tenant_id == tenant_id, Credential.name == name))
        if row is None:
            session.add(
                Credential(
                    tenant_id=tenant_id,
                    name=name,
                    envelope=envelope,
                    key_id=current,
                    created_at=now,
                    updated_at=now,
                )
            )
        else:
            row.envelope, row.key_id, row.updated_at = envelope, current, now
        await session.flush()
        self.forget(tenant_id)
        log.info("vault: stored credential %s of tenant %s", name, tenant_id)

    async def unstage(self, session: AsyncSession, tenant_id: str, name: str) -> bool:
        _check_name(name)
        result = await session.execute(
            delete(Credential).where(Credential.tenant_id == tenant_id, Credential.name == name)
        )
        self.forget(tenant_id)
        removed = rows_affected(result) > 0
        if removed:
            log.info("vault: deleted credential %s of tenant %s", name, tenant_id)
        return removed

    def forget(self, tenant_id: str | None = None) -> None:
        """Drop cached reads (of one tenant, or all)."""
        self._writes += 1
        for cache_key in [k for k in self._cache if tenant_id is None or k[0] == tenant_id]:
            del self._cache[cache_key]

    async def rotate(self, batch: int = 200) -> RotationReport:
        """Re-seal every credential that is not under the current key. Old keys can be removed
        from the configuration once this reports nothing left to re-seal. Safe to re-run."""
        current = self._keys.current_id
        if current is None:
            raise ConfigError("vault rotate needs a master key: set FRONTDESK_VAULT_KEY or FRONTDESK_VAULT_KEY_FILE")
        async with self._db.read() as session:
            total = len((await session.scalars(select(Credential.id))).all())
        resealed = 0
        while True:
            # Short transactions in batches: a large vault never holds the write lock for long.
            async with self._db.transaction() as session:
                rows = list(
                    await session.scalars(
                        select(Credential).where(Credential.key_id != current).order_by(Credential.id).limit(batch)
                    )
                )
                for row in rows:
                    plain = self._keys.open(row.envelope, row.tenant_id, row.name)
                    row.envelope = self._keys.seal(plain, row.tenant_id, row.name)
                    row.key_id, row.updated_at = current, self._clock.now()
            resealed += len(rows)
            if len(rows) < batch:
                break
        self.forget()
        log.info("vault: rotated to key %s: %d re-sealed, %d already current", current, resealed, total - resealed)
        return RotationReport(total, resealed, total - resealed, current)

    async def key_ids_in_use(self) -> dict[str, int]:
        """How many credentials each key id seals (what must stay configured)."""
        async with self._db.read() as session:
            ids = list(await session.scalars(select(Credential.key_id)))
        counts: dict[str, int] = {}
        for kid in ids:
            counts[kid] = counts.get(kid, 0) + 1
        return counts


def build_vault(db: Database, settings: Settings, clock: Clock | None = None) -> Vault:
    """The vault the settings describe (the composition root calls this once)."""
    keys = MasterKeys.load(settings.vault_key, _path(settings.vault_key_file))
    return Vault(db, keys, clock, cache_ttl_s=settings.vault_cache_ttl_s)


def _path(value: Path | None) -> Path | None:
    return value.expanduser() if value is not None else None


def _check_name(name: str, *, allow_empty: bool = False) -> None:
    if (allow_empty and name == "") or NAME_PATTERN.fullmatch(name):
        return
    raise ConfigError(f"credential name {name!r}: use 1-200 of A-Z a-z 0-9 . _ : / -")
