"""Recording and dispatching: one hand-off is one notification, one dispatch job, and one
delivery per subscriber per route, however often the job or the tool runs; failures are
recorded, retried a bounded number of times, and never hold up another route."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from test_notification_kit import (
    CLOCK,
    RecordingRoute,
    World,
    add_operator,
    attempts,
    run_dispatch_jobs,
    the_dispatch_job,
    trail,
    world,
)

from frontdesk.demo import DEMO_BUSINESS
from frontdesk.humans import hand_off
from frontdesk.humans.notifications import (
    DISPATCH_NOTIFICATION,
    DeliveryError,
    Dispatcher,
    Event,
    Handoff,
    Recipient,
    notify,
)
from frontdesk.humans.notifications.record import DISPATCH_ATTEMPTS
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Job, Notification
from frontdesk.platform.store.schema_console import Operator
from harness import count


def dispatcher(db: Database, **routes: RecordingRoute) -> Dispatcher:
    return Dispatcher(db, CLOCK, routes, timeout_s=5, conversation_url="https://desk.test/c/{conversation_id}")


async def hand_off_once(db: Database, w: World, run_key: str = "run-1") -> None:
    async with db.transaction() as session:
        await hand_off(
            session,
            tenant_id=w.tenant_id,
            conversation_id=w.conversation_id,
            reason="Wants a person about a reprint",
            run_key=run_key,
            now=CLOCK.now(),
        )


async def test_one_hand_off_is_one_delivery_per_subscriber_per_route_even_when_the_job_runs_twice(db):
    w = await world(db)
    ana = await add_operator(db, w.tenant_id, "Ana", telegram_chat_id="5001", language="es")
    bo = await add_operator(db, w.tenant_id, "Bo")
    email, telegram = RecordingRoute(), RecordingRoute()
    notifier = dispatcher(db, email=email, telegram=telegram)

    await hand_off_once(db, w)
    await hand_off_once(db, w)  # the tool called again in the same run
    assert await count(db, Job, Job.kind == DISPATCH_NOTIFICATION) == 1
    job = await the_dispatch_job(db)
    await notifier.run(job)
    await notifier.run(job)  # the same job once more (its lease lapsed and a sweeper re-queued it)

    assert sorted(d.address for d in email.delivered) == sorted(await emails_of(db, ana, bo))
    assert [d.address for d in telegram.delivered] == ["5001"]
    assert await trail(db) == {
        (f"operator:{ana}", "email", "sent"),
        (f"operator:{ana}", "telegram", "sent"),
        (f"operator:{bo}", "email", "sent"),
    }
    spanish = next(d for d in email.delivered if d.message.language == "es")
    assert spanish.message.subject == f"{DEMO_BUSINESS}: un cliente pide hablar con una persona"
    assert spanish.message.body.splitlines()[:3] == [
        "Wants a person about a reprint",
        "",
        f"Conversación: https://desk.test/c/{w.conversation_id}",
    ]


async def emails_of(db: Database, *operator_ids: str) -> list[str]:
    async with db.read() as session:
        return list(await session.scalars(select(Operator.email).where(Operator.id.in_(operator_ids))))


async def test_a_new_run_after_the_first_is_a_new_notification_but_a_retried_run_is_not(db):
    w = await world(db)
    await add_operator(db, w.tenant_id, "Ana")
    email = RecordingRoute()

    await hand_off_once(db, w, "run-1")
    await hand_off_once(db, w, "run-1")
    await run_dispatch_jobs(db, dispatcher(db, email=email))
    await run_dispatch_jobs(db, dispatcher(db, email=email))

    assert (await count(db, Notification), len(email.delivered)) == (1, 1)


async def test_a_notification_rolled_back_with_its_business_change_leaves_nothing_to_send(db):
    w = await world(db)
    await add_operator(db, w.tenant_id, "Ana")
    event = Event(
        tenant_id=w.tenant_id,
        payload=Handoff(conversation_id=w.conversation_id, task_id=w.task_id, reason="x"),
        dedupe_key="k1",
    )

    async def tool_that_fails_after_notifying() -> None:
        async with db.transaction() as session:
            await notify(session, event, now=CLOCK.now())
            raise RuntimeError("the tool failed after notifying")

    with pytest.raises(RuntimeError):
        await tool_that_fails_after_notifying()

    assert (await count(db, Notification), await count(db, Job)) == (0, 0)


async def test_a_failing_route_is_recorded_retried_and_does_not_hold_up_the_others(db):
    w = await world(db)
    ana = await add_operator(db, w.tenant_id, "Ana", telegram_chat_id="5001")
    email, telegram = RecordingRoute(), RecordingRoute(failures=1, failure=DeliveryError("Telegram HTTP 502: "))
    notifier = dispatcher(db, email=email, telegram=telegram)
    await hand_off_once(db, w)

    await run_dispatch_jobs(db, notifier)

    assert await trail(db) == {(f"operator:{ana}", "email", "sent"), (f"operator:{ana}", "telegram", "pending")}
    failed = next(a for a in await attempts(db) if a.route == "telegram")
    assert (failed.attempts, failed.error) == (1, "Telegram HTTP 502: ")
    assert await count(db, Job, Job.status == "queued") == 1  # the queue will run it again

    await run_dispatch_jobs(db, notifier)

    assert await trail(db) == {(f"operator:{ana}", "email", "sent"), (f"operator:{ana}", "telegram", "sent")}
    assert (len(email.delivered), len(telegram.delivered)) == (1, 1)


async def test_a_refused_delivery_is_not_retried(db):
    w = await world(db)
    ana = await add_operator(db, w.tenant_id, "Ana")
    email = RecordingRoute(failures=1, failure=DeliveryError("SMTP 550: no such mailbox", permanent=True))
    await hand_off_once(db, w)

    await run_dispatch_jobs(db, dispatcher(db, email=email))

    assert await trail(db) == {(f"operator:{ana}", "email", "failed")}
    assert await count(db, Job, Job.status == "queued") == 0


async def test_a_route_that_keeps_failing_is_given_up_after_the_bounded_attempts(db):
    w = await world(db)
    ana = await add_operator(db, w.tenant_id, "Ana")
    email = RecordingRoute(failures=99)
    await hand_off_once(db, w)

    runs = 0
    while await run_dispatch_jobs(db, dispatcher(db, email=email)):
        runs += 1

    (attempt,) = await attempts(db)
    assert (runs, attempt.subscriber, attempt.status, attempt.attempts) == (
        DISPATCH_ATTEMPTS,
        f"operator:{ana}",
        "failed",
        DISPATCH_ATTEMPTS,
    )


async def test_a_route_that_is_not_configured_is_recorded_as_skipped(db):
    w = await world(db)
    ana = await add_operator(db, w.tenant_id, "Ana", telegram_chat_id="5001")
    telegram = RecordingRoute()
    await hand_off_once(db, w)

    await run_dispatch_jobs(db, dispatcher(db, telegram=telegram))  # no SMTP server configured

    skipped = next(a for a in await attempts(db) if a.route == "email")
    assert (skipped.status, skipped.error) == ("skipped", "e-mail is not configured (FRONTDESK_SMTP_URL)")
    assert await trail(db) >= {(f"operator:{ana}", "telegram", "sent")}


async def test_explicit_recipients_travel_with_the_event(db):
    w = await world(db)
    ana = await add_operator(db, w.tenant_id, "Ana")
    await add_operator(db, w.tenant_id, "Bo")
    email = RecordingRoute()
    async with db.transaction() as session:
        await notify(
            session,
            Event(
                tenant_id=w.tenant_id,
                payload=Handoff(conversation_id=w.conversation_id, task_id=w.task_id, reason="x"),
                recipients=(Recipient(operator_id=ana),),
            ),
            now=CLOCK.now(),
        )

    await run_dispatch_jobs(db, dispatcher(db, email=email))

    assert {(a.subscriber, a.level) for a in await attempts(db)} == {(f"operator:{ana}", "explicit")}
