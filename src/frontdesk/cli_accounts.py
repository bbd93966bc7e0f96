"""``frontdesk accounts``: connect a channel account (config plus write-only credentials).

Credentials go into the vault (``channel/<account id>/<secret>``) when it has a master key;
without one (local development) they stay in the plaintext ``channel_accounts.secrets`` column,
with a warning, and are sealed at the next start once a key is configured."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.errors import ConfigError
from frontdesk.ingestion.accounts import OwnId, credential_name, credential_prefix
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, Tenant
from frontdesk.platform.vault import Vault, build_vault, env_spelling
from frontdesk.settings import Settings

log = logging.getLogger(__name__)

ACCOUNT_ID_PATTERN = r"^[A-Za-z0-9_-]{8,40}$"
# A web chat account's allowed_origins, checked when saved so a typo fails here rather than as a
# widget that cannot connect. ORIGIN_PATTERN of ingestion/channels/webchat/origins.py, which reads
# it (this module may not import a channel, tests/test_layers.py; a test holds the two together).
_ORIGIN = re.compile(r"(?i)(https?)://([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?/?")

# Config values whose shape the platform fixes, checked when saved: a wrong one fails nowhere, it
# misfires quietly (a LINE account with a mistyped destination ignores every webhook; a Telegram
# bot_id that is not the bot's number never tells its own messages apart). Read by the channels'
# inbound.py (this module may not import a channel, tests/test_layers.py). The refusal never
# quotes the value: a bot_id is often the whole bot token pasted.
CONFIG_SHAPES: Mapping[str, Mapping[str, tuple[re.Pattern[str], str]]] = {
    "line": {
        "destination": (
            re.compile(r"U[0-9a-f]{32}"),
            "not a LINE bot user id; expected U followed by 32 lowercase hex characters"
            " (the userId of GET https://api.line.me/v2/bot/info)",
        ),
    },
    "telegram": {
        "bot_id": (
            re.compile(r"[1-9][0-9]{0,19}"),
            "not a Telegram bot id; expected digits only, the number before the colon of the bot token"
            " (123456789 for 123456789:AA...)",
        ),
    },
}


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
    vault: Vault | None = None,
    own_id: OwnId | None,
) -> AccountSummary:
    """Create the account, or merge new config and secrets into it (an empty value removes a key).

    ``vault``: None means the vault the settings (environment) describe, so no caller can store
    plaintext by forgetting to pass one while a key is configured. With a vault that can seal,
    every secret of the account (new ones and any plaintext left in the legacy column) is sealed
    in the same transaction as the account row.

    ``own_id``: the channel's, from the registry the caller holds (required, so no caller skips
    it by forgetting; None for a channel without one): a new account, or an edit of its config,
    must name it."""
    if problem := config_problem(channel, config):
        raise ConfigError(problem)
    if vault is None:
        vault = build_vault(db, Settings())
    async with db.transaction() as session:
        if await session.get(Tenant, tenant_id) is None:
            raise ConfigError(f"no tenant {tenant_id!r}")
        account = await session.get(ChannelAccount, account_id)
        created = account is None
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
            await _refuse_env_twin(session, tenant_id, account_id)
            session.add(account)
        elif account.channel != channel or account.tenant_id != tenant_id:
            raise ConfigError(f"account {account_id!r} is a {account.channel} account of tenant {account.tenant_id}")
        account.config = {k: v for k, v in {**account.config, **config}.items() if v != ""}
        # A new account, or its config edited. (Rotating a credential of an account made before
        # the id was required stays possible; the runtime warns about it at start.)
        if own_id is not None and (created or config) and (problem := own_id.problem(account.config)):
            raise ConfigError(
                f"this {channel} account {problem}: give it --config {own_id.key}=<id>, the numeric id Meta"
                f" shows for its {own_id.names} (one app secret signs the webhooks of every {own_id.names}"
                f" of a Meta app, and only {own_id.key} tells this account's apart)"
            )
        if problem := allowed_origins_problem(config.get("allowed_origins", "")):
            raise ConfigError(problem)
        merged = {k: str(v) for k, v in {**(account.secrets or {}), **secrets}.items() if v is not None}
        if vault.can_seal:
            for secret, value in merged.items():
                if value == "":
                    await vault.unstage(session, tenant_id, credential_name(account_id, secret))
                else:
                    await vault.stage(session, tenant_id, credential_name(account_id, secret), value)
            account.secrets = {}
        else:
            account.secrets = {k: v for k, v in merged.items() if v != ""}
            for secret in [k for k, v in secrets.items() if v == ""]:  # removing needs no key
                await vault.unstage(session, tenant_id, credential_name(account_id, secret))
            if account.secrets:
                log.warning(
                    "no vault master key: the secrets of channel account %s are stored unencrypted"
                    " (fine for local development; set FRONTDESK_VAULT_KEY in production)",
                    account_id,
                )
        if name:
            account.name = name
        await session.flush()
    prefix = credential_prefix(account_id)
    vaulted = [n[len(prefix) :] for n in await vault.names(tenant_id, prefix)]
    return summary(account, vaulted)


def config_problem(channel: str, config: Mapping[str, str]) -> str | None:
    """What is wrong with a value of ``config`` whose shape ``channel``'s platform fixes, or None.
    An empty value (removing the key) is always fine."""
    for key, (shape, problem) in CONFIG_SHAPES.get(channel, {}).items():
        value = config.get(key, "")
        if value != "" and not shape.fullmatch(value):
            return f"{key}: {problem}"
    return None


def allowed_origins_problem(value: str) -> str | None:
    """What is wrong with an ``allowed_origins`` value (comma-separated origins), or None."""
    bad = [e.strip() for e in value.split(",") if e.strip() and not _ORIGIN.fullmatch(e.strip())]
    if not bad:
        return None
    return (
        f"allowed_origins: not an origin: {', '.join(map(repr, bad))}; write each as scheme://host[:port],"
        " with no path (https://www.example.com), several separated by commas"
    )


async def _refuse_env_twin(session: AsyncSession, tenant_id: str, account_id: str) -> None:
    """The environment fallback spells ``channel/<id>/<secret>`` without case or punctuation, so
    ids spelled alike there would read each other's credentials: ``shop-a`` and ``SHOP_A``, and
    also ``shop`` and ``shop-page`` (``shop``'s ``page_access_token`` is ``shop-page``'s
    ``access_token``). Refuse the second one."""
    spelled = env_spelling(account_id)
    for other in await session.scalars(select(ChannelAccount.id).where(ChannelAccount.tenant_id == tenant_id)):
        theirs = env_spelling(other)
        if theirs == spelled or theirs.startswith(spelled + "_") or spelled.startswith(theirs + "_"):
            raise ConfigError(
                f"account id {account_id!r} is too like {other!r}: credentials in the environment"
                f" (FRONTDESK_SECRET__...) ignore case and turn - into _, so the two could read each"
                f" other's; pick one that differs by more than case and punctuation, and does not extend the other"
            )


def summary(account: ChannelAccount, vaulted: Sequence[str] = ()) -> AccountSummary:
    """What may be shown: names, never values (``vaulted``: the names the vault holds for it)."""
    return AccountSummary(
        account.id,
        account.tenant_id,
        account.channel,
        account.name,
        dict(account.config),
        tuple(sorted({*(account.secrets or {}), *vaulted})),
    )
