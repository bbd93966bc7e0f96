"""The operations surface through the real app: /readyz, /metrics, the span tree and JSON logs of a
web-chat turn (script model, real HTTP on loopback, workers in the app's lifespan).

/metrics is read where it is served: from the metrics listener's app, or from the public app with
the metrics token (tests/hostile/test_media_and_ops.py holds that it is nowhere else)."""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from logging_kit import logging_restored
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from channels.loopback import client, serve
from frontdesk.app import create_app, create_metrics_app
from frontdesk.platform.models.gateway import ModelGateway
from frontdesk.platform.observability import Metrics, Observability, check_readiness, configure_logging
from frontdesk.platform.observability.tracing import TURN, TURN_STAGES
from frontdesk.platform.store.engine import Database
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from harness import FAST, make_runtime, reply, wait_idle

QUESTION = "how much are business cards?"
METRICS_TOKEN = "observability-token-0123456"
BEARER = {"Authorization": f"Bearer {METRICS_TOKEN}"}


def demo_model() -> Any:
    return ModelGateway({"chat": "script:demo"}).client("chat")


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text page: (name, sorted labels) -> value."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(page: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float | None:
    return page.get((name, tuple(sorted(labels.items()))))


@asynccontextmanager
async def in_process(app: Any) -> AsyncIterator[httpx2.AsyncClient]:
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """configure_logging changes process-wide state: put it back for the next test."""
    with logging_restored():
        yield


# -- /readyz


async def test_readyz_is_ready_when_the_database_and_the_jobs_table_answer(db):
    runtime, _ = await make_runtime(db, {"name": "t", "default": [reply("hi")]})
    async with in_process(create_app(runtime, run_workers=False)) as http:
        ready = await http.get("/readyz")
        alive = await http.get("/healthz")
    assert (ready.status_code, ready.json()) == (200, {"status": "ready", "checks": {"database": "ok", "jobs": "ok"}})
    assert (alive.status_code, alive.json()) == (200, {"status": "ok"})


def _runtime_on(database_url: str) -> Runtime:
    gateway = ModelGateway.with_clients({"chat": demo_model()})
    return Runtime.build(Settings(**FAST, database_url=database_url), gateway=gateway)


async def test_readyz_is_503_naming_the_jobs_table_when_the_schema_is_gone(tmp_path: Path):
    runtime = _runtime_on(f"sqlite+aiosqlite:///{tmp_path / 'never-migrated.db'}")
    try:
        async with in_process(create_app(runtime, run_workers=False)) as http:
            response = await http.get("/readyz")
            alive = await http.get("/healthz")
    finally:
        await runtime.db.dispose()
    assert response.status_code == 503
    assert response.json() == {"status": "unready", "checks": {"database": "ok", "jobs": "failed: OperationalError"}}
    assert alive.status_code == 200  # liveness never depends on the database


async def test_readyz_is_503_naming_the_database_when_its_file_cannot_be_opened(tmp_path: Path):
    runtime = _runtime_on(f"sqlite+aiosqlite:///{tmp_path / 'removed-dir' / 'frontdesk.db'}")
    try:
        async with in_process(create_app(runtime, run_workers=False)) as http:
            response = await http.get("/readyz")
    finally:
        await runtime.db.dispose()
    assert response.status_code == 503
    assert response.json() == {
        "status": "unready",
        "checks": {"database": "failed: OperationalError", "jobs": "skipped"},
    }


async def test_readiness_gives_up_on_a_database_server_that_never_answers():
    accepted: list[asyncio.StreamWriter] = []

    async def silent(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)  # accept the connection, then say nothing (a stuck pooler)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    db = Database.from_url(f"postgresql+asyncpg://frontdesk:pw@127.0.0.1:{port}/frontdesk")
    try:
        started = time.monotonic()
        readiness = await check_readiness(db, timeout_s=0.5)
        elapsed = time.monotonic() - started
    finally:
        for writer in accepted:
            writer.close()
        server.close()
        await db.dispose()
    assert accepted, "the probe never reached the server"
    assert (readiness.ready, readiness.checks) == (False, {"database": "timeout", "jobs": "skipped"})
    assert elapsed < 2.0


# -- /metrics


async def test_metrics_report_the_job_queue_depth_read_at_scrape_time(db):
    runtime, _ = await make_runtime(db, {"name": "t", "default": [reply("hi")]})
    async with db.transaction() as session:
        for n in range(3):
            await runtime.queue.enqueue(session, "process_conversation", {"n": n}, delay_s=-5.0)
        await runtime.queue.enqueue(session, "summarize_conversation", {}, delay_s=3600)
    async with in_process(create_metrics_app(runtime, Metrics())) as http:
        response = await http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    page = samples(response.text)
    assert value(page, "frontdesk_job_queue_depth", kind="process_conversation", status="queued") == 3
    assert value(page, "frontdesk_job_queue_depth", kind="summarize_conversation", status="queued") == 1
    oldest = value(page, "frontdesk_job_queue_oldest_due_seconds")
    assert oldest is not None
    assert 4.0 <= oldest < 60.0  # the due jobs, not the one due in an hour


async def test_a_scrape_still_answers_when_the_database_does_not(tmp_path: Path):
    runtime = _runtime_on(f"sqlite+aiosqlite:///{tmp_path / 'removed-dir' / 'frontdesk.db'}")
    try:
        async with in_process(create_metrics_app(runtime, Metrics())) as http:
            response = await http.get("/metrics")
    finally:
        await runtime.db.dispose()
    assert response.status_code == 200
    page = samples(response.text)
    assert value(page, "frontdesk_metrics_refresh_errors_total") == 1
    assert not any(name == "frontdesk_job_queue_depth" for name, _ in page)  # no stale numbers


async def test_metrics_can_be_switched_off(db):
    settings = {"metrics_enabled": False, "metrics_token": METRICS_TOKEN}
    runtime, _ = await make_runtime(db, {"name": "t", "default": [reply("hi")]}, **settings)
    async with in_process(create_app(runtime, run_workers=False)) as http:
        assert (await http.get("/metrics", headers=BEARER)).status_code == 404
        assert (await http.get("/readyz")).status_code == 200
    assert Observability.from_settings(runtime.settings).metrics is None  # so `serve` starts no listener


# -- one real turn: metrics, spans, logs


async def _one_web_chat_turn(db: Database, model: Any, text: str) -> tuple[str, str, InMemorySpanExporter, Any]:
    """Post ``text`` to the web chat of an app served on loopback, wait for the turn, scrape.
    Returns (the /metrics page, the conversation id, the spans, the runtime)."""
    runtime, accounts = await make_runtime(db, model, quiet_window_s=0, metrics_token=METRICS_TOKEN)
    exporter = InMemorySpanExporter()
    app = create_app(runtime, observability=Observability.from_settings(runtime.settings, span_exporter=exporter))
    async with serve(app) as base_url, client(base_url) as http:
        url = f"/v1/webchat/{accounts.webchat_id}/messages"
        posted = await http.post(url, json={"session": "observed-session-0001", "id": "m1", "text": text})
        assert posted.status_code == 202
        await wait_idle(db)
        page = (await http.get("/metrics", headers=BEARER)).text
        transcript = (await http.get(url, params={"session": "observed-session-0001"})).json()
    assert [m["role"] for m in transcript["messages"]] == ["user", "assistant"]
    conversation_id = await runtime.ingestor.find_conversation(accounts.webchat_id, "observed-session-0001")
    assert conversation_id is not None
    return page, str(conversation_id), exporter, runtime


def _tree(spans: tuple[ReadableSpan, ...]) -> tuple[ReadableSpan, list[ReadableSpan]]:
    turns = [s for s in spans if s.name == TURN]
    assert len(turns) == 1, [s.name for s in spans]
    turn = turns[0]
    assert turn.context is not None
    children = [s for s in spans if s.parent is not None and s.parent.span_id == turn.context.span_id]
    return turn, children


async def test_a_web_chat_turn_is_counted_timed_and_traced_stage_by_stage(db, restore_logging):
    lines = io.StringIO()
    configure_logging("json", "INFO", stream=lines)
    page_text, conversation_id, exporter, runtime = await _one_web_chat_turn(db, demo_model(), QUESTION)

    page = samples(page_text)
    tenant = await _tenant_of(db, conversation_id)
    assert value(page, "frontdesk_turns_total", tenant=tenant, outcome="replied") == 1
    assert value(page, "frontdesk_turn_duration_seconds_count", outcome="replied") == 1
    model = demo_model().name
    assert value(page, "frontdesk_model_request_duration_seconds_count", slot="chat", model=model) == 2
    assert (value(page, "frontdesk_model_tokens_total", slot="chat", model=model, direction="input") or 0) > 0
    assert (value(page, "frontdesk_model_tokens_total", slot="chat", model=model, direction="output") or 0) > 0
    assert value(page, "frontdesk_tool_calls_total", tool="get_service_detail", result="ok") == 1
    assert value(page, "frontdesk_replies_verified_total", verdict="accepted") == 1
    assert value(page, "frontdesk_receipts_total", status="sent") == 1
    assert value(page, "frontdesk_job_queue_oldest_due_seconds") == 0  # the turn's job is done, nothing waits
    writes = value(page, "frontdesk_db_transactions_total", intent="write") or 0
    assert 0 < writes < (value(page, "frontdesk_db_statements_total") or 0)  # the database work, for per-turn ratios
    assert not any("conversation" in dict(labels) for _, labels in page)  # no per-conversation series

    spans = exporter.get_finished_spans()
    turn, children = _tree(spans)
    assert {s.name for s in children} == set(TURN_STAGES)
    assert [s.name for s in children if s.name == "model.request"] == ["model.request"] * 2
    assert all(s.context is not None and turn.context is not None for s in children)
    assert {s.context.trace_id for s in children if s.context} == {turn.context.trace_id if turn.context else 0}
    assert dict(turn.attributes or {}) == {
        "frontdesk.conversation_id": conversation_id,
        "frontdesk.tenant_id": tenant,
        "frontdesk.batch_size": 1,
        "frontdesk.outcome": "replied",
        "frontdesk.steps": 2,
    }
    by_name = {s.name: dict(s.attributes or {}) for s in children}
    assert by_name["tool.call"] == {"gen_ai.tool.name": "get_service_detail", "frontdesk.tool_result": "ok"}
    assert by_name["verify"]["frontdesk.accepted"] is True
    assert by_name["deliver"]["frontdesk.receipt_status"] == "sent"
    assert by_name["route"]["frontdesk.tools_offered"] >= 1
    # Ids, counts and names only: the customer's words are in no span.
    words = {str(v) for s in spans for v in (s.attributes or {}).values()}
    assert not any("business cards" in w for w in words)

    parsed = [json.loads(line) for line in lines.getvalue().splitlines()]
    finished = [p for p in parsed if p["message"].startswith("turn finished")]
    assert len(finished) == 1
    assert turn.context is not None
    assert finished[0] | {"time": "-", "duration_ms": 0} == {
        "time": "-",
        "level": "INFO",
        "logger": "frontdesk.turns",
        "message": finished[0]["message"],
        "trace_id": f"{turn.context.trace_id:032x}",
        "span_id": f"{turn.context.span_id:016x}",
        "conversation_id": conversation_id,
        "outcome": "replied",
        "steps": 2,
        "duration_ms": 0,
    }
    assert all({"time", "level", "logger", "message"} <= p.keys() for p in parsed)
    assert QUESTION not in lines.getvalue()

    # Another app in the same process has its own registry: nothing leaks between them.
    async with in_process(create_app(runtime, run_workers=False)) as http:
        fresh = samples((await http.get("/metrics", headers=BEARER)).text)
    assert not any(name == "frontdesk_turns_total" for name, _ in fresh)


async def test_an_invented_price_counts_two_rejections_and_a_fallback_turn(db):
    liar = {"name": "liar", "default": [reply("Business cards are $999 per box.")]}
    page_text, conversation_id, exporter, _ = await _one_web_chat_turn(db, liar, QUESTION)
    page = samples(page_text)
    assert value(page, "frontdesk_claim_rejections_total", reason="price", kind="companion") == 2
    assert value(page, "frontdesk_replies_verified_total", verdict="rejected") == 2
    assert value(page, "frontdesk_turns_total", tenant=await _tenant_of(db, conversation_id), outcome="fallback") == 1
    assert value(page, "frontdesk_receipts_total", status="sent") == 1  # the polite hold message went out
    _, children = _tree(exporter.get_finished_spans())
    verdicts = [dict(s.attributes or {}) for s in children if s.name == "verify"]
    assert [(v["frontdesk.accepted"], v["frontdesk.failed_rules"]) for v in verdicts] == [(False, ("price",))] * 2


async def _tenant_of(db: Database, conversation_id: str) -> str:
    from frontdesk.platform.store.schema import Conversation

    async with db.read() as session:
        conversation = await session.get(Conversation, conversation_id)
    assert conversation is not None
    return conversation.tenant_id
