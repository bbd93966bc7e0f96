"""``frontdesk operators``: the people who sign in to the console (per tenant, argon2id hashes),
from joining to leaving. The changes are ``humans.console.operators``'s, shared with the
console's operators page; here they are audited as the command line (no operator).

Register in ``cli.py``::

    from frontdesk.cli_operators import operators_app
    app.add_typer(operators_app, name="operators")
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from frontdesk.errors import ConfigError, FrontdeskError
from frontdesk.humans.console.auth import MIN_PASSWORD, ROLES
from frontdesk.humans.console.operators import (
    OperatorChange,
    add_operator,
    announce,
    delete_operator,
    end_sessions,
    find_by_email,
    list_operators,
    revoked_key,
    set_active,
    set_password,
    set_role,
)
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema_console import Operator
from frontdesk.settings import Settings

__all__ = ["add_operator", "operators_app"]

operators_app = typer.Typer(help="Console operators (owners and agents of a tenant).", no_args_is_help=True)
T = TypeVar("T")

TenantOption = Annotated[str, typer.Option(help="the tenant id the operator works for")]
EmailOption = Annotated[str, typer.Option(help="the operator's sign-in e-mail")]
PasswordStdin = Annotated[bool, typer.Option(help="read the password from standard input (scripts)")]
PasswordFile = Annotated[
    Path | None,
    typer.Option(help="read the password from the first line of this file", exists=True, dir_okay=False),
]


def _run(work: Callable[[Database], Awaitable[T]]) -> T:
    """Run ``work`` against the configured database; our errors become one line and an exit code
    (2: bad input, as ``frontdesk`` itself answers a ``ConfigError``; 1: refused or unknown)."""

    async def run() -> T:
        db = Database.from_url(Settings().database_url)
        try:
            return await work(db)
        finally:
            await db.dispose()

    try:
        return asyncio.run(run())
    except FrontdeskError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(2 if isinstance(exc, ConfigError) else 1) from exc


def _password(stdin: bool, file: Path | None) -> str:
    """From a file, standard input or a hidden prompt: never an argument, which ``ps`` shows."""
    if file is not None:
        lines = file.read_text(encoding="utf-8").splitlines()
        return lines[0] if lines else ""
    if stdin:
        return sys.stdin.readline().rstrip("\n")
    return str(
        typer.prompt(f"Password (at least {MIN_PASSWORD} characters)", hide_input=True, confirmation_prompt=True)
    )


def _change(
    tenant: str,
    email: str,
    change: Callable[[Database, str], Awaitable[OperatorChange]],
    *,
    signs_out: bool = True,
) -> OperatorChange:
    """Find the operator by e-mail, make the change, and wake their open event streams."""

    async def work(db: Database) -> OperatorChange:
        done = await change(db, await find_by_email(db, tenant, email))
        if signs_out:
            await announce(db, revoked_key(done.operator_id))
        return done

    return _run(work)


@operators_app.command("add")
def add(
    tenant: TenantOption,
    email: Annotated[str, typer.Option(help="sign-in e-mail (unique)")],
    name: Annotated[str, typer.Option(help="shown in the console and the audit trail")],
    role: Annotated[str, typer.Option(help="owner (configures) or agent (monitors and replies)")] = "agent",
    language: Annotated[str, typer.Option(help="console language: en, es or vi")] = "en",
    password_stdin: PasswordStdin = False,
    password_file: PasswordFile = None,
) -> None:
    """Add an operator. The password is prompted for (hidden), never taken as an argument."""
    password = _password(password_stdin, password_file)
    operator = _run(
        lambda db: add_operator(
            db,
            tenant_id=tenant,
            email=email,
            name=name,
            role=role,
            password=password,
            language=language,
            now=SystemClock().now(),
        )
    )
    typer.echo(f"operator {operator.id} ({operator.email}, {operator.role}) added to tenant {operator.tenant_id}")


@operators_app.command("list")
def list_command(tenant: Annotated[str, typer.Option(help="the tenant id")]) -> None:
    """The tenant's operators (never their password hashes; deleted ones left out)."""
    operators: list[Operator] = _run(lambda db: list_operators(db, tenant))
    for op in operators:
        typer.echo(f"{op.id}  {op.email}  {op.role}  {op.language}  {'active' if op.active else 'inactive'}")


@operators_app.command("deactivate")
def deactivate(tenant: TenantOption, email: EmailOption) -> None:
    """Stop an operator signing in; every session they have ends at once (a tenant's last
    active owner cannot be deactivated)."""
    done = _change(
        tenant,
        email,
        lambda db, op: set_active(db, tenant_id=tenant, operator_id=op, active=False, actor=None, now=_now()),
    )
    typer.echo(f"operator {done.operator_id} ({done.email}) deactivated; {done.sessions_ended} session(s) ended")


@operators_app.command("reactivate")
def reactivate(tenant: TenantOption, email: EmailOption) -> None:
    """Let a deactivated operator sign in again (with the password they had)."""
    done = _change(
        tenant,
        email,
        lambda db, op: set_active(db, tenant_id=tenant, operator_id=op, active=True, actor=None, now=_now()),
        signs_out=False,
    )
    typer.echo(f"operator {done.operator_id} ({done.email}) {'reactivated' if done.changed else 'was already active'}")


@operators_app.command("set-role")
def set_role_command(
    tenant: TenantOption,
    email: EmailOption,
    role: Annotated[str, typer.Option(help=f"one of {', '.join(ROLES)}")],
) -> None:
    """Make an operator an owner or an agent; it applies from their next click (a tenant's last
    active owner cannot be demoted)."""
    done = _change(
        tenant,
        email,
        lambda db, op: set_role(db, tenant_id=tenant, operator_id=op, role=role, actor=None, now=_now()),
        signs_out=False,
    )
    typer.echo(f"operator {done.operator_id} ({done.email}): role {done.before} -> {done.after}")


@operators_app.command("reset-password")
def reset_password(
    tenant: TenantOption,
    email: EmailOption,
    password_stdin: PasswordStdin = False,
    password_file: PasswordFile = None,
) -> None:
    """Set a new password (prompted for, hidden; or from a file or standard input, never an
    argument). Every session the operator has ends."""
    password = _password(password_stdin, password_file)
    done = _change(
        tenant,
        email,
        lambda db, op: set_password(db, tenant_id=tenant, operator_id=op, password=password, actor=None, now=_now()),
    )
    typer.echo(f"operator {done.operator_id} ({done.email}): password set; {done.sessions_ended} session(s) ended")


@operators_app.command("end-sessions")
def end_sessions_command(tenant: TenantOption, email: EmailOption) -> None:
    """Sign an operator out of every browser at once (they can sign in again)."""
    done = _change(
        tenant, email, lambda db, op: end_sessions(db, tenant_id=tenant, operator_id=op, actor=None, now=_now())
    )
    typer.echo(f"operator {done.operator_id} ({done.email}): {done.sessions_ended} session(s) ended")


@operators_app.command("delete")
def delete(
    tenant: TenantOption,
    email: EmailOption,
    yes: Annotated[bool, typer.Option("--yes", help="do not ask for confirmation")] = False,
) -> None:
    """Delete an operator: signed out at once, never signs in again, unlisted; their audit
    entries stay (under their name) and their tasks are unassigned."""
    if not yes and not typer.confirm(f"Delete operator {email} of tenant {tenant}?"):
        raise typer.Exit(1)
    done = _change(
        tenant, email, lambda db, op: delete_operator(db, tenant_id=tenant, operator_id=op, actor=None, now=_now())
    )
    typer.echo(f"operator {done.operator_id} ({done.email}) deleted; {done.sessions_ended} session(s) ended")


def _now() -> datetime:
    return SystemClock().now()
