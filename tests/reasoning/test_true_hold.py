"""The hold message tells the truth: a refused reply opens (or reuses) one "needs a reply" task for
its conversation with the draft and the reasons, the team is told once, the owner's own words are
sent, and an action that really happened is said before the hold."""

from __future__ import annotations

from sqlalchemy import select, update

from frontdesk.business import BusinessStore
from frontdesk.business.store import Actor
from frontdesk.demo import DEMO_TENANT
from frontdesk.packs.catalog import FALLBACK_TEXTS, OUTCOME_TEXTS
from frontdesk.platform.store.schema import Notification, Task
from harness import converse, make_runtime, message, reply_texts

INVENTED = {"reply": {"blocks": [{"type": "text", "text": "We're open until 9 tonight, and it's 20% off!"}]}}
LIES = {"name": "lies", "default": [INVENTED]}  # the hinted retry lies again: the hold ships


async def hold_tasks(db) -> list[Task]:
    async with db.transaction() as session:
        return list(await session.scalars(select(Task).where(Task.kind == "needs_reply").order_by(Task.created_at)))


async def needs_reply_notifications(db) -> list[Notification]:
    async with db.transaction() as session:
        return list(await session.scalars(select(Notification).where(Notification.kind == "needs_reply")))


async def test_a_hold_opens_one_task_per_conversation_with_the_draft_and_the_reasons(db):
    conversations = await converse(db, LIES, ("s1", "are you open late?"), ("s1", "hello?"), ("s2", "discounts?"))

    tasks = await hold_tasks(db)
    assert await reply_texts(db) == [FALLBACK_TEXTS["en"]] * 3
    assert [t.conversation_id for t in tasks] == [conversations["s1"], conversations["s2"]]
    first = tasks[0]
    assert (first.status, first.priority, len(first.details["holds"])) == ("open", "high", 2)
    hold = first.details["holds"][0]
    assert hold["draft"] == "We're open until 9 tonight, and it's 20% off!"
    assert any(r.startswith("percentage:") for r in hold["reasons"])
    assert any(r.startswith(("time:", "hours:")) for r in hold["reasons"])
    # told once per task, not once per hold
    assert sorted(n.task_id for n in await needs_reply_notifications(db)) == sorted(t.id for t in tasks)


async def test_a_closed_hold_task_lets_the_next_hold_open_a_new_one(db):
    runtime, accounts = await make_runtime(db, LIES)
    await runtime.ingestor.ingest(message(accounts.webchat_id, "open late?"))
    await runtime.runner.run_until_idle()
    async with db.transaction() as session:
        await session.execute(update(Task).where(Task.kind == "needs_reply").values(status="done"))
    await runtime.ingestor.ingest(message(accounts.webchat_id, "and tomorrow?"))
    await runtime.runner.run_until_idle()

    assert [t.status for t in await hold_tasks(db)] == ["done", "open"]
    assert len(await needs_reply_notifications(db)) == 2


async def test_the_owner_writes_the_hold_message(db):
    runtime, accounts = await make_runtime(db, LIES)
    store = BusinessStore(db, runtime.clock)
    profile = (await store.read(DEMO_TENANT)).profile
    assert profile is not None
    owner_words = "Thanks! Our printer Sam will answer you within the hour."
    await store.save_profile(DEMO_TENANT, profile.model_copy(update={"hold_message": {"en": owner_words}}), Actor())
    await runtime.ingestor.ingest(message(accounts.webchat_id, "open late?"))
    await runtime.runner.run_until_idle()

    assert await reply_texts(db) == [owner_words]


async def test_an_action_that_happened_is_told_before_the_hold(db):
    # (A saved request or a hand-over has a courtesy reply of its own instead: test_bound_arguments.)
    save = {"tool": "update_customer_info", "args": {"name": "Ana", "phone": "+1 555 123 4567"}}
    confirmed = {"reply": {"blocks": [{"type": "text", "text": "Your order is confirmed, see you Thursday!"}]}}
    script = {"name": "overpromise", "default": [save, confirmed, confirmed]}

    await converse(db, script, ("s1", "I'm Ana, +1 555 123 4567"))

    expected = f"{OUTCOME_TEXTS['customer_info_updated']['en']} {FALLBACK_TEXTS['en']}"
    assert await reply_texts(db) == [expected]
    assert len(await hold_tasks(db)) == 1
