"""Configure the brain: channel credentials (write-only), notification subscriptions and
webhooks, and two read-only views (the pack's catalog with its photos, the model slots).

Changes are for owners only, behind the CSRF token, and leave an audit row that names what
changed, never a secret value. Secrets are never rendered back: a credential shows as its name,
"set" and when; a webhook's signing secret is shown once, in the answer to the post that made it.
"""

from __future__ import annotations

import json
import re
import secrets as token_source
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit, urlunsplit

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import delete, func, select

from frontdesk.cli_accounts import upsert_account
from frontdesk.errors import ConflictError, NotFoundError, PayloadError
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._guard import actor, redirect, viewer
from frontdesk.humans.console._render import audit, page, parse_form
from frontdesk.humans.console.auth import Principal
from frontdesk.humans.notifications.events import KINDS
from frontdesk.humans.notifications.subscriptions import add_webhook, subscribe
from frontdesk.platform.store.schema import ChannelAccount, Tenant
from frontdesk.platform.store.schema_console import AuditEntry, Operator
from frontdesk.platform.store.schema_notifications import NotificationSubscription, NotificationWebhook
from frontdesk.platform.store.schema_vault import Credential
from frontdesk.platform.vault import MasterKeys, Vault
from frontdesk.settings import Settings

AccountPath = Annotated[str, PathParam(pattern=r"^[A-Za-z0-9_-]{1,40}$")]
SubscriptionPath = Annotated[int, PathParam(ge=1, le=2**53)]
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
SLOTS = ("chat", "utility", "embeddings", "transcription")
MEDIA_PATH = "/media/packs"  # where ``app.py`` serves ``Pack.media_dir``
OPERATOR_ROUTES = ("any", "email", "telegram")


# -- forms -----------------------------------------------------------------------------------------


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


class SubscriptionForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    kind: str = Field(pattern="^(" + "|".join(KINDS) + ")$")
    subscriber: str = Field(pattern=r"^(operator|webhook):[A-Za-z0-9_-]{1,40}$")
    route: str = Field(default="any", pattern="^(any|email|telegram|webhook)$")


class WebhookForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str = Field(min_length=1, max_length=120)
    url: str = Field(min_length=9, max_length=2000)

    @field_validator("name", "url", mode="before")
    @classmethod
    def _trim(cls, value: object) -> object:
        return value.strip() if isinstance(value, str) else value

    @field_validator("url")
    @classmethod
    def _https(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError("a webhook URL must start with https:// and name a host")
        return value


# -- catalog (pack data: ``<pack data>/catalog.json`` beside the ``photos`` media directory) ------


class _Loose(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class CatalogPhoto(_Loose):
    file: str
    caption: str = ""


class CatalogService(_Loose):
    id: str
    name: str
    category: str = ""
    summary: str = ""
    price_text: str = ""
    turnaround_days: int | None = None
    min_order_quantity: int | None = None
    photos: list[CatalogPhoto] = []


class CatalogView(_Loose):
    currency: str = ""
    services: list[CatalogService] = []


@dataclass(frozen=True)
class CredentialShown:
    name: str
    updated_at: datetime | None
    sealed: bool


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    # -- channel accounts and their write-only credentials ------------------------------------

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
        full_name = f"{VAULT_PREFIX}{account.id}/{form.name}"
        now = deps.clock.now()
        if vault.can_seal:
            async with deps.db.transaction() as session:
                stored = await session.get(ChannelAccount, account.id)
                if stored is None or stored.tenant_id != me.tenant_id:
                    raise NotFoundError("no such channel account")
                await vault.stage(session, me.tenant_id, full_name, form.value)
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
        else:
            # No vault key (development): the plaintext column, as ``frontdesk accounts add`` does.
            await upsert_account(
                deps.db,
                account_id=account.id,
                tenant_id=me.tenant_id,
                channel=account.channel,
                name=None,
                config={},
                secrets={form.name: form.value},
                now=now,
                vault=vault,
            )
            async with deps.db.transaction() as session:
                audit(
                    session,
                    me,
                    me.tenant_id,
                    "credential_set",
                    now,
                    target=f"{account.id}/{form.name}",
                    details={"account": account.id, "name": form.name, "storage": "plaintext"},
                )
        forget = getattr(_accounts_directory(request), "forget", None)
        if callable(forget):  # the webhook path's account cache: see the new value now
            forget(account.id)
        raise redirect("/console/accounts")

    # -- notification subscriptions and webhooks ---------------------------------------------

    @router.get("/console/notifications", response_class=HTMLResponse)
    async def notifications_page(request: Request) -> Response:
        me = await viewer(deps, request)
        return await _notifications_page(deps, request, me)

    @router.post("/console/notifications/subscriptions", response_class=HTMLResponse)
    async def subscription_add(request: Request) -> Response:
        me = await actor(deps, request, owner=True)
        form = await parse_form(request, SubscriptionForm)
        what, _, subscriber_id = form.subscriber.partition(":")
        async with deps.db.transaction() as session:
            operator_id = webhook_id = None
            if what == "operator":
                if form.route not in OPERATOR_ROUTES:
                    raise PayloadError("invalid form: route: operators are reached by e-mail or Telegram")
                operator_id = await session.scalar(
                    select(Operator.id).where(Operator.id == subscriber_id, Operator.tenant_id == me.tenant_id)
                )
                if operator_id is None:
                    raise NotFoundError("no such operator")
                route = form.route
            else:
                webhook_id = await session.scalar(
                    select(NotificationWebhook.id).where(
                        NotificationWebhook.id == subscriber_id, NotificationWebhook.tenant_id == me.tenant_id
                    )
                )
                if webhook_id is None:
                    raise NotFoundError("no such webhook")
                route = "webhook"
            column = NotificationSubscription.operator_id if operator_id else NotificationSubscription.webhook_id
            duplicate = await session.scalar(
                select(NotificationSubscription.id).where(
                    NotificationSubscription.kind == form.kind,
                    column == subscriber_id,
                    NotificationSubscription.route == route,
                )
            )
            if duplicate is not None:
                raise ConflictError("this subscription already exists")
            row = await subscribe(
                session,
                tenant_id=me.tenant_id,
                kind=form.kind,  # type: ignore[arg-type]  # checked against KINDS by the form
                now=deps.clock.now(),
                operator_id=operator_id,
                webhook_id=webhook_id,
                route=route,  # type: ignore[arg-type]  # one of the route names, checked above
            )
            audit(
                session,
                me,
                me.tenant_id,
                "subscription_added",
                deps.clock.now(),
                target=str(row.id),
                details={"kind": form.kind, "subscriber": form.subscriber, "route": route},
            )
        raise redirect("/console/notifications")

    @router.post("/console/notifications/subscriptions/{subscription_id}/delete", response_class=HTMLResponse)
    async def subscription_remove(request: Request, subscription_id: SubscriptionPath) -> Response:
        me = await actor(deps, request, owner=True)
        async with deps.db.transaction() as session:
            row = await session.scalar(
                select(NotificationSubscription).where(
                    NotificationSubscription.id == subscription_id,
                    NotificationSubscription.tenant_id == me.tenant_id,
                )
            )
            if row is None:
                raise NotFoundError("no such subscription")
            subscriber = f"operator:{row.operator_id}" if row.operator_id else f"webhook:{row.webhook_id}"
            details = {"kind": row.kind, "subscriber": subscriber, "route": row.route}
            await session.execute(delete(NotificationSubscription).where(NotificationSubscription.id == row.id))
            audit(
                session,
                me,
                me.tenant_id,
                "subscription_removed",
                deps.clock.now(),
                target=str(subscription_id),
                details=details,
            )
        raise redirect("/console/notifications")

    @router.post("/console/notifications/webhooks", response_class=HTMLResponse)
    async def webhook_add(request: Request) -> Response:
        me = await actor(deps, request, owner=True)
        form = await parse_form(request, WebhookForm)
        vault = vault_of(deps, request)
        if not vault.can_seal:
            raise ConflictError(
                "no vault key is configured, so a webhook's signing secret cannot be stored:"
                " set FRONTDESK_VAULT_KEY (docs/configuration.md#credential-vault)"
            )
        secret = token_source.token_urlsafe(32)
        async with deps.db.transaction() as session:
            row = await add_webhook(session, tenant_id=me.tenant_id, name=form.name, url=form.url, now=deps.clock.now())
            await vault.stage(session, me.tenant_id, row.secret_name, secret)
            audit(
                session,
                me,
                me.tenant_id,
                "webhook_added",
                deps.clock.now(),
                target=row.id,
                details={"name": row.name, "host": urlsplit(form.url).hostname or ""},
            )
            created = row.id
        # Shown once: this answer is the only page that ever holds the secret (no-store).
        return await _notifications_page(deps, request, me, new_secret=(created, secret), status=201)

    # -- read-only: catalog and model slots ---------------------------------------------------

    @router.get("/console/catalog", response_class=HTMLResponse)
    async def catalog_page(request: Request) -> Response:
        me = await viewer(deps, request)
        async with deps.db.read() as session:
            tenant = await session.get(Tenant, me.tenant_id)
        if tenant is None:
            raise NotFoundError("no such tenant")
        found = load_catalog(_media_dir(deps, request, tenant.pack))
        return page(
            "catalog.html",
            me,
            pack=tenant.pack,
            catalog=found,
            media_url=f"{MEDIA_PATH}/{tenant.pack}",
        )

    @router.get("/console/models", response_class=HTMLResponse)
    async def models_page(request: Request) -> Response:
        me = await viewer(deps, request)
        settings = _settings(deps, request)
        slots = [(slot, masked_slot(getattr(settings, f"model_{slot}", None)) if settings else "") for slot in SLOTS]
        return page("models.html", me, slots=slots, known=settings is not None)


# -- where the runtime's pieces come from ------------------------------------------------------


def _runtime(request: Request) -> Any:
    return getattr(request.app.state, "runtime", None)


def _accounts_directory(request: Request) -> Any:
    return getattr(getattr(_runtime(request), "channel_deps", None), "accounts", None)


def vault_of(deps: ConsoleDeps, request: Request) -> Vault:
    """The runtime's vault: from the deps, else the runtime's ``AccountDirectory``; else a vault
    without a key (read-only: channel secrets then go to the plaintext column)."""
    if deps.vault is not None:
        return deps.vault
    found = getattr(_accounts_directory(request), "vault", None)
    return found if isinstance(found, Vault) else Vault(deps.db, MasterKeys())


def _settings(deps: ConsoleDeps, request: Request) -> Settings | None:
    if deps.settings is not None:
        return deps.settings
    found = getattr(_runtime(request), "settings", None)
    return found if isinstance(found, Settings) else None


def _media_dir(deps: ConsoleDeps, request: Request, pack: str) -> Path | None:
    if pack in deps.media_dirs:
        return deps.media_dirs[pack]
    packs = getattr(_runtime(request), "packs", None)
    found = getattr(packs.get(pack), "media_dir", None) if isinstance(packs, Mapping) else None
    return found if isinstance(found, Path) else None


def load_catalog(media_dir: Path | None) -> CatalogView | None:
    """A pack's catalog (``catalog.json`` in the data directory holding its media), or None when
    the pack has none (the loyalty pack: its data lives behind an MCP server)."""
    if media_dir is None:
        return None
    path = media_dir.parent / "catalog.json"
    if not path.is_file():
        return None
    try:
        return CatalogView.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError):
        return None


_USERINFO = re.compile(r"^[^@/]*@")


def masked_slot(value: str | None) -> str:
    """A model string as it may be shown: ``provider:model``; an ``openai-compatible:`` URL keeps
    scheme, host, port and path, never its user info, query or fragment credentials."""
    if not value:
        return ""
    provider, sep, rest = value.partition(":")
    if provider != "openai-compatible":
        return value if "@" not in rest else f"{provider}{sep}{_USERINFO.sub('***@', rest)}"
    url, hash_sep, model = rest.partition("#")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return f"{provider}:***{hash_sep}{model}"
    userinfo = "***@" if "@" in parts.netloc else ""
    shown = urlunsplit((parts.scheme, f"{userinfo}{host}{port}", parts.path, "***" if parts.query else "", ""))
    return f"{provider}:{shown}{hash_sep}{model}"


def _mask_url(url: str) -> str:
    """A webhook URL as listed: scheme and host (its path or query may itself be the secret)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}/…"


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


async def _notifications_page(
    deps: ConsoleDeps,
    request: Request,
    me: Principal,
    *,
    new_secret: tuple[str, str] | None = None,
    status: int = 200,
) -> Response:
    async with deps.db.read() as session:
        operators = list(
            await session.scalars(
                select(Operator)
                .where(Operator.tenant_id == me.tenant_id, Operator.active.is_(True))
                .order_by(Operator.name)
            )
        )
        webhooks = list(
            await session.scalars(
                select(NotificationWebhook)
                .where(NotificationWebhook.tenant_id == me.tenant_id)
                .order_by(NotificationWebhook.created_at)
            )
        )
        subscriptions = list(
            await session.scalars(
                select(NotificationSubscription)
                .where(NotificationSubscription.tenant_id == me.tenant_id)
                .order_by(NotificationSubscription.kind, NotificationSubscription.id)
            )
        )
    names = {f"operator:{o.id}": o.name for o in operators} | {f"webhook:{w.id}": w.name for w in webhooks}
    rows = [
        {
            "id": s.id,
            "kind": s.kind,
            "subscriber": names.get(f"operator:{s.operator_id}" if s.operator_id else f"webhook:{s.webhook_id}", "—"),
            "route": s.route,
        }
        for s in subscriptions
    ]
    hooks = [{"id": w.id, "name": w.name, "url": _mask_url(w.url), "active": w.active} for w in webhooks]
    return page(
        "notifications.html",
        me,
        status=status,
        subscriptions=rows,
        webhooks=hooks,
        operators=[(o.id, o.name) for o in operators],
        kinds=KINDS,
        routes=OPERATOR_ROUTES,
        new_secret=new_secret,
        can_seal=vault_of(deps, request).can_seal,
    )
