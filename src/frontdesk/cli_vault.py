"""``frontdesk vault``: master keys and sealed credentials (docs/operations.md, Key management).

No command prints a stored value: ``set`` reads it from a hidden prompt or stdin, ``names``
lists names only. ``keygen`` prints a *new* key, which is its whole purpose.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import typer
from pydantic import ValidationError

from frontdesk.errors import ConfigError
from frontdesk.ingestion.accounts import seal_plaintext_secrets
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.migrate import upgrade
from frontdesk.platform.store.schema import Tenant
from frontdesk.platform.vault import Vault, build_vault, env_name, generate_key
from frontdesk.settings import Settings

vault_app = typer.Typer(help="The credential vault: keys, rotation, secrets.", no_args_is_help=True)

T = TypeVar("T")

TenantArg = Annotated[str, typer.Argument(help="the tenant the credential belongs to")]
NameArg = Annotated[str, typer.Argument(help="the credential name, e.g. channel/<account id>/bot_token")]


def _settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        fields = ", ".join(f"FRONTDESK_{'_'.join(map(str, e['loc'])).upper()}" for e in exc.errors(include_url=False))
        raise ConfigError(f"invalid settings: {fields}") from exc


def _with_vault(work: Callable[[Vault, Database], Awaitable[T]]) -> T:
    settings = _settings()

    async def run() -> T:
        db = Database.from_url(settings.database_url)
        try:
            vault = build_vault(db, settings)  # a bad key fails here, before the schema is touched
            await upgrade(db)
            return await work(vault, db)
        finally:
            await db.dispose()

    return asyncio.run(run())


@vault_app.command("keygen")
def keygen() -> None:
    """Print a new random master key (base64, 32 bytes). Store it in a secret manager or a
    key file (chmod 600), never in the repository."""
    typer.echo(generate_key())


@vault_app.command("rotate")
def rotate() -> None:
    """Re-seal every credential under the current (first) key; also seals plaintext channel
    secrets. Older keys can be removed once this reports that none is in use any more."""

    async def work(vault: Vault, db: Database) -> None:
        sealed = await seal_plaintext_secrets(db, vault)
        report = await vault.rotate()
        in_use = await vault.key_ids_in_use()
        typer.echo(
            f"vault rotated to key {report.current_key_id}: {report.total} credential(s),"
            f" {report.resealed} re-sealed, {report.already_current} already current"
            + (f", {sealed} plaintext channel secret(s) sealed" if sealed else "")
        )
        old = sorted(k for k in in_use if k != report.current_key_id)
        typer.echo(f"  keys still in use: {', '.join(old) or 'only the current one (older keys may be removed)'}")

    _with_vault(work)


@vault_app.command("set")
def set_secret(
    tenant: TenantArg,
    name: NameArg,
    stdin: Annotated[bool, typer.Option("--stdin", help="read the value from standard input (for scripts)")] = False,
) -> None:
    """Store one credential (the value is prompted for without echo, or read from stdin)."""
    value = sys.stdin.readline().rstrip("\r\n") if stdin else typer.prompt("value", hide_input=True)
    if not value:
        raise ConfigError("an empty value: use `frontdesk vault delete` to remove a credential")

    async def work(vault: Vault, db: Database) -> None:
        async with db.read() as session:
            if await session.get(Tenant, tenant) is None:
                raise ConfigError(f"no tenant {tenant!r}")
        await vault.put(tenant, name, value)

    _with_vault(work)
    typer.echo(f"stored {name} for tenant {tenant}")


@vault_app.command("delete")
def delete_secret(tenant: TenantArg, name: NameArg) -> None:
    """Remove one stored credential (an environment fallback, if any, stays)."""

    async def work(vault: Vault, _db: Database) -> bool:
        return await vault.delete(tenant, name)

    typer.echo(f"deleted {name} of tenant {tenant}" if _with_vault(work) else f"tenant {tenant} has no {name}")


@vault_app.command("names")
def names(tenant: TenantArg, prefix: Annotated[str, typer.Option(help="only names starting with this")] = "") -> None:
    """List the stored credential names of a tenant (never the values)."""

    async def work(vault: Vault, _db: Database) -> list[str]:
        return await vault.names(tenant, prefix)

    found = _with_vault(work)
    for name in found:
        typer.echo(name)
    if not found:
        typer.echo(f"no stored credential (the environment fallback is {env_name(tenant, 'NAME')} etc.)")
