"""In-process job workers and the sweeper. Any number of processes may run these against one
database; nothing here keeps state that another instance would need.

Shutdown (``stop``) is graceful: workers stop claiming at once, running jobs get a grace period to
finish, and a job still running when it ends is cancelled and handed back (queued, due now; its
handler's ``finally`` blocks release what they hold, such as the conversation lease), so another
instance takes it over within a poll instead of after the lease runs out. A process that dies
without a shutdown (kill -9, a lost machine) is covered by the leases: the sweeper of a surviving
instance re-queues its jobs once their lease has expired."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

from frontdesk.platform.clock import ManualClock
from frontdesk.platform.ids import new_id
from frontdesk.platform.jobs import ClaimedJob, JobQueue, RetryLater
from frontdesk.platform.periodic import every

log = logging.getLogger(__name__)

JobHandler = Callable[[ClaimedJob], Awaitable[None]]
Sweep = Callable[[], Awaitable[int]]
T = TypeVar("T")

DEFAULT_SHUTDOWN_GRACE_S = 2.0


def worker_identity() -> str:
    """host:pid:random, so leases from a restarted process never look like ours."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{new_id('w')[2:10]}"


class JobRunner:
    def __init__(
        self,
        queue: JobQueue,
        handlers: Mapping[str, JobHandler],
        *,
        concurrency: int,
        poll_interval_s: float,
        sweeps: list[Sweep],
        sweep_interval_s: float,
        identity: str | None = None,
        shutdown_grace_s: float = DEFAULT_SHUTDOWN_GRACE_S,
    ) -> None:
        self._queue = queue
        self._handlers = dict(handlers)
        self._concurrency = concurrency
        self._poll_interval_s = poll_interval_s
        self._sweeps = sweeps
        self._sweep_interval_s = sweep_interval_s
        self.identity = identity or worker_identity()
        self._shutdown_grace_s = shutdown_grace_s
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()
        self._stop_task: asyncio.Future[None] | None = None

    def start(self) -> None:
        for n in range(self._concurrency):
            self._tasks.append(asyncio.create_task(self._work(f"{self.identity}/{n}"), name=f"worker-{n}"))
        if self._sweeps:
            self._tasks.append(asyncio.create_task(self._sweep_forever(), name="sweeper"))

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    async def stop(self, grace_s: float | None = None) -> None:
        """Stop claiming, let running jobs finish for up to ``grace_s`` (default: the runner's
        ``shutdown_grace_s``), then cancel them: each cancelled job is handed back to the queue.
        Calling it again while a stop is under way waits for that stop."""
        if self._stop_task is None:
            grace = self._shutdown_grace_s if grace_s is None else grace_s
            self._stop_task = asyncio.ensure_future(self._stop(grace))
        await asyncio.shield(self._stop_task)

    async def _stop(self, grace_s: float) -> None:
        self._stopping.set()
        self._queue.wake_all()
        if self._tasks:
            log.info("stopping: no new jobs; waiting up to %.1f s for running ones", grace_s)
            _done, pending = await asyncio.wait(self._tasks, timeout=grace_s)
            if pending:
                log.warning("stopping: %d still busy after %.1f s; handing their jobs back", len(pending), grace_s)
            for task in pending:
                task.cancel()
            for task in self._tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._tasks.clear()

    async def run_once(self, worker: str | None = None) -> bool:
        """Claim and run one job. Returns False when the queue had nothing due."""
        worker = worker or f"{self.identity}/once"
        job = await self._queue.claim(worker)
        if job is None:
            return False
        if self._stopping.is_set():  # claimed in the instant the stop began: leave it to another instance
            await self._queue.release(job, worker)
            return False
        await self._run(job, worker)
        return True

    async def run_until_idle(self, *, max_jobs: int = 10_000) -> int:
        """Run jobs here, one at a time, until none is queued: for tests and tools that drive a
        runtime without starting its workers. A job due later (a quiet window, a retry's backoff)
        is waited for: when the queue's clock is a ``ManualClock``, by moving it there at once;
        otherwise in real time. Returns how many jobs ran; raises ``RuntimeError`` past
        ``max_jobs`` (jobs that keep queueing each other would otherwise never let it return)."""
        clock = self._queue.clock if isinstance(self._queue.clock, ManualClock) else None
        ran = 0
        while True:
            if await self.run_once(f"{self.identity}/idle"):
                ran += 1
                if ran >= max_jobs:
                    raise RuntimeError(f"still busy after {ran} jobs")
                continue
            due_in = await self._queue.seconds_until_next()
            if due_in is None:
                return ran
            # (At least a millisecond: a due time that rounds to "now" must still come to pass.)
            if clock is not None:
                clock.advance(max(due_in, 0.001))
            else:
                await self._queue.wait_for_work(max(due_in, 0.001))

    async def sweep_once(self) -> int:
        total = 0
        for sweep in self._sweeps:
            try:
                total += await sweep()
            except Exception:
                log.exception("sweep failed")
        return total

    async def _work(self, worker: str) -> None:
        while not self._stopping.is_set():
            try:
                ran = await self.run_once(worker)
            except Exception:
                log.exception("worker %s could not claim a job", worker)
                ran = False
            if not ran:
                timeout_s = await self._idle_timeout()
                # No await between this check and the wait: stop() cannot slip in between.
                if not self._stopping.is_set():
                    await self._queue.wait_for_work(timeout_s)

    async def _idle_timeout(self) -> float:
        """Sleep until the next delayed job is due, but no longer than the poll interval
        (jobs queued by other instances do not wake us)."""
        try:
            due_in = await self._queue.seconds_until_next()
        except Exception:
            log.exception("could not read the next due job")
            return self._poll_interval_s
        if due_in is None:
            return self._poll_interval_s
        return min(self._poll_interval_s, max(due_in, 0.005))

    async def _run(self, job: ClaimedJob, worker: str) -> None:
        handler = self._handlers.get(job.kind)
        if handler is None:
            await self._queue.fail(job, worker, f"no handler for job kind {job.kind!r}")
            return

        async def heartbeat() -> bool:
            return await self._queue.heartbeat(job, worker)

        try:
            async with every(self._queue.policy.lease_s / 3, heartbeat, what=f"heartbeat of job {job.id}"):
                await handler(job)
        except asyncio.CancelledError:
            # The grace period of a shutdown ran out: hand the job back so another instance runs it
            # now. (If this fails, the job's lease runs out and the sweeper re-queues it.)
            try:
                if await self._queue.release(job, worker):
                    log.warning("job %s (%s) handed back unfinished at shutdown", job.id, job.kind)
            except Exception:
                log.exception("could not hand job %s back; it is re-queued when its lease expires", job.id)
            raise
        except RetryLater as exc:
            log.warning(
                "job %s (%s) will be retried (attempt %d of %d): %s",
                job.id,
                job.kind,
                job.attempts,
                exc.max_attempts or job.max_attempts,
                exc,
            )
            await self._failed(job, worker, f"retry later: {exc}", not_before_s=exc.after_s)
        except Exception as exc:
            log.exception("job %s (%s) failed", job.id, job.kind)
            await self._failed(job, worker, f"{type(exc).__name__}: {exc}")
        else:
            await self._queue.complete(job, worker)

    async def _failed(self, job: ClaimedJob, worker: str, error: str, *, not_before_s: float | None = None) -> None:
        if await self._queue.fail(job, worker, error, not_before_s=not_before_s) == "queued":
            self._queue.notify()

    async def _sweep_forever(self) -> None:
        while not self._stopping.is_set():
            if await self.sweep_once():
                self._queue.notify()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self._sweep_interval_s)


async def run_to_completion(work: Coroutine[Any, Any, T]) -> T:
    """Await ``work`` to its end even if the calling task is cancelled meanwhile (the cancel is
    re-raised afterwards). For short critical sections that must not be cut in half, such as
    committing a reply and sending it."""
    task = asyncio.ensure_future(work)
    interrupted = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                break
            interrupted = True
        except Exception:
            break  # the work failed: its error is raised below and wins over a pending cancel
    if interrupted and not task.cancelled() and task.exception() is None:
        raise asyncio.CancelledError
    return task.result()
