"""Who is told: explicit recipients → kind subscriptions → entity assignments → every active
operator; the first level that names anyone wins."""

from __future__ import annotations

from test_notification_kit import CLOCK, World, add_operator, world

from frontdesk.humans.notifications import Recipient, add_webhook, assign, subscribe
from frontdesk.humans.notifications.resolution import Planned, resolve
from frontdesk.platform.store.engine import Database


async def resolved(db: Database, w: World, kind: str = "handoff", *recipients: Recipient) -> set[tuple[str, str, str]]:
    async with db.read() as session:
        planned: list[Planned] = await resolve(
            session,
            tenant_id=w.tenant_id,
            kind=kind,
            conversation_id=w.conversation_id,
            task_id=w.task_id,
            recipients=recipients,
        )
    return {(p.subscriber, p.route, p.level) for p in planned}


async def test_with_nothing_configured_every_active_operator_is_told_on_every_route_they_have(db):
    w = await world(db)
    ana = await add_operator(db, w.tenant_id, "Ana", telegram_chat_id="5001")
    bo = await add_operator(db, w.tenant_id, "Bo")
    await add_operator(db, w.tenant_id, "Gone", active=False)

    assert await resolved(db, w) == {
        (f"operator:{ana}", "email", "everyone"),
        (f"operator:{ana}", "telegram", "everyone"),
        (f"operator:{bo}", "email", "everyone"),
    }


async def test_an_assignment_on_the_task_or_the_conversation_comes_before_everyone(db):
    w = await world(db)
    ana = await add_operator(db, w.tenant_id, "Ana")
    bo = await add_operator(db, w.tenant_id, "Bo")
    await add_operator(db, w.tenant_id, "Cy")
    async with db.transaction() as session:
        await assign(session, tenant_id=w.tenant_id, operator_id=ana, task_id=w.task_id, now=CLOCK.now())
        await assign(session, tenant_id=w.tenant_id, operator_id=bo, conversation_id=w.conversation_id, now=CLOCK.now())

    assert await resolved(db, w) == {(f"operator:{ana}", "email", "entity"), (f"operator:{bo}", "email", "entity")}


async def test_a_kind_subscription_wins_over_assignments_and_names_its_route(db):
    w = await world(db)
    ana = await add_operator(db, w.tenant_id, "Ana", telegram_chat_id="5001")
    bo = await add_operator(db, w.tenant_id, "Bo")
    async with db.transaction() as session:
        hook = await add_webhook(session, tenant_id=w.tenant_id, name="CRM", url="https://crm.test/in", now=CLOCK.now())
        await subscribe(
            session, tenant_id=w.tenant_id, kind="handoff", operator_id=ana, route="telegram", now=CLOCK.now()
        )
        await subscribe(session, tenant_id=w.tenant_id, kind="handoff", webhook_id=hook.id, now=CLOCK.now())
        await subscribe(session, tenant_id=w.tenant_id, kind="lead", operator_id=bo, now=CLOCK.now())
        await assign(session, tenant_id=w.tenant_id, operator_id=bo, task_id=w.task_id, now=CLOCK.now())

    assert await resolved(db, w, "handoff") == {
        (f"operator:{ana}", "telegram", "kind"),
        (f"webhook:{hook.id}", "webhook", "kind"),
    }
    assert await resolved(db, w, "lead") == {(f"operator:{bo}", "email", "kind")}
    # No subscription to this kind: the assignment decides.
    assert await resolved(db, w, "delivery_failed") == {(f"operator:{bo}", "email", "entity")}


async def test_explicit_recipients_win_over_every_other_level(db):
    w = await world(db)
    ana = await add_operator(db, w.tenant_id, "Ana", telegram_chat_id="5001")
    bo = await add_operator(db, w.tenant_id, "Bo")
    async with db.transaction() as session:
        await subscribe(session, tenant_id=w.tenant_id, kind="handoff", operator_id=bo, now=CLOCK.now())
        await assign(session, tenant_id=w.tenant_id, operator_id=bo, task_id=w.task_id, now=CLOCK.now())

    assert await resolved(db, w, "handoff", Recipient(operator_id=ana, route="email")) == {
        (f"operator:{ana}", "email", "explicit")
    }


async def test_a_level_naming_only_inactive_or_foreign_subscribers_falls_through_to_the_next(db):
    w = await world(db)
    ana = await add_operator(db, w.tenant_id, "Ana")
    gone = await add_operator(db, w.tenant_id, "Gone", active=False)
    async with db.transaction() as session:
        await subscribe(session, tenant_id=w.tenant_id, kind="handoff", operator_id=gone, now=CLOCK.now())

    assert await resolved(db, w, "handoff", Recipient(operator_id="op_of_another_tenant")) == {
        (f"operator:{ana}", "email", "everyone")
    }


async def test_a_tenant_without_operators_resolves_to_nobody(db):
    w = await world(db)

    assert await resolved(db, w) == set()
