"""``frontdesk accounts``: connect a channel account (config plus write-only credentials)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from frontdesk.errors import ConfigError
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, Tenant

ACCOUNT_ID_PATTERN = r"^[A-Za-z0-9_-]{8,40}$"


@dataclass(frozen=True)
class AccountSummary:
    """What may be shown about an account: secret *names*, never values."""

    id: str
    tenant_id: str
    channel: str
    name: str
    config: Mapping[str, object]
    secret_names: tuple[str, ...]


def parse_pairs(pairs: Sequence[str], what: str) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{what} {pair.split('=')[0]!r} must look like key=value")
        parsed[key.strip()] = value
    return parsed


async def upsert_account(
    db: Database,
    *,
    account_id: str,
    tenant_id: str,
    channel: str,
    name: str | None,
    config: Mapping[str, str],
    secrets: Mapping[str, str],
    now: datetime,
) -> AccountSummary:
    """Create the account, or merge new config and secrets into it (an empty value removes a key)."""
    async with db.transaction() as session:
        if await session.get(Tenant, tenant_id) is None:
            raise ConfigError(f"no tenant {tenant_id!r}")
        account = await session.get(ChannelAccount, account_id)
        if account is None:
            account = ChannelAccount(
                id=account_id,
                tenant_id=tenant_id,
                channel=channel,
                name=name or account_id,
                config={},
                secrets={},
                created_at=now,
            )
            session.add(account)
        elif account.channel != channel or account.tenant_id != tenant_id:
            raise ConfigError(f"account {account_id!r} is a {account.channel} account of tenant {account.tenant_id}")
        account.config = {k: v for k, v in {**account.config, **config}.items() if v != ""}
        account.secrets = {k: v for k, v in {**(account.secrets or {}), **secrets}.items() if v != ""}
        if name:
            account.name = name
        await session.flush()
        return summary(account)


def summary(account: ChannelAccount) -> AccountSummary:
    return AccountSummary(
        account.id,
        account.tenant_id,
        account.channel,
        account.name,
        dict(account.config),
        tuple(sorted(account.secrets or {})),
    )
