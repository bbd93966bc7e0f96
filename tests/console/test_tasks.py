"""Tasks: an operator assigns a task to someone of their own tenant, marks it done, reopens it."""

from __future__ import annotations

from console_kit import AGENT, build_console, client, csrf_of, sign_in
from sqlalchemy import select

from frontdesk.humans.tasks import hand_off
from frontdesk.platform.store.schema import Task
from frontdesk.platform.store.schema_console import AuditEntry, Operator


async def test_task_is_assigned_done_and_reopened_with_audit_rows(db):
    console = await build_console(db)
    conversation_id = await console.customer_says("demo-webchat", "t1", "I want a human")
    async with db.transaction() as session:
        task = await hand_off(
            session,
            tenant_id="demo",
            conversation_id=conversation_id,
            reason="wants a person",
            run_key="r1",
            now=console.clock.now(),
        )
        agent = await session.scalar(select(Operator.id).where(Operator.email == AGENT))
        other = await session.scalar(select(Operator.id).where(Operator.tenant_id == "other"))
    async with client(console) as http:
        await sign_in(http)
        listed = await http.get("/console/tasks")
        token = await csrf_of(http, "/console/tasks")
        url = f"/console/tasks/{task.id}"
        assigned = await http.post(url, data={"csrf": token, "assignee": agent})
        foreign = await http.post(url, data={"csrf": token, "assignee": other})
        done = await http.post(url, data={"csrf": token, "status": "done"})
        after_done = await http.get("/console/tasks")
        bad = await http.post(url, data={"csrf": token, "status": "archived"})
        reopened = await http.post(url, data={"csrf": token, "status": "open"})

    assert "wants a person" in listed.text
    assert "hand-off" in listed.text
    assert [r.status_code for r in (assigned, done, reopened)] == [303, 303, 303]
    assert foreign.status_code == 422
    assert "no such operator" in foreign.json()["error"]["message"]
    assert bad.status_code == 422
    assert "status" in bad.json()["error"]["message"]
    assert "Agent" in after_done.text
    assert "Reopen" in after_done.text
    async with db.read() as session:
        stored = await session.get(Task, task.id)
        actions = list(await session.scalars(select(AuditEntry.action).where(AuditEntry.target == task.id)))
    assert stored is not None
    assert stored.status == "open"
    assert stored.details["assignee"] == agent
    assert actions == ["task_updated"] * 3
