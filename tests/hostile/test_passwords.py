"""Operator passwords an attacker would guess first are refused wherever a password is set."""

from __future__ import annotations

import asyncio

import pytest
import typer
from typer.testing import CliRunner

from frontdesk.cli_operators import operators_app
from frontdesk.demo import seed_demo
from frontdesk.humans.console.auth import hash_password
from frontdesk.platform.clock import SystemClock


@pytest.mark.parametrize(
    ("password", "why"),
    [
        ("password1234", "common"),
        ("qwertyuiop12", "common"),
        ("aaaaaaaaaaaaaaaa", "repeat"),
        ("123456789012", "common"),
        ("alice.nguyen@shop.test", "e-mail"),
        ("Nguyen.Alice.2026", "name"),
        ("aliceng-password", "e-mail"),
        ("short one", "12 characters"),
    ],
)
def test_a_guessable_password_is_refused_with_the_reason(password, why):
    with pytest.raises(ValueError, match=why):
        hash_password(password, email="aliceng@shop.test", name="Alice Nguyen")


@pytest.mark.parametrize(
    "password",
    [
        "correct horse battery",
        "kitten-piano-lamp",
        "tr0ub4dor&3xx",
        "the quiet violet harbour remembers every lantern that ever crossed it at midnight, twice over",
    ],
)
def test_a_strong_password_is_accepted(password):
    assert hash_password(password, email="aliceng@shop.test", name="Alice Nguyen").startswith("$argon2id$")


async def test_operators_add_refuses_a_common_password_and_stores_nothing(db, database_url, monkeypatch):
    await seed_demo(db, SystemClock())
    monkeypatch.setenv("FRONTDESK_DATABASE_URL", database_url)
    root = typer.Typer()
    root.add_typer(operators_app, name="operators")
    args = ["operators", "add", "--tenant", "demo", "--email", "ana@shop.test", "--name", "Ana", "--password-stdin"]

    result = await asyncio.to_thread(CliRunner().invoke, root, args, input="password1234\n")
    listed = await asyncio.to_thread(CliRunner().invoke, root, ["operators", "list", "--tenant", "demo"])

    assert result.exit_code != 0
    assert "common" in result.output
    assert "ana@shop.test" not in listed.output
