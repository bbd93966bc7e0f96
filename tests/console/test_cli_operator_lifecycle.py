"""``frontdesk operators deactivate / reactivate / set-role / reset-password / end-sessions /
delete``: the same changes as the console's operators page, from the command line (audited with
no operator), felt at once by the operator's browsers."""

from __future__ import annotations

import asyncio

import httpx2
import typer
from console_kit import AGENT, OWNER, PASSWORD, build_console, client, sign_in
from sqlalchemy import select
from typer.testing import CliRunner, Result

from frontdesk.cli_operators import add_operator, operators_app
from frontdesk.platform.store.schema_console import AuditEntry, Operator

NEW_PASSWORD = "a brand new passphrase"


def _cli() -> typer.Typer:
    root = typer.Typer()
    root.add_typer(operators_app, name="operators")  # as cli.py registers it
    return root


async def _run(*args: str, stdin: str | None = None) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, _cli(), ["operators", *args], input=stdin)


async def _audit(db) -> list[tuple[str, str | None, str | None]]:
    async with db.read() as session:
        rows = await session.execute(
            select(AuditEntry.action, AuditEntry.operator_id, AuditEntry.target)
            .where(AuditEntry.tenant_id == "demo", AuditEntry.action.like("operator_%"))
            .where(AuditEntry.action != "operator_added")
            .order_by(AuditEntry.id)
        )
    return [tuple(row) for row in rows.all()]


async def _operator(db, email: str) -> Operator:
    async with db.read() as session:
        operator = await session.scalar(select(Operator).where(Operator.email == email))
    assert operator is not None
    return operator


async def _signed_in(http: httpx2.AsyncClient) -> bool:
    return (await http.get("/console/conversations")).status_code == 200


async def test_deactivate_signs_the_operator_out_at_once_and_reactivate_lets_them_back(db, database_url, monkeypatch):
    console = await build_console(db)
    monkeypatch.setenv("FRONTDESK_DATABASE_URL", database_url)
    agent_id = (await _operator(db, AGENT)).id
    async with client(console) as agent:
        await sign_in(agent, AGENT)
        deactivated = await _run("deactivate", "--tenant", "demo", "--email", "Agent@Demo.test")
        listed = await _run("list", "--tenant", "demo")
        signed_out = not await _signed_in(agent)
        refused = await sign_in(agent, AGENT)
        reactivated = await _run("reactivate", "--tenant", "demo", "--email", AGENT)
        back = await sign_in(agent, AGENT)

    assert deactivated.exit_code == 0, deactivated.output
    assert f"operator {agent_id} ({AGENT}) deactivated; 1 session(s) ended" in deactivated.output
    assert f"{AGENT}  agent  en  inactive" in listed.output
    assert signed_out
    assert refused.status_code == 401
    assert reactivated.exit_code == 0, reactivated.output
    assert back.status_code == 303
    assert await _audit(db) == [
        ("operator_deactivated", None, agent_id),  # None: the command line
        ("operator_reactivated", None, agent_id),
    ]


async def test_reset_password_takes_it_from_a_file_or_stdin_never_from_an_argument(
    db, database_url, monkeypatch, tmp_path
):
    console = await build_console(db)
    monkeypatch.setenv("FRONTDESK_DATABASE_URL", database_url)
    secret = tmp_path / "password.txt"
    secret.write_text(NEW_PASSWORD + "\n")
    target = ["--tenant", "demo", "--email", AGENT]
    async with client(console) as agent, client(console) as fresh:
        await sign_in(agent, AGENT)
        as_argument = await _run("reset-password", *target, "--password", NEW_PASSWORD)
        too_short = await _run("reset-password", *target, "--password-stdin", stdin="short\n")
        still_in = await _signed_in(agent)
        reset = await _run("reset-password", *target, "--password-file", str(secret))
        old_session = await _signed_in(agent)
        old_password = await sign_in(fresh, AGENT, PASSWORD)
        new_password = await sign_in(fresh, AGENT, NEW_PASSWORD)

    assert as_argument.exit_code == 2
    assert "No such option" in as_argument.output
    assert too_short.exit_code == 1
    assert "error: " in too_short.output
    assert still_in
    assert reset.exit_code == 0, reset.output
    assert NEW_PASSWORD not in reset.output
    assert "password set; 1 session(s) ended" in reset.output
    assert not old_session
    assert old_password.status_code == 401
    assert new_password.status_code == 303
    assert [a for a, _, _ in await _audit(db)] == ["operator_password_reset"]


async def test_set_role_end_sessions_and_delete(db, database_url, monkeypatch):
    console = await build_console(db)
    monkeypatch.setenv("FRONTDESK_DATABASE_URL", database_url)
    agent_id = (await _operator(db, AGENT)).id
    target = ["--tenant", "demo", "--email", AGENT]
    async with client(console) as agent:
        await sign_in(agent, AGENT)
        promoted = await _run("set-role", *target, "--role", "owner")
        still_in = await _signed_in(agent)  # a role change ends no session: it applies per request
        ended = await _run("end-sessions", *target)
        signed_out = not await _signed_in(agent)
        not_confirmed = await _run("delete", *target, stdin="n\n")
        deleted = await _run("delete", *target, "--yes")
        listed = await _run("list", "--tenant", "demo")

    assert promoted.exit_code == 0, promoted.output
    assert "role agent -> owner" in promoted.output
    assert still_in
    assert ended.exit_code == 0, ended.output
    assert "1 session(s) ended" in ended.output
    assert signed_out
    assert not_confirmed.exit_code == 1
    assert deleted.exit_code == 0, deleted.output
    assert AGENT not in listed.output
    assert await _audit(db) == [
        ("operator_role_changed", None, agent_id),
        ("operator_sessions_ended", None, agent_id),
        ("operator_deleted", None, agent_id),
    ]
    # The address is free again: the same person can be added back as a new operator.
    again = await add_operator(
        db,
        tenant_id="demo",
        email=AGENT,
        name="Agent",
        role="agent",
        password=PASSWORD,
        language="en",
        now=console.clock.now(),
    )
    assert again.id != agent_id


async def test_the_last_active_owner_cannot_be_deactivated_deleted_or_demoted(db, database_url, monkeypatch):
    await build_console(db)
    monkeypatch.setenv("FRONTDESK_DATABASE_URL", database_url)
    target = ["--tenant", "demo", "--email", OWNER]
    refused = [
        await _run("deactivate", *target),
        await _run("delete", *target, "--yes"),
        await _run("set-role", *target, "--role", "agent"),
    ]
    promoted = await _run("set-role", "--tenant", "demo", "--email", AGENT, "--role", "owner")
    now_allowed = await _run("set-role", *target, "--role", "agent")

    assert [r.exit_code for r in refused] == [1, 1, 1]
    for result in refused:
        assert f"error: {OWNER} is the last active owner of tenant 'demo'" in result.output
    assert promoted.exit_code == now_allowed.exit_code == 0
    owner = await _operator(db, OWNER)
    assert (owner.active, owner.role) == (True, "agent")
    assert [a for a, _, _ in await _audit(db)] == ["operator_role_changed", "operator_role_changed"]


async def test_an_unknown_tenant_or_email_is_a_clear_error(db, database_url, monkeypatch):
    await build_console(db)
    monkeypatch.setenv("FRONTDESK_DATABASE_URL", database_url)
    commands = [
        ["deactivate"],
        ["reactivate"],
        ["set-role", "--role", "owner"],
        ["reset-password", "--password-stdin"],
        ["end-sessions"],
        ["delete", "--yes"],
    ]
    no_tenant = [await _run(*c, "--tenant", "nope", "--email", AGENT, stdin=NEW_PASSWORD + "\n") for c in commands]
    no_email = [
        await _run(*c, "--tenant", "demo", "--email", "nobody@demo.test", stdin=NEW_PASSWORD + "\n") for c in commands
    ]
    elsewhere = await _run("deactivate", "--tenant", "other", "--email", AGENT)

    for result in no_tenant:
        assert result.exit_code == 1
        assert "error: no tenant 'nope'" in result.output
    for result in (*no_email, elsewhere):
        assert result.exit_code == 1
        assert "error: no operator with e-mail" in result.output
    assert await _audit(db) == []
