"""``JobRunner.run_until_idle``: tests and tools drive a runtime through time with it, running
every queued job here and moving a ``ManualClock`` to each delayed one."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from frontdesk.platform.clock import ManualClock
from frontdesk.platform.jobs import JobPolicy, JobQueue
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Job
from frontdesk.platform.workers import JobRunner

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def runner_for(queue: JobQueue, handlers) -> JobRunner:
    return JobRunner(
        queue, handlers, concurrency=1, poll_interval_s=30.0, sweeps=[], sweep_interval_s=3600.0, identity="test:1:x"
    )


async def enqueue(queue: JobQueue, db: Database, kind: str, payload, **kwargs) -> None:
    async with db.transaction() as session:
        await queue.enqueue(session, kind, payload, **kwargs)


async def jobs(db: Database) -> list[Job]:
    async with db.read() as session:
        return list(await session.scalars(select(Job).order_by(Job.id)))


async def test_run_until_idle_runs_each_job_at_its_time_by_moving_a_manual_clock(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy())
    ran: list[tuple[str, float]] = []

    async def step(job):
        ran.append((job.payload["name"], clock.monotonic()))
        if job.payload["name"] == "first":  # a job that queues another for later, as a turn does
            await enqueue(queue, db, "step", {"name": "follow-up"}, delay_s=30)

    await enqueue(queue, db, "step", {"name": "first"}, delay_s=5)
    await enqueue(queue, db, "step", {"name": "later"}, delay_s=60)

    assert await runner_for(queue, {"step": step}).run_until_idle() == 3
    assert ran == [("first", 5.0), ("follow-up", 35.0), ("later", 60.0)]
    assert {j.status for j in await jobs(db)} == {"done"}


async def test_run_until_idle_refuses_to_run_for_ever(db):
    queue = JobQueue(db, ManualClock(T0), JobPolicy())

    async def again(job):  # every run queues the next: it would never be idle
        await enqueue(queue, db, "again", {"n": job.payload["n"] + 1})

    await enqueue(queue, db, "again", {"n": 0})
    with pytest.raises(RuntimeError, match="still busy after 20 jobs"):
        await runner_for(queue, {"again": again}).run_until_idle(max_jobs=20)
