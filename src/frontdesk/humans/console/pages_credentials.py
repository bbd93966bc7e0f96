"""Channel accounts and their write-only credentials.

Changes are for owners only, behind the CSRF token, and leave an audit row that names what
changed, never a secret value. Secrets are never rendered back: a credential shows as its name,
"set" and when.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import func, select

from frontdesk.errors import NotFoundError
from frontdesk.humans.console._configure import accounts_directory, vault_of
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._guard import actor, redirect, viewer
from frontdesk.humans.console._render import audit, page, parse_form
from frontdesk.humans.console.auth import Principal
from frontdesk.platform.store.schema import ChannelAccount
from frontdesk.platform.store.schema_console import AuditEntry
from frontdesk.platform.store.schema_vault import Credential
from frontdesk.platform.vault import Vault

AccountPath = Annotated[str, PathParam(pattern=r"^[A-Za-z0-9_-]{1,40}$")]
VAULT_PREFIX = "channel/"  # how ``ingestion.accounts.credential_name`` names a channel secret
SECRET_NAME = r"^[a-z0-9_]{1,64}$"
# The secrets each channel's adapter and renderer read (``account.credentials.get/require``).
KNOWN_SECRETS: Mapping[str, tuple[str, ...]] = {
    "telegram": ("bot_token", "webhook_secret"),
    "messenger": ("page_access_token", "app_secret", "verify_token"),
    "instagram": ("page_access_token", "app_secret", "verify_token"),
    "whatsapp": ("access_token", "app_secret", "verify_token"),
    "line": ("channel_access_token", "channel_secret"),
}


class CredentialForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str = Field(pattern=SECRET_NAME)
    value: str = Field(min_length=1, max_length=8000)

    @field_validator("name", mode="before")
    @classmethod
    def _trim_name(cls, value: object) -> object:
        return value.strip() if isinstance(value, str) else value

    @field_validator("value")
    @classmethod
    def _trim_value(cls, value: str) -> str:
        trimmed = value.strip()  # a token pasted with its line break
        if not trimmed:
            raise ValueError("a credential cannot be blank")
        return trimmed


@dataclass(frozen=True)
class CredentialShown:
    name: str
    updated_at: datetime | None
    sealed: bool


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    @router.get("/console/accounts", response_class=HTMLResponse)
    async def accounts_page(request: Request) -> Response:
        me = await viewer(deps, request)
        return await _accounts_page(deps, request, me)

    @router.post("/console/accounts/{account_id}/credentials", response_class=HTMLResponse)
    async def credential_set(request: Request, account_id: AccountPath) -> Response:
        me = await actor(deps, request, owner=True)
        async with deps.db.read() as session:
            account = await session.scalar(
                select(ChannelAccount).where(ChannelAccount.id == account_id, ChannelAccount.tenant_id == me.tenant_id)
            )
        if account is None:
            raise NotFoundError("no such channel account")
        form = await parse_form(request, CredentialForm)
        vault = vault_of(deps, request)
        if vault.can_seal:
            await _store_sealed(deps, vault, me, account, form)
        else:
            await _store_plaintext(deps, me, account, form)
        forget = getattr(accounts_directory(request), "forget", None)
        if callable(forget):  # the webhook path's account cache: see the new value now
            forget(account.id)
        raise redirect("/console/accounts")


async def _store_sealed(
    deps: ConsoleDeps, vault: Vault, me: Principal, account: ChannelAccount, form: CredentialForm
) -> None:
    now = deps.clock.now()
    async with deps.db.transaction() as session:
        stored = await session.get(ChannelAccount, account.id)
        if stored is None or stored.tenant_id != me.tenant_id:
            raise NotFoundError("no such channel account")
        await vault.stage(session, me.tenant_id, f"{VAULT_PREFIX}{account.id}/{form.name}", form.value)
        if form.name in (stored.secrets or {}):  # no stale plaintext copy beside the sealed one
            stored.secrets = {k: v for k, v in stored.secrets.items() if k != form.name}
        audit(
            session,
            me,
            me.tenant_id,
            "credential_set",
            now,
            target=f"{account.id}/{form.name}",
            details={"account": account.id, "name": form.name, "storage": "vault"},
        )


async def _store_plaintext(deps: ConsoleDeps, me: Principal, account: ChannelAccount, form: CredentialForm) -> None:
    # No vault key (development): the plaintext column, as ``frontdesk accounts add`` does; the
    # account's config, and so its id, is not touched.
    now = deps.clock.now()
    async with deps.db.transaction() as session:
        stored = await session.get(ChannelAccount, account.id)
        if stored is None or stored.tenant_id != me.tenant_id:
            raise NotFoundError("no such channel account")
        stored.secrets = {**(stored.secrets or {}), form.name: form.value}
        audit(
            session,
            me,
            me.tenant_id,
            "credential_set",
            now,
            target=f"{account.id}/{form.name}",
            details={"account": account.id, "name": form.name, "storage": "plaintext"},
        )


async def _accounts_page(deps: ConsoleDeps, request: Request, me: Principal) -> Response:
    async with deps.db.read() as session:
        accounts = list(
            await session.scalars(
                select(ChannelAccount).where(ChannelAccount.tenant_id == me.tenant_id).order_by(ChannelAccount.id)
            )
        )
        vaulted = (
            await session.execute(
                select(Credential.name, Credential.updated_at).where(
                    Credential.tenant_id == me.tenant_id, Credential.name.startswith(VAULT_PREFIX, autoescape=True)
                )
            )
        ).all()
        changed = (
            await session.execute(
                select(AuditEntry.target, func.max(AuditEntry.created_at))
                .where(AuditEntry.tenant_id == me.tenant_id, AuditEntry.action == "credential_set")
                .group_by(AuditEntry.target)
            )
        ).all()
    last_set = {str(target): when for target, when in changed}
    # Secrets are write-only: the template receives their names and times, never their values.
    shown = []
    for a in accounts:
        prefix = f"{VAULT_PREFIX}{a.id}/"
        creds = {
            n[len(prefix) :]: CredentialShown(n[len(prefix) :], t, True) for n, t in vaulted if n.startswith(prefix)
        }
        for name in a.secrets or {}:
            creds.setdefault(name, CredentialShown(name, last_set.get(f"{a.id}/{name}"), False))
        known = sorted(set(KNOWN_SECRETS.get(a.channel, ())) | set(creds))
        shown.append(
            {
                "id": a.id,
                "channel": a.channel,
                "name": a.name,
                "config": dict(a.config or {}),
                "credentials": [creds[n] for n in sorted(creds)],
                "known": known,
            }
        )
    return page("accounts.html", me, accounts=shown, can_seal=vault_of(deps, request).can_seal)
