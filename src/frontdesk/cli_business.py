"""``frontdesk tenants``, ``frontdesk catalog`` and ``frontdesk profile``: a business's own data
from the command line (docs/business-data.md). None of them creates demo data.

Registered in ``cli.py``. Bad input is a ``ConfigError``: one message, exit code 2."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import ValidationError

from frontdesk.business import Actor, BusinessProfile, BusinessStore, Importer, file_format, read_business_file
from frontdesk.business.files import document, render
from frontdesk.business.tenants import TenantChange, TenantSummary, add_tenant, list_tenants, set_tenant, show_tenant
from frontdesk.errors import ConfigError, NotFoundError, PayloadError
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.media import build_media_store
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.migrate import current_revision
from frontdesk.settings import Settings

tenants_app = typer.Typer(help="Tenants: the businesses this frontdesk serves.", no_args_is_help=True)
catalog_app = typer.Typer(help="A tenant's catalog and profile, from and to a business file.", no_args_is_help=True)
profile_app = typer.Typer(help="A tenant's business profile: contacts, address, hours.", no_args_is_help=True)

T = TypeVar("T")
TenantOption = Annotated[str, typer.Option("--tenant", help="the tenant (see `frontdesk tenants list`)")]
NameOption = Annotated[str | None, typer.Option(help="the business's display name")]
PackOption = Annotated[str | None, typer.Option(help="the business pack (default: catalog)")]
LanguagesOption = Annotated[str | None, typer.Option(help="languages the business answers in, default first: en,vi")]
TimezoneOption = Annotated[str | None, typer.Option(help="IANA time zone, e.g. Asia/Ho_Chi_Minh")]
OperatorLanguageOption = Annotated[
    str | None, typer.Option("--operator-language", help="language of notes written for the team: en, es, vi...")
]


def _run(settings: Settings, work: Callable[[Database], Awaitable[T]]) -> T:
    """``work`` on the configured database, which must be migrated (``frontdesk db upgrade``)."""

    async def run() -> T:
        db = Database.from_url(settings.database_url)
        try:
            if await current_revision(db) is None:
                raise ConfigError("the database has no schema: run `frontdesk db upgrade` first")
            return await work(db)
        except (PayloadError, NotFoundError) as exc:  # bad input from the command line: exit 2
            raise ConfigError(exc.message) from exc
        finally:
            await db.dispose()

    return asyncio.run(run())


def _echo_tenant(summary: TenantSummary) -> None:
    typer.echo(f"tenant {summary.id}: {summary.name}")
    typer.echo(f"  pack: {summary.pack}")
    typer.echo(f"  languages: {', '.join(summary.languages)} (default {summary.languages[0]})")
    typer.echo(f"  time zone: {summary.timezone}")
    typer.echo(f"  operators' language: {summary.operator_language}")
    typer.echo(f"  profile: {'set' if summary.has_profile else 'not set'}; catalog: {summary.items} item(s)")
    typer.echo(f"  channel accounts: {', '.join(summary.accounts) or 'none'}")


def register(settings: Callable[[], Settings], pack_names: Collection[str]) -> None:
    """Add the commands; ``settings`` reads the configured settings (``cli._settings``), and
    ``pack_names`` are the packs a tenant may name (the root knows the packs)."""

    @tenants_app.command("add")
    def tenants_add(
        tenant_id: Annotated[str, typer.Argument(help="2-40 of a-z 0-9 and single dashes, e.g. hoa-mai-bakery")],
        name: NameOption = None,
        pack: PackOption = None,
        languages: LanguagesOption = None,
        timezone: TimezoneOption = None,
        operator_language: OperatorLanguageOption = None,
    ) -> None:
        """Create a tenant (a business). Then import its business file with `frontdesk catalog import`."""
        change = TenantChange(name, pack, languages, timezone, operator_language)
        now = SystemClock().now()
        _echo_tenant(_run(settings(), lambda db: add_tenant(db, tenant_id, change, pack_names, now)))

    @tenants_app.command("set")
    def tenants_set(
        tenant_id: Annotated[str, typer.Argument(help="the tenant to change")],
        name: NameOption = None,
        pack: PackOption = None,
        languages: LanguagesOption = None,
        timezone: TimezoneOption = None,
        operator_language: OperatorLanguageOption = None,
    ) -> None:
        """Change a tenant's name, pack, languages, time zone or operators' language."""
        change = TenantChange(name, pack, languages, timezone, operator_language)
        now = SystemClock().now()
        _echo_tenant(_run(settings(), lambda db: set_tenant(db, tenant_id, change, pack_names, now)))

    @tenants_app.command("show")
    def tenants_show(tenant_id: Annotated[str, typer.Argument(help="the tenant to show")]) -> None:
        """A tenant's settings and what it has: profile, catalog size, channel accounts."""
        _echo_tenant(_run(settings(), lambda db: show_tenant(db, tenant_id)))

    @tenants_app.command("list")
    def tenants_list() -> None:
        """Every tenant, one line each."""
        for summary in _run(settings(), list_tenants):
            typer.echo(
                f"{summary.id}\t{summary.name}\t{summary.pack}\t{','.join(summary.languages)}\t{summary.items} items"
            )

    @catalog_app.command("import")
    def catalog_import(
        file: Annotated[Path, typer.Argument(help="a business file: .yaml, .yml, .json or .csv")],
        tenant: TenantOption,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="print the changes, write nothing")] = False,
        partial: Annotated[
            bool, typer.Option("--partial", help="change only the items in the file; leave the others active")
        ] = False,
    ) -> None:
        """Import a profile and/or catalog: all of it, or nothing (a bad row is named with its line)."""
        configured = settings()

        async def work(db: Database) -> list[str]:
            store = BusinessStore(db, SystemClock())
            languages = list((await store.read(tenant)).languages)
            loaded = read_business_file(file, languages)
            importer = Importer(db, SystemClock(), build_media_store(configured))
            if dry_run:
                changes = await importer.preview(tenant, loaded, partial=partial)
            else:
                await build_media_store(configured).check()
                changes = await importer.apply(tenant, loaded, Actor(via="import"), partial=partial)
            return [c.line() for c in changes]

        lines = _run(configured, work)
        for line in lines:
            typer.echo(line)
        verb = "would change" if dry_run else "changed"
        typer.echo(f"{tenant}: {verb} {len(lines)} thing(s)" if lines else f"{tenant}: nothing to change")

    @catalog_app.command("export")
    def catalog_export(
        file: Annotated[Path, typer.Argument(help="where to write: .yaml, .yml, .json or .csv")],
        tenant: TenantOption,
    ) -> None:
        """Write the profile and catalog to a business file, photos beside it in photos/."""
        kind = _format(file)
        configured = settings()

        async def work(db: Database) -> int:
            data = await BusinessStore(db, SystemClock()).read(tenant)
            media = build_media_store(configured)
            folder = file.parent / "photos"
            written: dict[str, str] = {}
            for item in data.items:
                for photo in item.photos:
                    picture, _ = await media.get(photo.media_key)
                    name = f"{photo.id}.{photo.media_key.rpartition('.')[2]}"
                    folder.mkdir(parents=True, exist_ok=True)
                    (folder / name).write_bytes(picture)
                    written[photo.id] = f"photos/{name}"
            file.write_text(render(document(data.profile, list(data.items), written), kind), encoding="utf-8")
            return len(data.items)

        count = _run(configured, work)
        typer.echo(f"{tenant}: wrote {count} item(s) to {file}")

    @profile_app.command("show")
    def profile_show(tenant: TenantOption) -> None:
        """The profile as stored (YAML, the business file's `profile` section)."""

        async def work(db: Database) -> BusinessProfile | None:
            return (await BusinessStore(db, SystemClock()).read(tenant)).profile

        profile = _run(settings(), work)
        if profile is None:
            typer.echo(f"{tenant} has no profile yet: `frontdesk profile set --tenant {tenant} --name ...`")
            return
        typer.echo(render({"profile": document(profile, [], {})["profile"]}, "yaml"), nl=False)

    @profile_app.command("set")
    def profile_set(
        tenant: TenantOption,
        name: Annotated[str | None, typer.Option(help="the business's name as customers know it")] = None,
        description: Annotated[str | None, typer.Option(help="what the business does (default language)")] = None,
        address: Annotated[str | None, typer.Option()] = None,
        phone: Annotated[str | None, typer.Option(help="international form: +84 28 3822 1234")] = None,
        email: Annotated[str | None, typer.Option()] = None,
        website: Annotated[str | None, typer.Option(help="https://...")] = None,
        timezone: TimezoneOption = None,
        hours: Annotated[
            list[str] | None, typer.Option(help="DAY=RANGES, repeatable: mon=09:00-12:00,13:00-18:00 or sun=closed")
        ] = None,
        closed: Annotated[list[str] | None, typer.Option(help="a holiday, repeatable: 2027-02-06")] = None,
        notes: Annotated[str | None, typer.Option(help="parking, pick-up, delivery... (default language)")] = None,
    ) -> None:
        """Change fields of the profile (created if missing); every change is audited."""

        async def work(db: Database) -> bool:
            store = BusinessStore(db, SystemClock())
            data = await store.read(tenant)
            base: dict[str, Any] = data.profile.model_dump(mode="json") if data.profile else {"timezone": data.timezone}
            language = data.default_language
            updates: dict[str, Any] = {
                k: v
                for k, v in {
                    "name": name,
                    "address": address,
                    "phone": phone,
                    "email": email,
                    "website": website,
                    "timezone": timezone,
                }.items()
                if v is not None
            }
            if description is not None:
                updates["description"] = {**base.get("description", {}), language: description}
            if notes is not None:
                updates["notes"] = {**base.get("notes", {}), language: notes}
            if hours:
                updates["hours"] = {**base.get("hours", {}), **_day_hours(hours)}
            if closed:
                updates["exceptions"] = [*base.get("exceptions", []), *({"date": d, "closed": True} for d in closed)]
            if not updates:
                raise ConfigError("nothing to change: give --name, --phone, --hours... (see --help)")
            if "name" not in {**base, **updates}:
                updates["name"] = data.name  # a first profile: the tenant's display name
            try:
                profile = BusinessProfile.model_validate({**base, **updates})
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False)
                )
                raise ConfigError(f"profile: {problems}") from exc
            return await store.save_profile(tenant, profile, Actor(via="cli"))

        changed = _run(settings(), work)
        typer.echo(f"{tenant}: profile {'saved' if changed else 'unchanged'}")


def _format(file: Path) -> str:
    try:
        return file_format(file)
    except PayloadError as exc:
        raise ConfigError(exc.message) from exc


def _day_hours(pairs: list[str]) -> dict[str, str]:
    days: dict[str, str] = {}
    for pair in pairs:
        day, sep, ranges = pair.partition("=")
        if not sep:
            raise ConfigError(f"--hours {pair!r}: write DAY=RANGES, e.g. mon=09:00-18:00 or sun=closed")
        days[day.strip().lower()] = ranges
    return days
