"""``frontdesk operators add`` / ``list``: argon2id hashes, validation that names the problem."""

from __future__ import annotations

import asyncio

import pytest
import typer
from sqlalchemy import select
from typer.testing import CliRunner

from frontdesk.cli_operators import add_operator, operators_app
from frontdesk.demo import seed_demo
from frontdesk.errors import ConfigError
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.schema_console import AuditEntry, Operator


def _cli() -> typer.Typer:
    root = typer.Typer()
    root.add_typer(operators_app, name="operators")  # as cli.py registers it
    return root


async def test_add_command_creates_an_operator_from_a_password_on_stdin(db, database_url, monkeypatch):
    await seed_demo(db, SystemClock())
    monkeypatch.setenv("FRONTDESK_DATABASE_URL", database_url)
    args = [
        "operators",
        "add",
        "--tenant",
        "demo",
        "--email",
        "Ana@Shop.test",
        "--name",
        "Ana",
        "--role",
        "owner",
        "--language",
        "vi",
        "--password-stdin",
    ]

    result = await asyncio.to_thread(CliRunner().invoke, _cli(), args, input="a long enough password\n")
    listed = await asyncio.to_thread(CliRunner().invoke, _cli(), ["operators", "list", "--tenant", "demo"])

    assert result.exit_code == 0, result.output
    assert "added to tenant demo" in result.output
    assert "ana@shop.test  owner  vi  active" in listed.output
    assert "argon2" not in listed.output
    async with db.read() as session:
        operator = await session.scalar(select(Operator))
        audit = await session.scalar(select(AuditEntry.action))
    assert operator is not None
    assert operator.password_hash.startswith("$argon2id$")
    assert audit == "operator_added"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"email": "not-an-email"}, "is not an e-mail address"),
        ({"role": "admin"}, "role must be one of owner, agent"),
        ({"language": "fr"}, "language must be one of en, es, vi"),
        ({"password": "short"}, "at least 12 characters"),
        ({"tenant_id": "nope"}, "no tenant 'nope'"),
        ({"name": " "}, "name must be"),
    ],
)
async def test_bad_operator_input_is_refused_naming_the_problem(db, change, problem):
    await seed_demo(db, SystemClock())
    values = {
        "tenant_id": "demo",
        "email": "a@b.test",
        "name": "A",
        "role": "agent",
        "password": "plum orbit kettle",
        "language": "en",
        **change,
    }
    with pytest.raises(ConfigError, match=problem):
        await add_operator(db, now=SystemClock().now(), **values)


async def test_an_email_is_used_once(db):
    await seed_demo(db, SystemClock())
    values = {
        "tenant_id": "demo",
        "email": "a@b.test",
        "name": "A",
        "role": "agent",
        "password": "plum orbit kettle",
        "language": "en",
    }
    await add_operator(db, now=SystemClock().now(), **values)
    with pytest.raises(ConfigError, match="already exists"):
        await add_operator(db, now=SystemClock().now(), **{**values, "email": "A@B.test"})
