"""Tenants: the businesses one frontdesk serves. Created and changed from the command line
(``frontdesk tenants``), each value checked before anything is written.

A tenant id is a lowercase slug without doubled dashes: it is part of photo URLs and media keys,
and in ``FRONTDESK_SECRET__<TENANT>__<NAME>`` variables, where such an id spells uniquely (no two
ids share an environment spelling, and none contains the ``__`` separator).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import func, select

from frontdesk.business.text import LANGUAGE_CODE, parse_languages
from frontdesk.errors import ConfigError
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, Tenant
from frontdesk.platform.store.schema_business import BusinessProfileRow, CatalogItemRow
from frontdesk.platform.store.schema_console import AuditEntry

TENANT_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@dataclass(frozen=True)
class TenantChange:
    """What ``tenants add`` / ``tenants set`` was given; None leaves a value as it is."""

    name: str | None = None
    pack: str | None = None
    languages: str | None = None
    timezone: str | None = None
    operator_language: str | None = None


@dataclass(frozen=True)
class TenantSummary:
    id: str
    name: str
    pack: str
    languages: list[str]
    timezone: str
    operator_language: str
    items: int
    has_profile: bool
    accounts: list[str]


def check_tenant_id(tenant_id: str) -> str:
    if not (2 <= len(tenant_id) <= 40 and TENANT_ID.fullmatch(tenant_id)):
        raise ConfigError(
            f"tenant id {tenant_id!r}: use 2-40 of a-z 0-9 and single dashes, e.g. hoa-mai-bakery "
            "(it is part of URLs and environment variable names)"
        )
    return tenant_id


def _checked(change: TenantChange, packs: Collection[str]) -> dict[str, Any]:
    """The change's values, each validated; a bad one is a ``ConfigError`` naming it."""
    values: dict[str, Any] = {}
    if change.name is not None:
        name = change.name.strip()
        if not 1 <= len(name) <= 200:
            raise ConfigError("name: 1 to 200 characters")
        values["name"] = name
    if change.pack is not None:
        if change.pack not in packs:
            raise ConfigError(f"pack {change.pack!r} is not one of {', '.join(sorted(packs))}")
        values["pack"] = change.pack
    if change.languages is not None:
        try:
            values["languages"] = parse_languages(change.languages)
        except ValueError as exc:
            raise ConfigError(f"languages: {exc}") from exc
    if change.timezone is not None:
        try:
            ZoneInfo(change.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(
                f"time zone {change.timezone!r} is not an IANA time zone (e.g. Asia/Ho_Chi_Minh, America/New_York)"
            ) from None
        values["timezone"] = change.timezone
    if change.operator_language is not None:
        if not LANGUAGE_CODE.fullmatch(change.operator_language):
            raise ConfigError(f"operator language {change.operator_language!r}: a two-letter code (en, es, vi...)")
        values["operator_language"] = change.operator_language
    return values


async def add_tenant(
    db: Database, tenant_id: str, change: TenantChange, packs: Collection[str], now: datetime
) -> TenantSummary:
    check_tenant_id(tenant_id)
    values = _checked(change, packs)
    if "name" not in values:
        raise ConfigError("a new tenant needs a display name (--name)")
    async with db.transaction() as session:
        if await session.get(Tenant, tenant_id) is not None:
            raise ConfigError(f"tenant {tenant_id!r} exists already: change it with `frontdesk tenants set`")
        policy = {k: values[k] for k in ("timezone", "operator_language") if k in values}
        session.add(
            Tenant(
                id=tenant_id,
                name=values["name"],
                pack=values.get("pack", "catalog"),
                policy=policy,
                languages=values.get("languages", ["en"]),
                data_revision=0,
                created_at=now,
            )
        )
        await session.flush()
        session.add(
            AuditEntry(tenant_id=tenant_id, action="tenant.create", target=tenant_id, details=values, created_at=now)
        )
    return await show_tenant(db, tenant_id)


async def set_tenant(
    db: Database, tenant_id: str, change: TenantChange, packs: Collection[str], now: datetime
) -> TenantSummary:
    values = _checked(change, packs)
    if not values:
        raise ConfigError("nothing to change: give --name, --pack, --languages, --timezone or --operator-language")
    async with db.transaction() as session:
        tenant = await session.get(Tenant, tenant_id, with_for_update=True)
        if tenant is None:
            raise ConfigError(f"no tenant {tenant_id!r} (see `frontdesk tenants list`)")
        before: dict[str, Any] = {
            "name": tenant.name,
            "pack": tenant.pack,
            "languages": list(tenant.languages or []),
            **{k: (tenant.policy or {}).get(k) for k in ("timezone", "operator_language")},
        }
        tenant.name = values.get("name", tenant.name)
        tenant.pack = values.get("pack", tenant.pack)
        tenant.languages = values.get("languages", tenant.languages)
        policy: dict[str, Any] = {k: values[k] for k in ("timezone", "operator_language") if k in values}
        tenant.policy = {**(tenant.policy or {}), **policy}
        # The languages decide which texts an item needs: the agent reads them per turn.
        tenant.data_revision = int(tenant.data_revision or 0) + 1
        changes = {k: [before.get(k), v] for k, v in values.items() if before.get(k) != v}
        session.add(
            AuditEntry(
                tenant_id=tenant_id,
                action="tenant.update",
                target=tenant_id,
                details={"changes": changes},
                created_at=now,
            )
        )
    return await show_tenant(db, tenant_id)


async def show_tenant(db: Database, tenant_id: str) -> TenantSummary:
    async with db.read() as session:
        tenant = await session.get(Tenant, tenant_id)
        if tenant is None:
            raise ConfigError(f"no tenant {tenant_id!r} (see `frontdesk tenants list`)")
        items = await session.scalar(
            select(func.count()).select_from(CatalogItemRow).where(CatalogItemRow.tenant_id == tenant_id)
        )
        profile = await session.get(BusinessProfileRow, tenant_id)
        accounts = list(
            await session.scalars(
                select(ChannelAccount.id).where(ChannelAccount.tenant_id == tenant_id).order_by(ChannelAccount.id)
            )
        )
    policy = tenant.policy or {}
    return TenantSummary(
        id=tenant.id,
        name=tenant.name,
        pack=tenant.pack,
        languages=[str(x) for x in (tenant.languages or [])],
        timezone=str(policy.get("timezone") or "(the pack's default)"),
        operator_language=str(policy.get("operator_language") or "(the pack's default)"),
        items=int(items or 0),
        has_profile=profile is not None,
        accounts=accounts,
    )


async def list_tenants(db: Database) -> list[TenantSummary]:
    async with db.read() as session:
        ids = list(await session.scalars(select(Tenant.id).order_by(Tenant.id)))
    return [await show_tenant(db, tenant_id) for tenant_id in ids]
