"""A flood of customers, from as many addresses and sessions as an attacker likes, cannot run up a
tenant's model bill past its budget: past it, customers get the pack's hold message, each thread
a reply task, and the owner hears of it once (issue 20, finding 4's second half)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from console_kit import ShiftedClock
from pydantic_ai import ModelResponse, ToolCallPart
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.models.function import FunctionModel
from sqlalchemy import select

from frontdesk.demo import DEMO_TENANT, seed_demo
from frontdesk.humans.console.operators import add_operator
from frontdesk.humans.model_budget import BUDGET_TITLES
from frontdesk.output.transcript import message_text
from frontdesk.packs.catalog import FALLBACK_TEXTS
from frontdesk.platform.clock import ManualClock
from frontdesk.platform.model_budget import Claimed, ModelBudget, Spent, window_of
from frontdesk.platform.models.gateway import ModelGateway, PydanticAIClient
from frontdesk.platform.store.schema import Notification, Task
from frontdesk.platform.store.schema_notifications import NotificationEvent
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from harness import FAST, message, replies

ANSWER = "Hello! What would you like to print?"


class CountingModel:
    """A chat model that answers every request (or fails the first ``failing`` ones, as a vendor's
    503 does) and counts what it was asked: each request is money on a real model."""

    def __init__(self, failing: int = 0) -> None:
        self.requests = 0
        self._failing = failing

    async def _respond(self, messages: Any, info: Any) -> ModelResponse:
        self.requests += 1
        if self.requests <= self._failing:
            raise ModelHTTPError(503, "vendor", body={"error": "overloaded"})
        return ModelResponse(parts=[ToolCallPart("reply", {"blocks": [{"type": "text", "text": ANSWER}]})])

    def client(self) -> PydanticAIClient:
        return PydanticAIClient(FunctionModel(self._respond), "function:counting", timeout_s=10)


@asynccontextmanager
async def shop(db: Any, model: CountingModel, **settings: Any) -> AsyncIterator[tuple[Runtime, str, ShiftedClock]]:
    clock = ShiftedClock()
    runtime = Runtime.build(
        Settings(**{**FAST, "quiet_window_s": 0, "job_backoff_s": 0.05, **settings}),
        gateway=ModelGateway.with_clients({"chat": model.client()}),
        db=db,
        clock=clock,
    )
    accounts = await seed_demo(db, clock, runtime.channel_deps.media)
    yield runtime, accounts.webchat_id, clock


async def customers_write(runtime: Runtime, account: str, sessions: list[str], text: str) -> list[str]:
    ingested = await asyncio.gather(*(runtime.ingestor.ingest(message(account, text, session=s)) for s in sessions))
    return [i.conversation_id for i in ingested]


async def replies_by_conversation(db: Any) -> dict[str, list[str]]:
    """What each customer read, one string per reply."""
    found: dict[str, list[str]] = {}
    for reply in await replies(db):
        found.setdefault(reply.conversation_id, []).append(message_text(reply))
    return found


async def test_past_the_hourly_budget_the_model_is_not_asked_and_the_owner_is_told_once(db):
    model = CountingModel()
    async with shop(db, model, model_turns_per_hour=3, model_turns_per_day=0) as (runtime, account, clock):
        owner = await add_operator(
            db,
            tenant_id=DEMO_TENANT,
            email="owner@shop.example",
            name="Ana",
            role="owner",
            password="quiet-harbor-lantern-92",
            language="en",
            now=clock.now(),
        )
        sessions = [f"flood-session-{n:04d}-abcdef" for n in range(8)]
        conversations = await customers_write(runtime, account, sessions, "how much are business cards?")
        await runtime.runner.run_until_idle()

        assert model.requests == 3  # before the budget: 8, one per customer, each billed
        replies = await replies_by_conversation(db)
        assert sorted(len(replies[c]) for c in conversations) == [1] * 8  # every customer was answered once
        answered = [c for c in conversations if replies[c] == [ANSWER]]
        held = [c for c in conversations if replies[c] == [FALLBACK_TEXTS["en"]]]
        assert (len(answered), len(held)) == (3, 5)

        async with db.read() as session:
            tasks = list(await session.scalars(select(Task).where(Task.kind == "needs_reply")))
            notices = list(await session.scalars(select(Notification).order_by(Notification.id)))
            events = list(await session.scalars(select(NotificationEvent)))
        assert sorted(t.conversation_id for t in tasks) == sorted(held)  # a person owes each held customer
        assert {t.title for t in tasks} == {BUDGET_TITLES["en"]}
        assert [n.kind for n in notices] == ["model_budget_spent"]  # one notice, not one per thread
        assert "3 turns this hour" in notices[0].text
        assert events[0].recipients == [{"operator_id": owner.id}]

        # The next hour, the same customers are answered by the model again.
        clock.offset += timedelta(hours=1)
        await customers_write(runtime, account, [sessions[n] for n in range(5)], "and flyers?")
        await runtime.runner.run_until_idle()
        assert model.requests == 6  # three more, then the new hour's budget is spent too
        async with db.read() as session:
            kinds = list(await session.scalars(select(Notification.kind)))
        assert kinds == ["model_budget_spent", "model_budget_spent"]  # one for each hour


async def test_a_turn_the_model_failed_is_not_charged_and_its_retry_is_answered(db):
    model = CountingModel(failing=1)
    async with shop(db, model, model_turns_per_hour=1, model_turns_per_day=1) as (runtime, account, _):
        [conversation] = await customers_write(runtime, account, ["retry-session-0001-abcd"], "hello there")
        await runtime.runner.run_until_idle()
    assert model.requests == 2  # a 503, then the retry's answer
    assert (await replies_by_conversation(db))[conversation] == [ANSWER]  # not the budget's hold


async def test_parallel_turns_never_get_past_the_limit(db):
    clock = ManualClock()
    budget = ModelBudget(db, clock, per_hour=7, per_day=50)
    zone = ZoneInfo("Asia/Ho_Chi_Minh")
    claims = await asyncio.gather(*(budget.claim("tenant-a", zone) for _ in range(40)))
    assert sum(isinstance(c, Claimed) for c in claims) == 7
    spent = [c for c in claims if isinstance(c, Spent)]
    assert {(s.period, s.limit) for s in spent} == {("hour", 7)}
    assert isinstance(await budget.claim("tenant-b", zone), Claimed)  # each tenant its own budget

    await budget.give_back(next(c for c in claims if isinstance(c, Claimed)))
    assert isinstance(await budget.claim("tenant-a", zone), Claimed)  # the unit given back is usable
    assert isinstance(await budget.claim("tenant-a", zone), Spent)


async def test_a_turn_refused_by_one_window_is_counted_in_none(db):
    """40 turns at once against 7 an hour and 10 a day: the 33 the hour refused must not have used
    up the day, so the next hour still has the day's last 3."""
    clock = ManualClock()  # 2026-01-05 16:00 in Ho Chi Minh City: the next hour is the same day
    budget = ModelBudget(db, clock, per_hour=7, per_day=10)
    zone = ZoneInfo("Asia/Ho_Chi_Minh")
    claims = await asyncio.gather(*(budget.claim("tenant-a", zone) for _ in range(40)))
    assert sum(isinstance(c, Claimed) for c in claims) == 7

    clock.advance(3600)
    later = [await budget.claim("tenant-a", zone) for _ in range(4)]
    assert [type(c).__name__ for c in later] == ["Claimed", "Claimed", "Claimed", "Spent"]
    spent = later[-1]
    assert isinstance(spent, Spent)
    assert (spent.period, spent.limit) == ("day", 10)


async def test_the_day_is_the_tenants_own_day(db):
    clock = ManualClock()
    budget = ModelBudget(db, clock, per_hour=0, per_day=2)
    zone = ZoneInfo("Asia/Ho_Chi_Minh")  # UTC+7: the owner's midnight is 17:00 UTC
    local_now = clock.now().astimezone(zone)
    tomorrow = datetime.combine(local_now.date() + timedelta(days=1), datetime.min.time(), tzinfo=zone)
    for _ in range(2):
        assert isinstance(await budget.claim("tenant-a", zone), Claimed)
    spent = await budget.claim("tenant-a", zone)
    assert isinstance(spent, Spent)
    assert spent.window.end == tomorrow.astimezone(UTC)
    clock.set(tomorrow)  # the owner's midnight
    assert isinstance(await budget.claim("tenant-a", zone), Claimed)


def test_windows_follow_the_clock_across_a_daylight_saving_change():
    zone = ZoneInfo("Europe/Madrid")
    day = window_of("day", datetime(2026, 3, 29, 12, tzinfo=UTC), zone)  # clocks go forward that night
    assert day.end - day.start == timedelta(hours=23)
    hour = window_of("hour", datetime(2026, 3, 29, 12, 40, tzinfo=UTC), zone)
    assert (hour.start, hour.end) == (datetime(2026, 3, 29, 12, tzinfo=UTC), datetime(2026, 3, 29, 13, tzinfo=UTC))
