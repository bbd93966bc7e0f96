"""Operators page: an owner deactivates, reactivates, re-roles, resets the password of, signs out
and deletes the operators of their tenant, each at once and audited; an agent can do none of it;
nobody can remove a tenant's last owner or lock themself out."""

from __future__ import annotations

import asyncio
import html

import httpx2
from console_kit import AGENT, OTHER, OWNER, PASSWORD, build_console, client, csrf_of, form_fields, served, sign_in
from sqlalchemy import select

from frontdesk.humans.console.auth import hash_password
from frontdesk.humans.tasks import hand_off
from frontdesk.platform.store.schema import Task
from frontdesk.platform.store.schema_console import AuditEntry, ConsoleSession, Operator

PAGE = "/console/operators"
NEW_PASSWORD = "a brand new passphrase"
COOKIE = "frontdesk_console"


async def _ids(db) -> dict[str, str]:
    async with db.read() as session:
        rows = (await session.execute(select(Operator.email, Operator.id))).all()
    return {email: operator_id for email, operator_id in rows}


async def _audit(db, *actions: str) -> list[tuple[str, str | None, str | None]]:
    """(action, who, target) of the demo tenant's console audit rows with these actions, oldest
    first (the console's seeding adds its operators from the command line: no operator)."""
    async with db.read() as session:
        rows = await session.execute(
            select(AuditEntry.action, AuditEntry.operator_id, AuditEntry.target)
            .where(AuditEntry.tenant_id == "demo", AuditEntry.action.in_(actions), AuditEntry.operator_id.is_not(None))
            .order_by(AuditEntry.id)
        )
    return [tuple(row) for row in rows.all()]


def _refusal(password: str) -> str:
    try:
        hash_password(password)
    except ValueError as exc:
        return str(exc)
    raise AssertionError(f"{password!r} was accepted")


async def _post(http: httpx2.AsyncClient, path: str, **data: str) -> httpx2.Response:
    return await http.post(path, data={"csrf": await csrf_of(http, PAGE), **data})


async def test_deactivated_agent_is_signed_out_at_once_and_signs_in_again_once_reactivated(db):
    console = await build_console(db)
    ids = await _ids(db)
    agent_url = f"{PAGE}/{ids[AGENT]}"
    async with client(console) as owner, client(console) as agent:
        await sign_in(owner)
        await sign_in(agent, AGENT)
        listed = await owner.get(PAGE)
        deactivated = await _post(owner, f"{agent_url}/active", active="false")
        agent_next = await agent.get("/console/conversations")
        refused_sign_in = await sign_in(agent, AGENT)
        after = await owner.get(PAGE)
        reactivated = await _post(owner, f"{agent_url}/active", active="true")
        signed_in_again = await sign_in(agent, AGENT)
        agent_page = await agent.get("/console/conversations")

    assert f'id="deactivate-{ids[AGENT]}"' in listed.text
    assert deactivated.status_code == 303
    assert (agent_next.status_code, agent_next.headers["location"]) == (303, "/console/login")
    assert refused_sign_in.status_code == 401
    assert f'data-operator="{ids[AGENT]}" class="inactive"' in after.text
    assert reactivated.status_code == 303
    assert signed_in_again.status_code == 303
    assert agent_page.status_code == 200
    assert await _audit(db, "operator_deactivated", "operator_reactivated") == [
        ("operator_deactivated", ids[OWNER], ids[AGENT]),
        ("operator_reactivated", ids[OWNER], ids[AGENT]),
    ]


async def test_ending_all_sessions_kills_every_browser_of_the_operator_even_a_copied_cookie(db):
    console = await build_console(db)
    ids = await _ids(db)
    async with client(console) as owner, client(console) as agent, client(console) as copy:
        await sign_in(owner)
        await sign_in(agent, AGENT)
        copy.cookies.set(COOKIE, agent.cookies[COOKIE])
        before = await copy.get("/console/conversations")
        ended = await _post(owner, f"{PAGE}/{ids[AGENT]}/sign-out")
        agent_after = await agent.get("/console/conversations")
        copy_after = await copy.get("/console/conversations")
        owner_after = await owner.get(PAGE)

    assert before.status_code == 200
    assert ended.status_code == 303
    assert agent_after.status_code == copy_after.status_code == 303
    assert owner_after.status_code == 200  # the owner's own session is not touched
    assert await _audit(db, "operator_sessions_ended") == [("operator_sessions_ended", ids[OWNER], ids[AGENT])]


async def test_owner_sets_a_new_password_the_old_one_fails_and_old_sessions_are_dead(db):
    console = await build_console(db)
    ids = await _ids(db)
    url = f"{PAGE}/{ids[AGENT]}/password"
    async with client(console) as owner, client(console) as agent, client(console) as fresh:
        await sign_in(owner)
        await sign_in(agent, AGENT)
        mismatch = await _post(owner, url, password=NEW_PASSWORD, confirm=NEW_PASSWORD + "!")
        too_short = await _post(owner, url, password="short", confirm="short")
        still_in = await agent.get("/console/conversations")
        reset = await _post(owner, url, password=NEW_PASSWORD, confirm=NEW_PASSWORD)
        old_session = await agent.get("/console/conversations")
        old_password = await sign_in(fresh, AGENT)
        new_password = await sign_in(fresh, AGENT, NEW_PASSWORD)

    assert mismatch.status_code == 422
    assert "The two passwords differ." in mismatch.text
    assert too_short.status_code == 422
    assert html.escape(_refusal("short")) in too_short.text  # auth.hash_password's own words
    assert still_in.status_code == 200  # a refused reset changes nothing
    assert reset.status_code == 303
    assert old_session.status_code == 303
    assert old_password.status_code == 401
    assert new_password.status_code == 303
    assert await _audit(db, "operator_password_reset") == [("operator_password_reset", ids[OWNER], ids[AGENT])]


async def test_operator_changes_their_own_password_with_the_current_one_and_stays_signed_in(db):
    console = await build_console(db)
    ids = await _ids(db)
    async with client(console) as agent, client(console) as elsewhere:
        await sign_in(agent, AGENT)
        await sign_in(elsewhere, AGENT)
        page = await agent.get(PAGE)
        wrong = await _post(
            agent, "/console/password", current="not my password", password=NEW_PASSWORD, confirm=NEW_PASSWORD
        )
        changed = await _post(agent, "/console/password", current=PASSWORD, password=NEW_PASSWORD, confirm=NEW_PASSWORD)
        here = await agent.get("/console/conversations")
        other_browser = await elsewhere.get("/console/conversations")
        with_new = await sign_in(elsewhere, AGENT, NEW_PASSWORD)

    assert 'id="own-password"' in page.text
    assert wrong.status_code == 422
    assert "Your current password is wrong." in wrong.text
    assert changed.status_code == 303
    assert here.status_code == 200
    assert other_browser.status_code == 303
    assert with_new.status_code == 303
    assert await _audit(db, "password_change_refused", "password_changed") == [
        ("password_change_refused", ids[AGENT], ids[AGENT]),
        ("password_changed", ids[AGENT], ids[AGENT]),
    ]


async def test_a_role_change_takes_effect_on_the_next_request(db):
    console = await build_console(db)
    ids = await _ids(db)
    policy = {"tone": "brisk", "timezone": "UTC", "operator_language": "en"}
    async with client(console) as owner, client(console) as agent:
        await sign_in(owner)
        await sign_in(agent, AGENT)
        as_agent = await _post(agent, "/console/policy", **policy)
        promoted = await _post(owner, f"{PAGE}/{ids[AGENT]}/role", role="owner")
        as_owner = await _post(agent, "/console/policy", **policy)
        controls = await agent.get(PAGE)
        demoted = await _post(owner, f"{PAGE}/{ids[AGENT]}/role", role="agent")
        as_agent_again = await _post(agent, "/console/policy", **policy)

    assert as_agent.status_code == 403
    assert promoted.status_code == 303
    assert as_owner.status_code == 303  # the same session, no sign-in in between
    assert f'id="deactivate-{ids[OWNER]}"' in controls.text
    assert demoted.status_code == 303
    assert as_agent_again.status_code == 403
    assert await _audit(db, "operator_role_changed") == [
        ("operator_role_changed", ids[OWNER], ids[AGENT]),
        ("operator_role_changed", ids[OWNER], ids[AGENT]),
    ]


async def test_an_owner_cannot_lock_themself_out(db):
    console = await build_console(db)
    ids = await _ids(db)
    mine = f"{PAGE}/{ids[OWNER]}"
    async with client(console) as owner:
        await sign_in(owner)
        page = await owner.get(PAGE)
        attempts = [
            await _post(owner, f"{mine}/active", active="false"),
            await _post(owner, f"{mine}/role", role="agent"),
            await _post(owner, f"{mine}/delete", confirm="yes"),
            await _post(owner, f"{mine}/password", password=NEW_PASSWORD, confirm=NEW_PASSWORD),
        ]
        still_owner = await owner.get(PAGE)

    assert f'id="deactivate-{ids[OWNER]}"' not in page.text  # no control to do it by accident
    assert [a.status_code for a in attempts] == [409] * 4
    assert all("your own account" in a.text for a in attempts)
    assert f'id="deactivate-{ids[AGENT]}"' in still_owner.text
    async with db.read() as session:
        me = await session.get(Operator, ids[OWNER])
    assert me is not None
    assert (me.active, me.role) == (True, "owner")


async def test_deleting_an_operator_keeps_their_audit_rows_and_unassigns_their_tasks(db):
    console = await build_console(db)
    ids = await _ids(db)
    conversation_id = await console.customer_says("demo-webchat", "d1", "I want a human")
    async with db.transaction() as session:
        task = await hand_off(
            session,
            tenant_id="demo",
            conversation_id=conversation_id,
            reason="wants a person",
            run_key="d1",
            now=console.clock.now(),
        )
    async with client(console) as owner, client(console) as agent, client(console) as fresh:
        await sign_in(owner)
        await sign_in(agent, AGENT)
        assigned = await agent.post(
            f"/console/tasks/{task.id}", data={"csrf": await csrf_of(agent, "/console/tasks"), "assignee": ids[AGENT]}
        )
        unconfirmed = await _post(owner, f"{PAGE}/{ids[AGENT]}/delete")
        deleted = await _post(owner, f"{PAGE}/{ids[AGENT]}/delete", confirm="yes")
        agent_after = await agent.get("/console/conversations")
        sign_in_after = await sign_in(fresh, AGENT)
        listed = await owner.get(PAGE)
        trail = await owner.get("/console/audit")
        again = await _post(owner, f"{PAGE}/{ids[AGENT]}/active", active="true")

    assert assigned.status_code == 303
    assert unconfirmed.status_code == 422
    assert deleted.status_code == 303
    assert agent_after.status_code == 303
    assert sign_in_after.status_code == 401
    assert AGENT not in listed.text
    assert again.status_code == 404  # a deleted operator is gone for good
    assert await _audit(db, "task_updated", "operator_deleted") == [
        ("task_updated", ids[AGENT], task.id),  # the agent's own action, still theirs
        ("operator_deleted", ids[OWNER], ids[AGENT]),
    ]
    assert "<td>Agent</td>" in trail.text  # the trail still names who did it
    async with db.read() as session:
        stored_task = await session.get(Task, task.id)
        sessions = list(await session.scalars(select(ConsoleSession).where(ConsoleSession.operator_id == ids[AGENT])))
    assert stored_task is not None
    assert "assignee" not in stored_task.details
    assert sessions == []


async def test_another_tenants_operator_is_404_and_unchanged(db):
    console = await build_console(db)
    ids = await _ids(db)
    other = f"{PAGE}/{ids[OTHER]}"
    async with client(console) as owner:
        await sign_in(owner)
        listed = await owner.get(PAGE)
        answers = [
            await _post(owner, f"{other}/active", active="false"),
            await _post(owner, f"{other}/role", role="agent"),
            await _post(owner, f"{other}/password", password=NEW_PASSWORD, confirm=NEW_PASSWORD),
            await _post(owner, f"{other}/sign-out"),
            await _post(owner, f"{other}/delete", confirm="yes"),
            await _post(owner, f"{other}/delete"),  # 404 before the form is even read
            await _post(owner, f"{PAGE}/op_nobody/active", active="false"),
        ]

    assert OTHER not in listed.text
    assert [a.status_code for a in answers] == [404] * 7
    assert all(ids[OTHER] not in a.text for a in answers)
    async with db.read() as session:
        other_owner = await session.get(Operator, ids[OTHER])
    assert other_owner is not None
    assert (other_owner.active, other_owner.role, other_owner.email) == (True, "owner", OTHER)
    assert await _audit(db, *_ACTIONS) == []


_ACTIONS = (
    "operator_added",
    "operator_deactivated",
    "operator_reactivated",
    "operator_role_changed",
    "operator_password_reset",
    "operator_sessions_ended",
    "operator_deleted",
)


async def test_an_agent_can_do_none_of_it(db):
    console = await build_console(db)
    ids = await _ids(db)
    actions = {
        "active": {"active": "false"},
        "role": {"role": "owner"},
        "password": {"password": NEW_PASSWORD, "confirm": NEW_PASSWORD},
        "sign-out": {},
        "delete": {"confirm": "yes"},
    }
    async with client(console) as agent:
        await sign_in(agent, AGENT)
        page = await agent.get(PAGE)
        answers = [
            await _post(agent, f"{PAGE}/{target}/{action}", **form)
            for action, form in actions.items()
            for target in (ids[OWNER], ids[AGENT])
        ]
        added = await _post(
            agent,
            PAGE,
            email="new@demo.test",
            name="New",
            role="owner",
            language="en",
            password=NEW_PASSWORD,
            confirm=NEW_PASSWORD,
        )
        forged = await agent.post(f"{PAGE}/{ids[OWNER]}/role", data={"csrf": "forged", "role": "agent"})

    assert page.status_code == 200  # agents read the list...
    assert AGENT in page.text
    assert f'action="{PAGE}/' not in page.text  # ...with no control on it
    assert 'id="add-operator"' not in page.text
    assert [a.status_code for a in answers] == [403] * 10
    assert added.status_code == forged.status_code == 403
    assert await _audit(db, *_ACTIONS) == []
    async with db.read() as session:
        agent_row = await session.get(Operator, ids[AGENT])
    assert agent_row is not None
    assert (agent_row.active, agent_row.role) == (True, "agent")


async def test_owner_adds_an_operator_who_can_then_sign_in(db):
    console = await build_console(db)
    async with client(console) as owner, client(console) as newcomer:
        await sign_in(owner)
        page = await owner.get(PAGE)
        form = {
            **form_fields(page.text, "add-operator"),
            "email": "Lan@Demo.test",
            "name": "Lan",
            "role": "agent",
            "language": "vi",
            "password": NEW_PASSWORD,
            "confirm": NEW_PASSWORD,
        }
        added = await owner.post(PAGE, data=form)
        taken = await owner.post(PAGE, data=form)
        signed_in = await sign_in(newcomer, "lan@demo.test", NEW_PASSWORD)
        listed = await owner.get(PAGE)

    assert added.status_code == 303
    assert taken.status_code == 422
    assert "already exists" in taken.text
    assert signed_in.status_code == 303
    assert "lan@demo.test" in listed.text
    ids = await _ids(db)
    assert await _audit(db, "operator_added") == [("operator_added", ids[OWNER], ids["lan@demo.test"])]


async def test_an_open_event_stream_of_a_deactivated_operator_ends(db):
    console = await build_console(db)
    ids = await _ids(db)
    conversation_id = await console.customer_says("demo-webchat", "s1", "hello")
    await console.drain()
    async with (
        served(console) as base_url,
        httpx2.AsyncClient(base_url=base_url, timeout=10) as agent,
        client(console) as owner,
    ):
        await sign_in(agent, AGENT)
        await sign_in(owner)
        opened = asyncio.Event()

        async def events() -> list[str]:
            seen = []
            async with agent.stream("GET", f"/console/conversations/{conversation_id}/stream") as stream:
                async for line in stream.aiter_lines():
                    opened.set()
                    if line.startswith("event: "):
                        seen.append(line.removeprefix("event: "))
            return seen

        reading = asyncio.create_task(events())
        await asyncio.wait_for(opened.wait(), 5)
        await _post(owner, f"{PAGE}/{ids[AGENT]}/active", active="false")
        seen = await asyncio.wait_for(reading, 5)  # the stream ends by itself: no force-exit needed

    assert seen[-1] == "signed_out"
