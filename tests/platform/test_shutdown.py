"""Graceful shutdown: an instance told to stop takes no new jobs, lets its running turn finish
within the grace period, and otherwise hands the turn back (job queued, lease released) so another
instance answers it at once instead of after the lease expires. In process on both backends, then
with real ``frontdesk serve`` processes and SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from instances_kit import (
    Outcome,
    base_env,
    conversation_of,
    echo_script,
    every_process_exits,
    fresh_database,
    http_client,
    instances,
    lease_holder,
    needs_postgres,
    outcome,
    pid_of_owner,
    send_burst,
    wait_for,
)
from instances_kit import wait_idle as wait_idle_db
from pydantic_ai import ModelResponse
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import ModelRequestParameters
from sqlalchemy import select

from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Conversation, Job
from frontdesk.platform.workers import run_to_completion
from frontdesk.runtime import Runtime
from harness import make_runtime, message, reply, reply_texts, script_client, traces, wait_idle

LONG_LEASE = {"lease_ttl_s": 60.0, "job_lease_s": 60.0}  # an expiry would take a minute: too long to pass by luck


class SlowModel:
    """The echo script behind a delay, telling the test when the turn is inside the model call."""

    def __init__(self, delay_s: float) -> None:
        self._inner = script_client({"name": "echo", "default": [reply("got: {user_text}")]})
        self._delay_s = delay_s
        self.entered = asyncio.Event()

    @property
    def name(self) -> str:
        return "slow-echo"

    async def request(self, messages: Sequence[ModelMessage], params: ModelRequestParameters) -> ModelResponse:
        self.entered.set()
        await asyncio.sleep(self._delay_s)
        return await self._inner.request(messages, params)


async def _turn_in_flight(db: Database, delay_s: float) -> tuple[Runtime, SlowModel, str]:
    model = SlowModel(delay_s)
    runtime, accounts = await make_runtime(db, model, **LONG_LEASE)
    runtime.runner.start()
    ingested = await runtime.ingestor.ingest(message(accounts.webchat_id, "hello"))
    await asyncio.wait_for(model.entered.wait(), 10)
    return runtime, model, ingested.conversation_id


async def test_a_turn_outliving_the_grace_is_handed_back_and_another_instance_answers_it_now(db: Database) -> None:
    first, _model, conversation_id = await _turn_in_flight(db, delay_s=30)
    t = time.monotonic()
    await asyncio.wait_for(first.runner.stop(grace_s=0.2), 10)
    assert time.monotonic() - t < 3

    async with db.read() as session:
        job = await session.scalar(select(Job).where(Job.kind == "process_conversation"))
        conversation = await session.get(Conversation, conversation_id)
    assert job is not None
    assert conversation is not None
    assert (job.status, job.locked_by, job.attempts) == ("queued", None, 0)  # back in the queue, attempt not spent
    assert conversation.lock_owner is None  # lease released, not left to expire
    assert await traces(db) == []

    second, _ = await make_runtime(db, script_client({"name": "echo", "default": [reply("got: {user_text}")]}))
    second.runner.start()
    try:
        await wait_idle(db, timeout_s=10)
    finally:
        await second.runner.stop()
    assert await reply_texts(db) == ["got: hello"]
    assert len(await traces(db)) == 1


async def test_a_turn_that_fits_in_the_grace_is_finished_by_the_stopping_instance(db: Database) -> None:
    runtime, _model, _conversation_id = await _turn_in_flight(db, delay_s=0.5)
    await asyncio.wait_for(runtime.runner.stop(grace_s=10), 15)
    assert await reply_texts(db) == ["got: hello"]
    async with db.read() as session:
        assert list(await session.scalars(select(Job.status))) == ["done"]


async def test_a_stopping_runner_claims_nothing_new(db: Database) -> None:
    runtime, accounts = await make_runtime(db, script_client({"name": "echo", "default": [reply("hi")]}))
    runtime.runner.start()
    await runtime.runner.stop()
    await runtime.ingestor.ingest(message(accounts.webchat_id, "after the stop"))
    await asyncio.sleep(0.5)
    async with db.read() as session:
        assert list(await session.scalars(select(Job.status))) == ["queued"]


# -- real processes: SIGTERM in the middle of a turn


async def _sigterm_the_lease_holder(tmp_path: Path, grace_s: float) -> tuple[set[int], float, float, str, Outcome]:
    """Two instances; a message; SIGTERM to the one whose turn is in its (4 s) model call.
    Returns the terminated instance's pids (its HTTP and worker processes), seconds until it
    exited, seconds until the reply was stored, the lease owner that wrote the turn, and the
    stored outcome."""
    async with fresh_database(tmp_path) as url:
        env = base_env(
            tmp_path,
            url,
            model_chat=echo_script(tmp_path, delay_ms=4000),
            quiet_window_s=0.3,
            workers=2,
            poll_interval_s=0.2,
            sweeper_interval_s=1.0,
            shutdown_grace_s=grace_s,
            **LONG_LEASE,
        )
        db = Database.from_url(url, pool_size=2)
        try:
            async with instances(2, env, tmp_path) as servers, http_client() as http:
                session = "shutdown-session-0001"
                assert await send_burst(http, [servers[0].base], session, ["t.m0"]) == [202]
                conversation_id = await conversation_of(db, session)
                assert conversation_id is not None

                async def turn_holder() -> str | None:
                    first = await lease_holder(db, conversation_id)
                    await asyncio.sleep(0.4)
                    return first if first is not None and first == await lease_holder(db, conversation_id) else None

                owner = await wait_for(turn_holder, 15, "a turn holding the lease")
                (victim,) = [s for s in servers if pid_of_owner(owner) in s.family()]
                family = victim.family()
                victim.signal(signal.SIGTERM)  # to its HTTP process, which stops its worker processes
                t = time.monotonic()
                exit_task = asyncio.create_task(victim.wait_exit(40))
                await wait_idle_db(db, timeout_s=40)
                replied_after_s = time.monotonic() - t
                assert await exit_task == 0, victim.log()[-3000:]
                exited_after_s = time.monotonic() - t
                stored = await outcome(db, conversation_id)
                (worker,) = stored.turns.values()
                await every_process_exits(family)  # none left behind
                return family, exited_after_s, replied_after_s, worker, stored
        finally:
            await db.dispose()


@needs_postgres
async def test_sigterm_with_a_short_grace_hands_the_turn_to_another_instance_without_waiting_for_the_lease(
    tmp_path: Path,
) -> None:
    victim, exited_after_s, replied_after_s, worker, stored = await _sigterm_the_lease_holder(tmp_path, grace_s=0.5)
    assert pid_of_owner(worker) not in victim  # the other instance ran the turn
    assert stored.replies == {next(iter(stored.turns)): ["got: t.m0"]}
    # Handed over at once: the other instance's 4 s model call plus a poll, far from the 60 s lease.
    assert replied_after_s < 20, replied_after_s
    assert exited_after_s < 15, exited_after_s


@needs_postgres
async def test_sigterm_with_a_long_grace_lets_the_same_instance_finish_its_turn(tmp_path: Path) -> None:
    victim, exited_after_s, _replied_after_s, worker, stored = await _sigterm_the_lease_holder(tmp_path, grace_s=30)
    assert pid_of_owner(worker) in victim
    assert stored.replies == {next(iter(stored.turns)): ["got: t.m0"]}
    assert exited_after_s < 20, exited_after_s  # it left once the turn was done, not at the end of the grace


async def test_a_commit_in_progress_is_finished_before_the_cancel_takes_effect() -> None:
    """``run_to_completion``: what the assembler wraps its commit-and-deliver in."""
    steps: list[str] = []

    async def commit_and_deliver() -> str:
        steps.append("committed")
        await asyncio.sleep(0.3)
        steps.append("delivered")
        return "sent"

    turn = asyncio.create_task(run_to_completion(commit_and_deliver()))
    await asyncio.sleep(0.1)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert steps == ["committed", "delivered"]  # the cancel waited for the delivery

    assert await run_to_completion(commit_and_deliver()) == "sent"  # uninterrupted: just the result
