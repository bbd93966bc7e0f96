"""What a turn knows of its conversation: the open tasks (looked for only when the row says there
are some) reach the context, closed ones never do."""

from __future__ import annotations

from frontdesk.context.conversation import ContextLoader
from frontdesk.platform.clock import ManualClock
from frontdesk.platform.store.schema import Task
from harness import make_runtime, message, reply

ECHO = {"name": "echo", "default": [reply("got: {user_text}")]}


async def add_task(db, tenant_id: str, conversation_id: str, task_id: str, status: str, now) -> None:
    async with db.transaction() as session:
        session.add(
            Task(
                id=task_id,
                tenant_id=tenant_id,
                conversation_id=conversation_id,
                kind="follow_up",
                priority="normal",
                status=status,
                title=f"call back about {task_id}",
                details={"quantity": 500},
                created_at=now,
                updated_at=now,
            )
        )


async def test_open_tasks_reach_the_context_and_closed_ones_do_not(db):
    runtime, accounts = await make_runtime(db, ECHO, clock=ManualClock())
    ingested = await runtime.ingestor.ingest(message(accounts.webchat_id, "500 business cards please"))
    loader = ContextLoader(db)
    now = runtime.clock.now()

    before = await loader.load(ingested.conversation_id, now)
    assert (before.open_tasks, before.open_follow_up) == ([], False)

    await add_task(db, accounts.tenant_id, ingested.conversation_id, "task_done", "done", now)
    assert (await loader.load(ingested.conversation_id, now)).open_tasks == []

    await add_task(db, accounts.tenant_id, ingested.conversation_id, "task_open", "open", now)
    after = await loader.load(ingested.conversation_id, now)
    assert [(t.id, t.line()) for t in after.open_tasks] == [
        ("task_open", "follow-up task_open [normal]: call back about task_open (quantity 500)")
    ]
    assert after.open_follow_up
    assert after.ledgers.open_references == frozenset({"task_open"})  # a reply may name it
