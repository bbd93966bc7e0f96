"""The job queue and its workers: every job runs once, failures back off then die, dead processes'
jobs come back, and the runner starts and stops cleanly. Real database, both backends."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from frontdesk.platform.clock import ManualClock, SystemClock
from frontdesk.platform.jobs import JobPolicy, JobQueue
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Job
from frontdesk.platform.workers import JobRunner
from harness import count

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def runner_for(queue: JobQueue, handlers, *, concurrency: int = 1, poll_interval_s: float = 30.0) -> JobRunner:
    return JobRunner(
        queue,
        handlers,
        concurrency=concurrency,
        poll_interval_s=poll_interval_s,
        sweeps=[],
        sweep_interval_s=3600.0,
        identity="test-host:1:abc",
    )


async def enqueue(queue: JobQueue, db: Database, kind: str, payload=None, **kwargs) -> bool:
    async with db.transaction() as session:
        added = await queue.enqueue(session, kind, payload or {}, **kwargs)
    queue.notify()
    return added


async def jobs(db: Database) -> list[Job]:
    async with db.transaction() as session:
        return list(await session.scalars(select(Job).order_by(Job.id)))


async def only_job(db: Database) -> Job:
    (job,) = await jobs(db)
    return job


async def until(predicate, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not await predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s}s")
        await asyncio.sleep(0.02)


# -- claiming --------------------------------------------------------------------------------------


async def test_eight_concurrent_workers_claim_each_of_100_jobs_exactly_once(db, database_url):
    queue = JobQueue(db, ManualClock(T0), JobPolicy())
    async with db.transaction() as session:
        for n in range(100):
            await queue.enqueue(session, "work", {"n": n})
    # Eight workers, each with its own engine, as eight processes would have.
    workers = [Database.from_url(database_url) for _ in range(8)]

    async def drain(worker_db: Database, name: str) -> list[int]:
        worker_queue = JobQueue(worker_db, ManualClock(T0), JobPolicy())
        claimed = []
        while (job := await worker_queue.claim(name)) is not None:
            claimed.append(job.id)
        return claimed

    try:
        results = await asyncio.gather(*(drain(w, f"worker-{i}") for i, w in enumerate(workers)))
    finally:
        for worker_db in workers:
            await worker_db.dispose()

    claims = Counter(job_id for claimed in results for job_id in claimed)
    assert len(claims) == 100
    assert set(claims.values()) == {1}
    rows = await jobs(db)
    assert {(j.status, j.attempts) for j in rows} == {("running", 1)}
    assert {j.id: j.locked_by for j in rows} == {
        job_id: f"worker-{i}" for i, claimed in enumerate(results) for job_id in claimed
    }


async def test_runner_with_eight_workers_runs_each_job_once(db):
    queue = JobQueue(db, ManualClock(T0), JobPolicy())
    ran: Counter[int] = Counter()

    async def handler(job):
        await asyncio.sleep(0.001)
        ran[job.payload["n"]] += 1

    async with db.transaction() as session:
        for n in range(100):
            await queue.enqueue(session, "work", {"n": n})
    runner = runner_for(queue, {"work": handler}, concurrency=8)
    runner.start()
    try:
        await until(lambda: _all_done(db), timeout_s=30)
    finally:
        await runner.stop()

    assert ran == Counter(range(100))
    assert {j.attempts for j in await jobs(db)} == {1}


async def _all_done(db: Database) -> bool:
    return await count(db, Job, Job.status != "done") == 0


async def test_job_not_yet_due_is_not_claimed_until_its_time(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy())
    await enqueue(queue, db, "later", delay_s=60)

    assert await queue.claim("w") is None
    clock.advance(59)
    assert await queue.claim("w") is None
    clock.advance(1)
    job = await queue.claim("w")
    assert job is not None
    assert job.kind == "later"


async def test_due_jobs_are_claimed_oldest_first(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy())
    await enqueue(queue, db, "b", delay_s=5)
    await enqueue(queue, db, "a")
    clock.advance(10)

    first, second = await queue.claim("w"), await queue.claim("w")

    assert (first.kind, second.kind) == ("a", "b")


# -- failures and retries --------------------------------------------------------------------------


async def test_failing_job_is_retried_with_exponential_backoff_then_left_dead_with_its_error(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy(max_attempts=3, backoff_s=10, lease_s=30))
    calls = []

    async def flaky(job):
        calls.append(job.attempts)
        raise ValueError(f"printer on fire (attempt {job.attempts})")

    runner = runner_for(queue, {"print": flaky})
    await enqueue(queue, db, "print", {"order": 7})

    assert await runner.run_once()
    job = await only_job(db)
    assert (job.status, job.attempts, job.run_after) == ("queued", 1, T0 + timedelta(seconds=10))
    assert job.last_error == "ValueError: printer on fire (attempt 1)"
    assert (job.locked_by, job.locked_until) == (None, None)

    clock.advance(9)
    assert not await runner.run_once()  # backing off
    clock.advance(1)
    assert await runner.run_once()
    job = await only_job(db)
    assert (job.status, job.attempts, job.run_after) == ("queued", 2, T0 + timedelta(seconds=10 + 20))

    clock.advance(20)
    assert await runner.run_once()
    job = await only_job(db)
    assert (job.status, job.attempts) == ("dead", 3)
    assert job.last_error == "ValueError: printer on fire (attempt 3)"

    clock.advance(3600)
    assert not await runner.run_once()
    assert calls == [1, 2, 3]


async def test_job_that_fails_once_then_succeeds_ends_done(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy(max_attempts=3, backoff_s=1))

    async def second_time_lucky(job):
        if job.attempts == 1:
            raise ConnectionError("platform timed out")

    runner = runner_for(queue, {"send": second_time_lucky})
    await enqueue(queue, db, "send")
    await runner.run_once()
    clock.advance(1)
    await runner.run_once()

    job = await only_job(db)
    assert (job.status, job.attempts, job.locked_by) == ("done", 2, None)
    assert job.last_error == "ConnectionError: platform timed out"  # the history stays visible


async def test_job_kind_without_a_handler_ends_dead_with_a_clear_error_and_the_worker_carries_on(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy(max_attempts=2, backoff_s=1))
    done = []

    async def known(job):
        done.append(job.kind)

    runner = runner_for(queue, {"known": known})
    await enqueue(queue, db, "mystery")
    await enqueue(queue, db, "known")

    assert await runner.run_once()
    assert await runner.run_once()
    clock.advance(1)
    assert await runner.run_once()
    assert not await runner.run_once()

    mystery, known_job = await jobs(db)
    assert (mystery.status, mystery.attempts) == ("dead", 2)
    assert mystery.last_error == "no handler for job kind 'mystery'"
    assert known_job.status == "done"
    assert done == ["known"]


async def test_background_worker_survives_a_job_kind_without_a_handler(db):
    queue = JobQueue(db, ManualClock(T0), JobPolicy(max_attempts=1))
    ran = asyncio.Event()

    async def known(job):
        ran.set()

    runner = runner_for(queue, {"known": known}, concurrency=1)
    runner.start()
    try:
        await enqueue(queue, db, "mystery")
        await enqueue(queue, db, "known")
        await asyncio.wait_for(ran.wait(), 5)
    finally:
        await runner.stop()

    statuses = {j.kind: (j.status, j.last_error) for j in await jobs(db)}
    assert statuses["mystery"] == ("dead", "no handler for job kind 'mystery'")


# -- leases ----------------------------------------------------------------------------------------


async def test_heartbeat_extends_the_lease_of_the_worker_holding_it(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy(lease_s=30))
    await enqueue(queue, db, "long")
    job = await queue.claim("w1")
    assert (await only_job(db)).locked_until == T0 + timedelta(seconds=30)

    clock.advance(20)
    assert await queue.heartbeat(job, "w1")
    assert (await only_job(db)).locked_until == T0 + timedelta(seconds=50)

    assert not await queue.heartbeat(job, "somebody-else")
    assert (await only_job(db)).locked_until == T0 + timedelta(seconds=50)


async def test_a_dead_workers_jobs_come_back_at_once_and_only_its_own(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy(lease_s=600, max_attempts=3))
    for kind in ("dead's", "neighbour's", "look-alike's"):
        await enqueue(queue, db, kind)
    await queue.claim("host_a:41:x1/0")  # "_" is a LIKE wildcard: it must not match "hostXa"
    await queue.claim("host_a:41:x10/1")  # another process whose identity starts the same
    await queue.claim("hostXa:41:x1/0")

    assert await queue.requeue_of("host_a:41:x1") == 1  # no lease has run out: nothing waited for

    dead, neighbour, look_alike = await jobs(db)
    assert (dead.status, dead.locked_by, dead.attempts) == ("queued", None, 1)  # the attempt counts
    assert dead.last_error == "abandoned by host_a:41:x1/0 (its process died)"
    assert (neighbour.status, look_alike.status) == ("running", "running")


async def test_abandoned_job_is_requeued_but_a_live_one_is_left_alone(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy(lease_s=30, max_attempts=3))
    await enqueue(queue, db, "abandoned")
    await enqueue(queue, db, "alive")
    abandoned = await queue.claim("dead-host:1/0")
    alive = await queue.claim("live-host:2/0")
    assert (abandoned.kind, alive.kind) == ("abandoned", "alive")

    clock.advance(20)
    await queue.heartbeat(alive, "live-host:2/0")
    clock.advance(11)  # past the first lease, inside the renewed one

    assert await queue.requeue_abandoned() == 1

    requeued, live = await jobs(db)
    assert (requeued.status, requeued.locked_by, requeued.locked_until) == ("queued", None, None)
    assert requeued.last_error == "abandoned by dead-host:1/0 (lease expired)"
    assert requeued.run_after == T0  # its old place in the queue
    assert (live.status, live.locked_by) == ("running", "live-host:2/0")
    assert live.last_error is None

    again = await queue.claim("new-host:3/0")
    assert (again.id, again.attempts) == (abandoned.id, 2)
    # The dead worker can no longer touch the job it lost.
    assert not await queue.heartbeat(abandoned, "dead-host:1/0")
    assert await queue.fail(abandoned, "dead-host:1/0", "late error") == "lost"
    assert (await jobs(db))[0].status == "running"


async def test_a_requeued_or_handed_back_job_is_claimed_before_work_queued_after_it(db):
    # A crashed instance's turns are answered first, not after the backlog that built up while
    # their lease ran out (bench/reliability/crash.py saw them wait 53 s against 29 s).
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy(lease_s=30))
    await enqueue(queue, db, "interrupted")
    await enqueue(queue, db, "handed-back")
    dead = await queue.claim("dead-host:1/0")
    stopping = await queue.claim("stopping-host:2/0")
    clock.advance(5)
    await enqueue(queue, db, "newer")
    clock.advance(30)  # the dead worker's lease runs out
    assert await queue.requeue_abandoned() == 2  # the stopping host's lease ran out too
    dead_again = await queue.claim("a:1/0")
    assert await queue.release(dead_again, "a:1/0")  # a shutdown hands it back
    order = [(await queue.claim(f"b:{n}/0")).kind for n in range(3)]
    assert (dead.kind, stopping.kind) == ("interrupted", "handed-back")
    assert order == ["interrupted", "handed-back", "newer"]


async def test_abandoned_job_with_no_attempts_left_is_marked_dead(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy(lease_s=30, max_attempts=1))
    await enqueue(queue, db, "fragile")
    await queue.claim("dead-host:1/0")
    clock.advance(31)

    assert await queue.requeue_abandoned() == 1

    job = await only_job(db)
    assert (job.status, job.attempts) == ("dead", 1)
    assert job.last_error == "abandoned by dead-host:1/0 (lease expired)"
    assert await queue.claim("w") is None


async def test_requeue_abandoned_does_nothing_while_leases_are_live(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy(lease_s=30))
    await enqueue(queue, db, "work")
    await queue.claim("w")
    clock.advance(29)

    assert await queue.requeue_abandoned() == 0
    assert (await only_job(db)).status == "running"


# -- coalescing ------------------------------------------------------------------------------------


async def test_coalesced_enqueue_adds_one_job_while_one_is_queued_and_a_new_one_once_it_runs(db):
    queue = JobQueue(db, ManualClock(T0), JobPolicy())

    async with db.transaction() as session:
        added = [await queue.enqueue(session, "process", {"c": 1}, key="conv-1", coalesce=True) for _ in range(3)]
    assert added == [True, False, False]
    assert await enqueue(queue, db, "process", {"c": 1}, key="conv-1", coalesce=True) is False
    assert await count(db, Job) == 1
    # Another key is independent.
    assert await enqueue(queue, db, "process", {"c": 2}, key="conv-2", coalesce=True) is True

    first = await queue.claim("w")
    assert first.key == "conv-1"
    # Running jobs may already have read the conversation: new work needs a new job.
    assert await enqueue(queue, db, "process", {"c": 1}, key="conv-1", coalesce=True) is True
    assert await enqueue(queue, db, "process", {"c": 1}, key="conv-1", coalesce=True) is False

    rows = [(j.key, j.status) for j in await jobs(db)]
    assert rows == [("conv-1", "running"), ("conv-2", "queued"), ("conv-1", "queued")]
    assert await queue.has_pending("conv-1")
    assert not await queue.has_pending("conv-3")


async def test_coalesced_enqueue_moves_the_waiting_job_up_but_never_back(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy())
    assert await enqueue(queue, db, "process", key="conv-1", coalesce=True, delay_s=60)

    assert not await enqueue(queue, db, "process", key="conv-1", coalesce=True, delay_s=90)
    assert (await only_job(db)).run_after == T0 + timedelta(seconds=60)
    assert not await enqueue(queue, db, "process", key="conv-1", coalesce=True, delay_s=5)
    assert (await only_job(db)).run_after == T0 + timedelta(seconds=5)

    clock.advance(5)
    assert (await queue.claim("w")).key == "conv-1"


async def test_coalesced_enqueue_leaves_a_job_in_backoff_where_it_is(db):
    # A turn waiting out a vendor's Retry-After: the customer writing again must not make it run
    # (and hit the rate-limited vendor) sooner.
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy(backoff_s=2))
    await enqueue(queue, db, "turn", key="conversation:c1", coalesce=True)
    claimed = await queue.claim("w:1/0")
    assert await queue.fail(claimed, "w:1/0", "retry later: HTTP 429", not_before_s=30) == "queued"
    assert not await enqueue(queue, db, "turn", key="conversation:c1", coalesce=True, delay_s=1.5)
    assert (await only_job(db)).run_after == T0 + timedelta(seconds=30)


async def test_enqueue_without_coalesce_always_adds_a_job(db):
    queue = JobQueue(db, ManualClock(T0), JobPolicy())
    for _ in range(3):
        assert await enqueue(queue, db, "process", key="conv-1")
    assert await count(db, Job, Job.key == "conv-1", Job.status == "queued") == 3


# -- the background runner -------------------------------------------------------------------------


async def test_started_runner_runs_queued_jobs_in_the_background_when_notified(db):
    queue = JobQueue(db, ManualClock(T0), JobPolicy())
    seen: list[dict] = []

    async def handler(job):
        seen.append(job.payload)

    # A long poll interval: only notify() can make this prompt.
    runner = runner_for(queue, {"greet": handler}, concurrency=2, poll_interval_s=60)
    runner.start()
    try:
        await asyncio.sleep(0.1)  # the workers found nothing and went idle
        started = time.monotonic()
        await enqueue(queue, db, "greet", {"name": "Ana"})
        await until(lambda: _all_done(db))
        assert time.monotonic() - started < 2
        await enqueue(queue, db, "greet", {"name": "Bo"})
        await until(lambda: _all_done(db))
    finally:
        await runner.stop()

    assert seen == [{"name": "Ana"}, {"name": "Bo"}]


async def test_stop_returns_at_once_when_every_worker_is_idle(db):
    runner = runner_for(JobQueue(db, ManualClock(T0), JobPolicy()), {}, concurrency=4, poll_interval_s=60)
    runner.start()
    await asyncio.sleep(0.5)  # all four found nothing and are waiting

    t = time.monotonic()
    await asyncio.wait_for(runner.stop(), 5)
    assert time.monotonic() - t < 0.5


async def test_stop_right_after_start_returns_at_once(db):
    runner = runner_for(JobQueue(db, ManualClock(T0), JobPolicy()), {}, concurrency=2, poll_interval_s=60)
    runner.start()
    await asyncio.sleep(0)  # the workers are looking for a job

    t = time.monotonic()
    await asyncio.wait_for(runner.stop(), 5)
    assert time.monotonic() - t < 0.5


async def test_stop_lets_a_running_job_finish_within_the_grace_period(db):
    queue = JobQueue(db, ManualClock(T0), JobPolicy())
    started = asyncio.Event()

    async def short(job):
        started.set()
        await asyncio.sleep(0.3)

    runner = runner_for(queue, {"short": short}, concurrency=1, poll_interval_s=60)
    runner.start()
    await enqueue(queue, db, "short")
    await asyncio.wait_for(started.wait(), 5)

    t = time.monotonic()
    await asyncio.wait_for(runner.stop(grace_s=5), 10)
    assert time.monotonic() - t < 2  # returned when the job finished, not at the end of the grace

    assert (await only_job(db)).status == "done"


async def test_stop_hands_back_a_job_that_outlives_the_grace_period(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy(lease_s=30))
    started = asyncio.Event()

    async def endless(job):
        started.set()
        await asyncio.sleep(3600)

    runner = runner_for(queue, {"endless": endless}, concurrency=3, poll_interval_s=60)
    runner.start()
    await enqueue(queue, db, "endless")
    await asyncio.wait_for(started.wait(), 5)

    t = time.monotonic()
    await asyncio.wait_for(runner.stop(grace_s=0.2), 5)
    assert time.monotonic() - t < 1.0

    # The interrupted job is handed back at once: queued, due now, its attempt not spent.
    job = await only_job(db)
    assert (job.status, job.locked_by, job.locked_until, job.attempts) == ("queued", None, None, 0)


async def test_idle_runner_wakes_up_when_a_delayed_job_comes_due(db):
    queue = JobQueue(db, SystemClock(), JobPolicy())
    ran_at: list[float] = []

    async def handler(job):
        ran_at.append(time.monotonic())

    runner = runner_for(queue, {"later": handler}, poll_interval_s=60)
    runner.start()
    try:
        await asyncio.sleep(0.1)
        queued_at = time.monotonic()
        await enqueue(queue, db, "later", delay_s=0.5)
        await until(lambda: _all_done(db), timeout_s=5)
    finally:
        await runner.stop()

    (started,) = ran_at
    assert 0.45 <= started - queued_at < 3


async def test_seconds_until_next_reports_the_earliest_queued_job(db):
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy())
    assert await queue.seconds_until_next() is None

    await enqueue(queue, db, "a", delay_s=30)
    await enqueue(queue, db, "b", delay_s=10.5)
    assert await queue.seconds_until_next() == 10.5
    clock.advance(20)
    assert await queue.seconds_until_next() == 0.0


async def test_runner_can_be_stopped_without_being_started(db):
    runner = runner_for(JobQueue(db, ManualClock(T0), JobPolicy()), {})
    await asyncio.wait_for(runner.stop(), 1)


async def test_running_job_keeps_its_lease_alive_while_the_handler_works(db):
    lease_s = 0.9  # heartbeats every 0.3 s
    queue = JobQueue(db, SystemClock(), JobPolicy(lease_s=lease_s))
    release = asyncio.Event()

    async def slow(job):
        await release.wait()

    runner = runner_for(queue, {"slow": slow})
    await enqueue(queue, db, "slow")
    task = asyncio.create_task(runner.run_once())
    await until(lambda: _status_is(db, "running"))
    first_lease = (await only_job(db)).locked_until

    await asyncio.sleep(lease_s * 2.2)  # longer than the lease: only heartbeats keep it
    assert await queue.requeue_abandoned() == 0
    assert (await only_job(db)).locked_until > first_lease

    release.set()
    assert await asyncio.wait_for(task, 5)
    assert (await only_job(db)).status == "done"


async def _status_is(db: Database, status: str) -> bool:
    return await count(db, Job, Job.status == status) == 1
