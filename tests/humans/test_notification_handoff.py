"""A hand-off through the real pipeline (scripted model, assembler, refer_to_human) tells each
subscriber exactly once per route, by e-mail, Telegram and a signed webhook on loopback."""

from __future__ import annotations

from typing import Any

import httpx2
from test_handoff import ASK_FOR_A_PERSON, COURTESY, REASON, REFER, handoff_script
from test_notification_kit import (
    BOT_TOKEN,
    CLOCK,
    LOOPBACK,
    WEBHOOK_SECRET,
    FakeBotApi,
    SmtpSink,
    WebhookReceiver,
    add_operator,
    attempts,
    bot_api,
    guarded,
    receiving,
    smtp_sink,
    the_dispatch_job,
    trail,
)

from channels.loopback import Call
from frontdesk.demo import DEMO_BUSINESS, seed_demo
from frontdesk.humans.notifications import (
    DISPATCH_NOTIFICATION,
    Dispatcher,
    MappingSecrets,
    add_webhook,
    build_routes,
    subscribe,
)
from frontdesk.humans.notifications.telegram import BOT_TOKEN_SECRET
from frontdesk.ingestion.ingest import PROCESS_CONVERSATION
from frontdesk.platform.jobs import ClaimedJob
from frontdesk.platform.outbound import GuardedClient
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ClaimRejection, Job, Notification
from frontdesk.platform.workers import JobRunner
from harness import count, make_runtime, message, reply_texts, traces, wait_idle

LIE = {"reply": {"blocks": [{"type": "text", "text": "Saved your order!"}], "claims": [{"type": "lead_captured"}]}}
COURTESY_REPLY = {"reply": {"blocks": [{"type": "text", "text": COURTESY}], "claims": [{"type": "handoff_triggered"}]}}


async def converse_with_notifications(db: Database, script: dict[str, Any], notifier: Dispatcher, *texts: str) -> str:
    """Each text is one customer message, run to the end by a job runner that turns conversations
    and dispatches notifications. Returns the conversation id."""
    runtime, accounts = await make_runtime(db, script, job_backoff_s=0.05)

    async def process_conversation(job: ClaimedJob) -> None:
        await runtime.assembler.process(str(job.payload["conversation_id"]), job.claim_id)

    handlers = {PROCESS_CONVERSATION: process_conversation, DISPATCH_NOTIFICATION: notifier.run}
    runner = JobRunner(runtime.queue, handlers, concurrency=2, poll_interval_s=0.05, sweeps=[], sweep_interval_s=3600)
    conversation_id = ""
    runner.start()
    try:
        for text in texts:
            conversation_id = (await runtime.ingestor.ingest(message(accounts.webchat_id, text))).conversation_id
            await wait_idle(db)
    finally:
        await runner.stop()
        await runtime.close()
    return conversation_id


def dispatcher(
    db: Database, http: httpx2.AsyncClient, hooks: GuardedClient, tenant_id: str, *, smtp_port: int, bot: str
) -> Dispatcher:
    secrets = MappingSecrets({(tenant_id, BOT_TOKEN_SECRET): BOT_TOKEN, (tenant_id, "crm_secret"): WEBHOOK_SECRET})
    routes = build_routes(
        http=http,
        guarded_http=hooks,
        secrets=secrets,
        clock=CLOCK,
        smtp_url=f"smtp://127.0.0.1:{smtp_port}",
        sender="desk@shop.test",
        timeout_s=5,
        telegram_api_base=bot,
    )
    return Dispatcher(db, CLOCK, routes, timeout_s=5)


async def test_one_hand_off_tells_each_subscriber_once_per_route_despite_a_retried_turn_and_a_rerun_job(db):
    # The model hands off, then lies; the gate's hinted retry hands off again before the courtesy
    # reply. A later message in the handed-off thread is stored without a turn.
    script = handoff_script(REFER, LIE, REFER)
    script["rules"][0]["responses"].append(COURTESY_REPLY)
    tenant_id = (await seed_demo(db, CLOCK)).tenant_id
    ana = await add_operator(db, tenant_id, "Ana", language="es", telegram_chat_id="5001")
    bo = await add_operator(db, tenant_id, "Bo")
    await add_operator(db, tenant_id, "Cy")  # not subscribed: kind-level subscriptions win
    smtp, api, receiver = SmtpSink(), FakeBotApi(), WebhookReceiver()

    async with smtp_sink(smtp), bot_api(api), receiving(receiver), httpx2.AsyncClient() as http, guarded() as hooks:
        async with db.transaction() as session:
            crm = await add_webhook(
                session,
                tenant_id=tenant_id,
                name="CRM",
                url=receiver.url,
                secret_name="crm_secret",
                now=CLOCK.now(),
                allow=LOOPBACK,
            )
            for subscriber in ({"operator_id": ana}, {"operator_id": bo}, {"webhook_id": crm.id}):
                await subscribe(session, tenant_id=tenant_id, kind="handoff", now=CLOCK.now(), **subscriber)
        notifier = dispatcher(db, http, hooks, tenant_id, smtp_port=smtp.port, bot=api.base_url)
        conversation_id = await converse_with_notifications(
            db, script, notifier, ASK_FOR_A_PERSON, "hello? anyone there?"
        )
        await notifier.run(await the_dispatch_job(db))  # once more: a lapsed lease, a sweeper's re-queue

    (trace,) = await traces(db)  # one turn; the later message ran none
    assert [c["name"] for c in trace.tool_calls] == ["refer_to_human", "refer_to_human"]
    assert (await count(db, ClaimRejection), await reply_texts(db)) == (1, [COURTESY])
    assert await count(db, Notification) == 1
    languages = sorted((m["To"].split(".")[0], m["Content-Language"]) for m in smtp.messages)
    assert languages == [("ana", "es"), ("bo", "en")]
    assert [(c.endpoint, c.body["chat_id"]) for c in api.calls] == [("sendMessage", "5001")]
    ((headers, body),) = receiver.received
    assert (body["kind"], body["conversation_id"], body["payload"]["reason"], receiver.forged) == (
        "handoff",
        conversation_id,
        REASON,
        0,
    )
    assert headers["frontdesk-delivery"].isdigit()
    assert await trail(db) == {
        (f"operator:{ana}", "email", "sent"),
        (f"operator:{ana}", "telegram", "sent"),
        (f"operator:{bo}", "email", "sent"),
        (f"webhook:{crm.id}", "webhook", "sent"),
    }


async def test_with_nothing_configured_every_operator_is_told_and_a_failing_route_is_retried_alone(db):
    tenant_id = (await seed_demo(db, CLOCK)).tenant_id
    ana = await add_operator(db, tenant_id, "Ana", telegram_chat_id="5001")
    bo = await add_operator(db, tenant_id, "Bo", language="vi")
    bad_gateway = [{"ok": False, "description": "Bad Gateway"}]

    def fail_once(call: Call) -> tuple[int, Any] | None:
        return (502, bad_gateway.pop()) if bad_gateway else None

    smtp, api = SmtpSink(), FakeBotApi(fail_when=fail_once)
    async with smtp_sink(smtp), bot_api(api), httpx2.AsyncClient() as http, guarded() as hooks:
        notifier = dispatcher(db, http, hooks, tenant_id, smtp_port=smtp.port, bot=api.base_url)
        await converse_with_notifications(db, handoff_script(), notifier, ASK_FOR_A_PERSON)

    assert sorted(m["Subject"] for m in smtp.messages) == [
        f"{DEMO_BUSINESS}: a customer asks for a person",
        f"{DEMO_BUSINESS}: khách hàng muốn gặp nhân viên",
    ]
    assert len(api.calls) == 2  # refused once, then sent
    assert {(a.subscriber, a.route, a.level, a.status, a.attempts, a.error) for a in await attempts(db)} == {
        (f"operator:{ana}", "email", "everyone", "sent", 1, None),
        (f"operator:{bo}", "email", "everyone", "sent", 1, None),
        (f"operator:{ana}", "telegram", "everyone", "sent", 2, "Telegram HTTP 502: Bad Gateway"),
    }
    assert await count(db, Job, Job.kind == DISPATCH_NOTIFICATION, Job.status == "done") == 1
