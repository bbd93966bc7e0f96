"""The model provider failing (issue 8, graceful degradation), end to end on a Telegram account:
our app on loopback, the Bot API faked on another port, the model a ``FunctionModel`` that fails
the way vendors do. The customer gets one real reply once the model is back, or the hold message
once the job's attempts are spent, never two; the trace says why."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from pydantic_ai import ModelResponse, ToolCallPart
from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior
from pydantic_ai.models.function import FunctionModel
from sqlalchemy import select

# The loopback harness and the platform doubles live with the channel tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "channels"))

from live import Live, live_telegram
from snapshot import read_fixture

from frontdesk.packs.catalog import FALLBACK_TEXTS
from frontdesk.platform.models.gateway import PydanticAIClient
from frontdesk.platform.store.schema import Job, Message
from harness import receipts, traces, wait_idle

ACCOUNT = "tg-outage-01"
SECRET = "outage-Secret_1"
REAL_REPLY = "Hello from the shop!"
METRICS_TOKEN = "outage-metrics-token-0123"  # the public app serves /metrics to its bearer only


def failing_model(*failures: BaseException | None) -> tuple[PydanticAIClient, list[int]]:
    """A chat model whose n-th request raises ``failures[n]`` (None: answers); past the list it
    answers. Returns the client and a one-item list counting its requests."""
    calls = [0]

    async def respond(messages: Any, info: Any) -> ModelResponse:
        calls[0] += 1
        failure = failures[calls[0] - 1] if calls[0] <= len(failures) else None
        if failure is not None:
            raise failure
        return ModelResponse(parts=[ToolCallPart("reply", {"blocks": [{"type": "text", "text": REAL_REPLY}]})])

    return PydanticAIClient(FunctionModel(respond), "function:flaky", timeout_s=10), calls


def http_error(status: int, **headers: str) -> ModelHTTPError:
    return ModelHTTPError(status, "flaky", body={"error": "vendor says no"}, headers=headers or None)


def telegram(db: Any, tmp_path: Any, chat: PydanticAIClient, **settings: Any) -> Any:
    # Backoff in tens of milliseconds, so the job's retries take a test's time, not a customer's.
    return live_telegram(
        db,
        tmp_path,
        account_id=ACCOUNT,
        webhook_secret=SECRET,
        chat=chat,
        **{"job_backoff_s": 0.05, "job_max_attempts": 3, "metrics_token": METRICS_TOKEN, "workers": 2, **settings},
    )


async def customer_writes(live: Live) -> None:
    response = await live.http.post(
        f"/webhooks/telegram/{ACCOUNT}",
        content=read_fixture("telegram", "message__text.json"),
        headers={"Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET},
    )
    assert response.status_code == 200


def texts_sent(live: Live) -> list[str]:
    """What the customer received: every sendMessage call's text."""
    return [c.body["text"] for c in live.platform.sent() if c.endpoint == "sendMessage"]


async def turn_jobs(live: Live) -> list[Job]:
    async with live.runtime.db.read() as session:
        return list(await session.scalars(select(Job).where(Job.kind == "process_conversation")))


async def turns_counted(live: Live) -> dict[str, float]:
    """``frontdesk_turns_total`` by outcome, as /metrics reports it (to the metrics token's bearer)."""
    page = (await live.http.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})).text
    counted: dict[str, float] = {}
    for family in text_string_to_metric_families(page):
        for sample in family.samples:
            if sample.name == "frontdesk_turns_total" and sample.value:
                counted[sample.labels["outcome"]] = counted.get(sample.labels["outcome"], 0) + sample.value
    return counted


async def run(db: Any, tmp_path: Any, chat: PydanticAIClient, check: Callable[[Live], Any], **settings: Any) -> None:
    async with telegram(db, tmp_path, chat, **settings) as live:  # the app runs the workers
        await customer_writes(live)
        await wait_idle(db, timeout_s=20, settle_s=0.5)
        await check(live)


async def test_a_rate_limited_model_is_asked_again_later_and_the_customer_gets_one_real_reply(db, tmp_path):
    chat, calls = failing_model(http_error(429, **{"retry-after": "0"}), http_error(503))

    async def check(live: Live) -> None:
        assert texts_sent(live) == [REAL_REPLY]
        assert calls == [3]
        (trace,) = await traces(db)  # the failed attempts left no turn behind: only the real one
        assert trace.outcome == "replied"
        (job,) = await turn_jobs(live)
        assert (job.status, job.attempts) == ("done", 3)
        assert "HTTP 503" in (job.last_error or "")  # the operator can see why it took a while
        # The two failed attempts are counted as deferred turns, not as aborted ones.
        assert await turns_counted(live) == {"deferred": 2, "replied": 1}

    await run(db, tmp_path, chat, check)


async def test_a_model_that_stays_down_gets_the_hold_message_once_after_the_last_attempt(db, tmp_path):
    chat, calls = failing_model(*[http_error(500)] * 10)

    async def check(live: Live) -> None:
        assert texts_sent(live) == [FALLBACK_TEXTS["en"]]
        assert calls == [3]  # job_max_attempts, not one request more
        (trace,) = await traces(db)
        assert trace.outcome == "fallback"
        assert "model unavailable on attempt 3 of 3" in trace.detail
        assert "HTTP 500" in trace.detail
        (receipt,) = await receipts(db)
        assert receipt.status == "sent"
        async with db.read() as session:
            sent = await session.get(Message, receipt.message_id)
        assert sent is not None
        assert sent.turn_id == trace.id
        (job,) = await turn_jobs(live)
        assert (job.status, job.attempts) == ("done", 3)

    await run(db, tmp_path, chat, check)


async def test_a_burst_that_has_waited_its_outage_budget_gets_the_hold_message_without_more_attempts(db, tmp_path):
    # A vendor that hangs costs every attempt its timeouts: past the budget, the next failure ends
    # the wait even though the job has attempts left (5 here). The first attempt is always retried:
    # the wait also counts the quiet window and the queue, which alone must not cost the retry.
    chat, calls = failing_model(*[http_error(503)] * 10)

    async def check(live: Live) -> None:
        assert texts_sent(live) == [FALLBACK_TEXTS["en"]]
        assert calls == [2]
        (trace,) = await traces(db)
        assert trace.outcome == "fallback"
        assert "model unavailable on attempt 2 of 5 (the customer has waited" in trace.detail
        assert await turns_counted(live) == {"deferred": 1, "fallback": 1}

    # Shorter than the quiet window the message always waits first.
    await run(db, tmp_path, chat, check, model_outage_budget_s=0.01, job_max_attempts=5)


async def test_a_timeout_is_an_outage_too(db, tmp_path):
    chat, calls = failing_model(TimeoutError("read timed out"))

    async def check(live: Live) -> None:
        assert texts_sent(live) == [REAL_REPLY]
        assert calls == [2]

    await run(db, tmp_path, chat, check)


async def test_an_unreadable_answer_gets_the_hold_message_at_once(db, tmp_path):
    # Asking again would get the same garbage: no retry, the trace names the failure.
    chat, calls = failing_model(UnexpectedModelBehavior("Received empty model response"))

    async def check(live: Live) -> None:
        assert texts_sent(live) == [FALLBACK_TEXTS["en"]]
        assert calls == [1]
        (trace,) = await traces(db)
        assert trace.outcome == "fallback"
        assert "empty model response" in trace.detail

    await run(db, tmp_path, chat, check)


async def test_a_failure_after_the_first_step_is_not_retried_as_a_whole_turn(db, tmp_path):
    # Step 1 asks for a tool (here one the turn does not offer, so it is answered with an error);
    # a tool may have acted by step 2, so running the turn again could act twice: hold message.
    calls = [0]

    async def respond(messages: Any, info: Any) -> ModelResponse:
        calls[0] += 1
        if calls[0] == 1:
            return ModelResponse(parts=[ToolCallPart("not_a_tool_of_this_turn", {})])
        raise http_error(502)

    chat = PydanticAIClient(FunctionModel(respond), "function:flaky", timeout_s=10)

    async def check(live: Live) -> None:
        assert texts_sent(live) == [FALLBACK_TEXTS["en"]]
        assert calls == [2]
        (trace,) = await traces(db)
        assert "HTTP 502" in trace.detail
        (job,) = await turn_jobs(live)
        assert job.attempts == 1

    await run(db, tmp_path, chat, check)


async def test_a_vendors_retry_after_delays_the_next_attempt(db, tmp_path):
    chat, calls = failing_model(http_error(429, **{"retry-after": "30"}))

    async with telegram(db, tmp_path, chat) as live:
        await customer_writes(live)
        await live.platform.wait_for(lambda c: calls[0] == 1, timeout_s=10)
        await wait_for_job(live, lambda job: job.status == "queued" and job.attempts == 1)
        (job,) = await turn_jobs(live)
        wait_s = (job.run_after - live.runtime.clock.now()).total_seconds()
        assert 20 < wait_s <= 30  # the vendor's 30 s, not the 0.05 s backoff
        assert texts_sent(live) == []  # nothing said while waiting


async def wait_for_job(live: Live, predicate: Callable[[Job], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(predicate(job) for job in await turn_jobs(live)):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no turn job matched; jobs: {[(j.status, j.attempts) for j in await turn_jobs(live)]}")
