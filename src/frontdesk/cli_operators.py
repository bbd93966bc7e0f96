"""``frontdesk operators``: the people who sign in to the console (per tenant, argon2id hashes).

Register in ``cli.py``::

    from frontdesk.cli_operators import operators_app
    app.add_typer(operators_app, name="operators")
"""

from __future__ import annotations

import asyncio
import re
import sys
from datetime import datetime
from typing import Annotated

import typer
from sqlalchemy import select

from frontdesk.errors import ConfigError
from frontdesk.humans.console.auth import MIN_PASSWORD, ROLES, hash_password
from frontdesk.humans.console.i18n import LANGUAGES
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.ids import new_id
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Tenant
from frontdesk.platform.store.schema_console import AuditEntry, Operator
from frontdesk.settings import Settings

operators_app = typer.Typer(help="Console operators (owners and agents of a tenant).", no_args_is_help=True)
EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,189}\.[^@\s]{1,60}$")


async def add_operator(
    db: Database,
    *,
    tenant_id: str,
    email: str,
    name: str,
    role: str,
    password: str,
    language: str,
    now: datetime,
) -> Operator:
    """Create an operator; every bad input is a ``ConfigError`` that names it."""
    email = email.strip().lower()
    if not EMAIL.fullmatch(email):
        raise ConfigError(f"{email!r} is not an e-mail address")
    if role not in ROLES:
        raise ConfigError(f"role must be one of {', '.join(ROLES)}")
    if language not in LANGUAGES:
        raise ConfigError(f"language must be one of {', '.join(LANGUAGES)}")
    if not name.strip() or len(name) > 120:
        raise ConfigError("name must be 1 to 120 characters")
    try:
        password_hash = hash_password(password)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    async with db.transaction() as session:
        if await session.get(Tenant, tenant_id) is None:
            raise ConfigError(f"no tenant {tenant_id!r}")
        if await session.scalar(select(Operator.id).where(Operator.email == email)) is not None:
            raise ConfigError(f"an operator with e-mail {email} already exists")
        operator = Operator(
            id=new_id("op"),
            tenant_id=tenant_id,
            email=email,
            name=name.strip(),
            role=role,
            password_hash=password_hash,
            language=language,
            active=True,
            created_at=now,
        )
        session.add(operator)
        await session.flush()
        session.add(
            AuditEntry(
                tenant_id=tenant_id,
                operator_id=None,
                action="operator_added",
                target=operator.id,
                details={"email": email, "role": role},
                created_at=now,
            )
        )
    return operator


@operators_app.command("add")
def add(
    tenant: Annotated[str, typer.Option(help="the tenant id the operator works for")],
    email: Annotated[str, typer.Option(help="sign-in e-mail (unique)")],
    name: Annotated[str, typer.Option(help="shown in the console and the audit trail")],
    role: Annotated[str, typer.Option(help="owner (configures) or agent (monitors and replies)")] = "agent",
    language: Annotated[str, typer.Option(help="console language: en, es or vi")] = "en",
    password_stdin: Annotated[bool, typer.Option(help="read the password from standard input (scripts)")] = False,
) -> None:
    """Add an operator. The password is prompted for (hidden), never taken as an argument."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = typer.prompt(
            f"Password (at least {MIN_PASSWORD} characters)", hide_input=True, confirmation_prompt=True
        )

    async def run() -> Operator:
        db = Database.from_url(Settings().database_url)
        try:
            return await add_operator(
                db,
                tenant_id=tenant,
                email=email,
                name=name,
                role=role,
                password=password,
                language=language,
                now=SystemClock().now(),
            )
        finally:
            await db.dispose()

    operator = asyncio.run(run())
    typer.echo(f"operator {operator.id} ({operator.email}, {operator.role}) added to tenant {operator.tenant_id}")


@operators_app.command("list")
def list_operators(tenant: Annotated[str, typer.Option(help="the tenant id")]) -> None:
    """The tenant's operators (never their password hashes)."""

    async def run() -> list[Operator]:
        db = Database.from_url(Settings().database_url)
        try:
            async with db.read() as session:
                return list(
                    await session.scalars(select(Operator).where(Operator.tenant_id == tenant).order_by(Operator.email))
                )
        finally:
            await db.dispose()

    for op in asyncio.run(run()):
        typer.echo(f"{op.id}  {op.email}  {op.role}  {op.language}  {'active' if op.active else 'inactive'}")
