"""The turn store's contract: the in-memory store the assembler's unit tests run on keeps the same
rules as the database's, on SQLite and PostgreSQL. Each test runs on all three."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import pytest

from conftest import BACKENDS, backend_url, opened_database
from frontdesk.ingestion.quiet_window import Defer, Ready
from frontdesk.output.blocks import text_blocks
from frontdesk.platform.clock import ManualClock
from frontdesk.platform.ids import new_id
from frontdesk.platform.store.schema import Conversation, Task
from frontdesk.reasoning.agent import AgentRun
from frontdesk.reasoning.loop import GenerationResult, Outcome
from frontdesk.turns.batch import Batch
from frontdesk.turns.commit import Committed, LeaseLost
from frontdesk.turns.memory import InMemoryTurnStore
from frontdesk.turns.ports import RENEW, TAKE, Found, TurnStore
from frontdesk.turns.record import TurnRecord
from harness import make_runtime, message, reply


class World(Protocol):
    """One conversation, its store and clock, and what happens to it from outside a turn."""

    clock: ManualClock
    store: TurnStore
    ttl_s: float
    conversation: str

    async def receive(self, text: str, *, pending: bool = False) -> int: ...
    async def media_ready(self, message_id: int) -> None: ...
    async def take_over(self, *, handoff_task: bool = False) -> None: ...


class MemoryWorld:
    def __init__(self) -> None:
        self.clock = ManualClock()
        self.memory = InMemoryTurnStore(self.clock)
        self.store: TurnStore = self.memory
        self.ttl_s = self.memory.lease_ttl_s
        self.conversation = self.memory.open_conversation()

    async def receive(self, text: str, *, pending: bool = False) -> int:
        return self.memory.receive(self.conversation, text, pending=pending)

    async def media_ready(self, message_id: int) -> None:
        self.memory.media_ready(message_id)

    async def take_over(self, *, handoff_task: bool = False) -> None:
        self.memory.take_over(self.conversation, handoff_task=handoff_task)


class DatabaseWorld:
    """The service's store, arranged through the real ingest."""

    def __init__(self, runtime: Any, account: str, clock: ManualClock) -> None:
        self.runtime, self.account, self.clock = runtime, account, clock
        self.store: TurnStore = runtime.assembler._store
        self.ttl_s = runtime.settings.lease_ttl_s
        self.conversation = ""

    async def receive(self, text: str, *, pending: bool = False) -> int:
        extra = {"content_type": "voice", "status": "pending"} if pending else {}
        ingested = await self.runtime.ingestor.ingest(message(self.account, text, **extra))
        self.conversation = ingested.conversation_id
        return int(ingested.message_id)

    async def media_ready(self, message_id: int) -> None:
        await self.runtime.ingestor.mark_ready(message_id, "a transcript")

    async def take_over(self, *, handoff_task: bool = False) -> None:
        now = self.clock.now()
        async with self.runtime.db.transaction() as session:
            conversation = await session.get(Conversation, self.conversation)
            conversation.ai_enabled = False
            if handoff_task:
                session.add(
                    Task(
                        id=new_id("task"),
                        tenant_id=conversation.tenant_id,
                        conversation_id=self.conversation,
                        kind="handoff",
                        priority="normal",
                        status="open",
                        title="customer asked for a person",
                        details={},
                        created_at=now,
                        updated_at=now,
                    )
                )


@pytest.fixture(params=["memory", *BACKENDS])
def database_url(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path, postgres_database: str | None
) -> str:
    """The store under test: in memory, or the database (the shared ``db`` fixture's)."""
    if request.param == "memory":
        return "memory"
    return backend_url(request.param, tmp_path, sqlite_template, postgres_database)


@pytest.fixture
async def world(database_url: str) -> AsyncIterator[World]:
    if database_url == "memory":
        yield MemoryWorld()
        return
    async with opened_database(database_url) as db:
        clock = ManualClock()
        runtime, accounts = await make_runtime(db, {"name": "x", "default": [reply("ok")]}, clock=clock)
        yield DatabaseWorld(runtime, accounts.terminal_id, clock)


def ready(rows: Any, thread: Any, settled: datetime) -> Ready:
    return Ready(wait_ms=0, pending_media=0)


def later(rows: Any, thread: Any, settled: datetime) -> Defer:
    return Defer(1.0)


def answer(found: Found, worker: str, world: World, text: str = "ok") -> TurnRecord:
    assert found.thread is not None
    batch = Batch(found.thread, found.rows, {}, found.history)
    run = AgentRun(GenerationResult(Outcome.REPLIED, text_blocks(text), steps=1))
    return TurnRecord.of(run, batch, worker=worker, started_at=world.clock.now(), model="test")


async def turn(world: World, worker: str, text: str = "ok") -> Committed:
    found = await world.store.collect(world.conversation, worker, TAKE, ready)
    assert found is not None
    assert found.thread is not None
    return await world.store.commit(answer(found, worker, world, text), found.thread.target)


def no_latency(status: str) -> dict[str, Any]:
    return {"delivery_status": status}


async def test_the_lease_has_one_holder_until_it_is_let_go(world: World) -> None:
    await world.receive("hi")
    assert await world.store.collect(world.conversation, "a", TAKE, ready) is not None
    assert await world.store.collect(world.conversation, "b", TAKE, ready) is None
    assert await world.store.collect(world.conversation, "b", RENEW, ready) is None
    assert await world.store.collect(world.conversation, "a", RENEW, ready) is not None
    await world.store.release(world.conversation, "b")  # not b's to let go
    assert await world.store.collect(world.conversation, "b", TAKE, ready) is None
    await world.store.release(world.conversation, "a")
    assert await world.store.collect(world.conversation, "b", TAKE, ready) is not None


async def test_a_lease_that_ran_out_is_taken_over_and_its_old_holder_commits_nothing(world: World) -> None:
    await world.receive("anyone there?")
    stalled = await world.store.collect(world.conversation, "a", TAKE, ready)
    assert stalled is not None
    assert stalled.thread is not None
    world.clock.advance(world.ttl_s + 1)
    assert await world.store.collect(world.conversation, "b", TAKE, ready) is not None

    with pytest.raises(LeaseLost):
        await world.store.commit(answer(stalled, "a", world), stalled.thread.target)
    assert await world.store.waiting(world.conversation)  # still b's to answer


async def test_a_batch_another_turn_answered_is_not_committed_twice(world: World) -> None:
    await world.receive("hi")
    found = await world.store.collect(world.conversation, "a", TAKE, ready)
    assert found is not None
    assert found.thread is not None
    await world.store.commit(answer(found, "a", world), found.thread.target)

    with pytest.raises(LeaseLost):
        await world.store.commit(answer(found, "a", world, "again"), found.thread.target)
    history = await world.store.history(world.conversation)
    assert [(m.role, m.text) for m in history] == [("user", "hi"), ("assistant", "ok")]


async def test_only_a_ready_batch_is_read_with_its_history(world: World) -> None:
    await world.receive("first")
    committed = await turn(world, "a", "re: first")
    await world.store.deliver(committed, world.conversation, "a", no_latency)
    world.clock.advance(1)
    await world.receive("second")

    deferred = await world.store.collect(world.conversation, "a", TAKE, later)
    assert deferred is not None
    assert (deferred.ready, deferred.history, [r.content for r in deferred.rows]) == (Defer(1.0), (), ["second"])
    found = await world.store.collect(world.conversation, "a", RENEW, ready)
    assert found is not None
    assert [(m.role, m.text) for m in found.history] == [("user", "first"), ("assistant", "re: first")]


async def test_the_delivery_lets_the_lease_go_only_when_nothing_waits(world: World) -> None:
    await world.receive("first")
    committed = await turn(world, "a")
    await world.receive("second")  # arrived while the reply was going out
    assert not await world.store.deliver(committed, world.conversation, "a", no_latency)
    assert await world.store.collect(world.conversation, "b", TAKE, ready) is None  # still a's

    committed = await turn(world, "a")
    assert await world.store.deliver(committed, world.conversation, "a", no_latency)
    assert await world.store.collect(world.conversation, "b", TAKE, ready) is not None
    assert not await world.store.waiting(world.conversation)


async def test_a_thread_a_person_has_consumes_its_messages_and_knows_its_hand_off(world: World) -> None:
    await world.receive("a person please")
    since = world.clock.now()
    assert not await world.store.handed_off_since(world.conversation, since)
    world.clock.advance(1)
    await world.take_over(handoff_task=True)
    assert await world.store.handed_off_since(world.conversation, since)
    assert not await world.store.handed_off_since(world.conversation, world.clock.now().replace(year=2100))

    found = await world.store.collect(world.conversation, "a", TAKE, ready)
    assert found is not None
    assert found.thread is not None
    assert not found.thread.conversation.ai_enabled
    await world.store.mark_seen_without_reply(world.conversation)
    assert not await world.store.waiting(world.conversation)


async def test_a_reply_committed_after_a_person_took_over_is_kept_but_not_staged(world: World) -> None:
    await world.receive("hello")
    found = await world.store.collect(world.conversation, "a", TAKE, ready)
    assert found is not None
    assert found.thread is not None
    await world.take_over()

    committed = await world.store.commit(answer(found, "a", world), found.thread.target)
    assert (committed.reply.outcome, committed.staged) == (Outcome.SUPPRESSED, None)
    assert not await world.store.waiting(world.conversation)


async def test_media_that_landed_meanwhile_is_opened_again_after_its_placeholder_is_answered(world: World) -> None:
    voice = await world.receive("(voice message)", pending=True)
    found = await world.store.collect(world.conversation, "a", TAKE, ready)
    assert found is not None
    assert found.thread is not None
    assert not await world.store.media_landed((voice,))
    await world.media_ready(voice)
    assert await world.store.media_landed((voice,))

    await world.store.commit(answer(found, "a", world), found.thread.target)
    assert await world.store.waiting(world.conversation)  # its own turn now
