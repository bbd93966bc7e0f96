"""The jobs table: durable background work for one process or many.

Claiming uses ``UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED)`` on PostgreSQL, so N
instances claim disjoint jobs; on SQLite the clause is not rendered and ``BEGIN IMMEDIATE``
serialises claims. A running job holds a lease (``locked_until``) that its worker renews; the
sweeper re-queues jobs whose lease ran out (their process died). Failed jobs are retried with
exponential backoff until ``max_attempts``, then left ``dead`` for an operator to see.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, bindparam, exists, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.platform.clock import Clock
from frontdesk.platform.ids import JobId
from frontdesk.platform.observability.instruments import lock_taken_over
from frontdesk.platform.store.engine import Database, rows_affected
from frontdesk.platform.store.schema import Job

QUEUED, RUNNING, DONE, DEAD = "queued", "running", "done", "dead"
_JOBS = cast(Table, Job.__table__)
# Every ingest enqueues, so its statements are built once and take their values as parameters.
_QUEUED_WITH_KEY = (
    select(_JOBS.c.id, _JOBS.c.run_after, _JOBS.c.attempts)
    .where(_JOBS.c.key == bindparam("key"), _JOBS.c.status == QUEUED)
    .limit(1)
    .with_for_update(skip_locked=True)
)
_MOVE_UP = (
    update(_JOBS).where(_JOBS.c.id == bindparam("job")).values(run_after=bindparam("due"), updated_at=bindparam("now"))
)
_INSERT_JOB = insert(_JOBS)


@dataclass(frozen=True)
class ClaimedJob:
    id: JobId
    kind: str
    key: str | None
    payload: dict[str, Any]
    attempts: int
    worker: str
    max_attempts: int = 1

    @property
    def claim_id(self) -> str:
        """Unique per claim: a job re-claimed after its lease lapsed is a different holder."""
        return f"{self.worker}/job{self.id}.{self.attempts}"

    @property
    def last_attempt(self) -> bool:
        """A failure now marks the job dead: a handler with a fallback uses it instead."""
        return self.attempts >= self.max_attempts


class RetryLater(Exception):
    """A handler's expected failure (a vendor is down): the job is retried with backoff, and no
    sooner than ``after_s`` (a vendor's ``Retry-After``), without a traceback in the log.
    ``max_attempts``: the handler's own limit, when it gives up before the queue would (the log
    line counts attempts against it)."""

    def __init__(self, reason: str, *, after_s: float | None = None, max_attempts: int | None = None) -> None:
        super().__init__(reason)
        self.after_s = after_s
        self.max_attempts = max_attempts


@dataclass(frozen=True)
class JobPolicy:
    max_attempts: int = 5
    backoff_s: float = 2.0
    lease_s: float = 60.0


class JobQueue:
    def __init__(self, db: Database, clock: Clock, policy: JobPolicy) -> None:
        self._db = db
        self._clock = clock
        self.policy = policy
        # Wake-ups go to one idle worker each: waking all of them for one job only makes the
        # others race for the same row (and, on SQLite, for the write lock).
        self._idle: collections.deque[asyncio.Future[None]] = collections.deque()
        self._missed_wakeup = False
        self._elsewhere: Callable[[], None] | None = None

    @property
    def clock(self) -> Clock:
        return self._clock

    async def enqueue(
        self,
        session: AsyncSession,
        kind: str,
        payload: dict[str, Any],
        *,
        key: str | None = None,
        coalesce: bool = False,
        delay_s: float = 0.0,
    ) -> bool:
        """Add a job inside the caller's transaction. With ``coalesce``, one queued job per key
        stands for all: an existing one is moved up to the earlier of the two due times instead of
        adding a row (a duplicate would only lose the lease race). Returns whether a row was added.
        Call ``notify()`` after the commit."""
        now = self._clock.now()
        run_after = now + timedelta(seconds=delay_s)
        # Core on the session's connection: every ingest runs this, and the ORM's unit of work
        # costs more CPU than the statements.
        connection = await session.connection()
        if coalesce and key is not None:
            # Lock the queued job while we decide: a worker claiming it right now would otherwise
            # run it without seeing our uncommitted message. A job being claimed (locked) is
            # skipped, so we add a fresh one instead.
            waiting = (await connection.execute(_QUEUED_WITH_KEY, {"key": key})).first()
            if waiting is not None:
                # A job waiting out a failure's backoff (a vendor's Retry-After) keeps its time:
                # the customer writing again does not make the vendor answer sooner.
                if run_after < waiting.run_after and waiting.attempts == 0:
                    await connection.execute(_MOVE_UP, {"job": waiting.id, "due": run_after, "now": now})
                return False
        job = {
            "kind": kind,
            "key": key,
            "payload": payload,
            "status": QUEUED,
            "attempts": 0,
            "max_attempts": self.policy.max_attempts,
            "run_after": run_after,
            "created_at": now,
            "updated_at": now,
        }
        await connection.execute(_INSERT_JOB, job)
        return True

    def notify(self) -> None:
        """Wake one idle in-process worker now instead of at its next poll (with no worker in
        this process, the ones ``wake_elsewhere`` names)."""
        while self._idle:
            waiter = self._idle.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        if self._elsewhere is not None:
            self._elsewhere()
            return
        self._missed_wakeup = True

    def wake_elsewhere(self, wake: Callable[[], None]) -> None:
        """Where ``notify`` goes when this process runs no worker: ``serve``'s HTTP process hands
        its wake-ups to its worker processes."""
        self._elsewhere = wake

    async def wait_for_work(self, timeout_s: float) -> None:
        if self._missed_wakeup:
            self._missed_wakeup = False
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._idle.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout_s)
        except TimeoutError:
            return
        finally:
            if waiter in self._idle:
                self._idle.remove(waiter)

    def wake_all(self) -> None:
        """For shutdown: every idle worker returns now."""
        while self._idle:
            waiter = self._idle.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def claim(self, worker: str) -> ClaimedJob | None:
        now = self._clock.now()
        next_id = (
            select(Job.id)
            .where(Job.status == QUEUED, Job.run_after <= now)
            .order_by(Job.run_after, Job.id)
            .limit(1)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        claim = (
            update(Job)
            .where(Job.id == next_id, Job.status == QUEUED)
            .values(
                status=RUNNING,
                locked_by=worker,
                locked_until=now + timedelta(seconds=self.policy.lease_s),
                attempts=Job.attempts + 1,
                updated_at=now,
            )
            .returning(Job.id, Job.kind, Job.key, Job.payload, Job.attempts, Job.max_attempts)
        )
        async with self._db.transaction() as session:
            row = (await session.execute(claim)).first()
        if row is None:
            return None
        return ClaimedJob(JobId(row.id), row.kind, row.key, row.payload, row.attempts, worker, row.max_attempts)

    async def heartbeat(self, job: ClaimedJob, worker: str) -> bool:
        now = self._clock.now()
        async with self._db.transaction() as session:
            result = await session.execute(
                update(Job)
                .where(Job.id == job.id, Job.locked_by == worker, Job.status == RUNNING)
                .values(locked_until=now + timedelta(seconds=self.policy.lease_s), updated_at=now)
            )
        return rows_affected(result) > 0

    async def complete(self, job: ClaimedJob, worker: str) -> None:
        async with self._db.transaction() as session:
            await session.execute(
                update(Job)
                .where(Job.id == job.id, Job.locked_by == worker)
                .values(status=DONE, locked_by=None, locked_until=None, updated_at=self._clock.now())
            )

    async def release(self, job: ClaimedJob, worker: str) -> bool:
        """Give a claimed job back unfinished (a shutdown): queued, at its old place in the queue (it
        was due when claimed), so another instance takes it at its next poll instead of after the
        lease runs out, ahead of newer work. The interrupted attempt is not counted: stopping a
        process is not the job's failure."""
        now = self._clock.now()
        async with self._db.transaction() as session:
            result = await session.execute(
                update(Job)
                .where(Job.id == job.id, Job.locked_by == worker, Job.status == RUNNING)
                .values(
                    status=QUEUED,
                    locked_by=None,
                    locked_until=None,
                    attempts=Job.attempts - 1,  # the claim counted it; a claimed job has at least 1
                    updated_at=now,
                )
            )
        return rows_affected(result) > 0

    async def fail(self, job: ClaimedJob, worker: str, error: str, *, not_before_s: float | None = None) -> str:
        """Schedule a retry with exponential backoff (never sooner than ``not_before_s``), or mark
        the job dead. Returns the new status."""
        now = self._clock.now()
        async with self._db.transaction() as session:
            row = await session.get(Job, job.id)
            if row is None or row.locked_by != worker:
                return "lost"
            if row.attempts >= row.max_attempts:
                row.status = DEAD
            else:
                row.status = QUEUED
                backoff_s = self.policy.backoff_s * 2 ** (row.attempts - 1)
                row.run_after = now + timedelta(seconds=max(backoff_s, not_before_s or 0.0))
            row.locked_by = None
            row.locked_until = None
            row.last_error = error[:4000]
            row.updated_at = now
            return row.status

    async def requeue_abandoned(self) -> int:
        """Jobs whose worker stopped renewing its lease (a dead process) go back in the queue, at
        their old place: ``run_after`` is left as it was (due long ago), so the customers whose
        turn was interrupted are served first, not after the backlog that built up meanwhile."""
        return await self._abandon(Job.locked_until < self._clock.now(), "lease expired")

    async def requeue_of(self, worker: str) -> int:
        """The running jobs of a worker known to be dead (``serve`` saw its worker process exit)
        go back in the queue now, as ``requeue_abandoned`` would once their leases ran out; the
        attempt counts (a job that kills its process must not kill the next one forever)."""
        return await self._abandon(Job.locked_by.startswith(f"{worker}/", autoescape=True), "its process died")

    async def _abandon(self, which: ColumnElement[bool], why: str) -> int:
        """The running jobs ``which`` picks, queued again (dead past their attempts)."""
        now = self._clock.now()
        async with self._db.transaction() as session:
            held = (
                await session.scalars(select(Job).where(Job.status == RUNNING, which).with_for_update(skip_locked=True))
            ).all()
            for job in held:
                job.status = DEAD if job.attempts >= job.max_attempts else QUEUED
                job.last_error = f"abandoned by {job.locked_by} ({why})"
                job.locked_by = None
                job.locked_until = None
                job.updated_at = now
        lock_taken_over("job", len(held))
        return len(held)

    async def seconds_until_next(self) -> float | None:
        """How long until the earliest queued job is due (None: nothing queued)."""
        async with self._db.read() as session:
            due = await session.scalar(select(func.min(Job.run_after)).where(Job.status == QUEUED))
        if due is None:
            return None
        if due.tzinfo is None:  # min() over SQLite text bypasses the column type
            due = datetime.fromisoformat(str(due)).replace(tzinfo=UTC)
        return max((due - self._clock.now()).total_seconds(), 0.0)

    async def has_pending(self, key: str) -> bool:
        async with self._db.read() as session:
            return bool(await session.scalar(select(exists().where(Job.key == key, Job.status.in_([QUEUED, RUNNING])))))
