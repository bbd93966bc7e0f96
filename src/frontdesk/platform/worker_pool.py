"""The worker processes of one ``serve``: started beside the HTTP edge, woken when it queues a
job, asked for their metrics, restarted when one dies, drained at shutdown.

Why processes: turns (the gate, rendering, a local model's prompt formatting) are CPU work on an
event loop; sharing the edge's loop, they delayed webhook acknowledgements by hundreds of
milliseconds under load. Each worker is a whole frontdesk runtime with its own database pool and
job runner; they share nothing but the database, like instances on other machines, so a dead
worker's jobs are recovered the way a dead instance's are (its leases run out). The pool only
adds what one machine can do better than the database: wake-ups without a poll interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any

from frontdesk.platform.observability.logs import WORKER_PROCESS_PREFIX
from frontdesk.platform.process_link import CHANGED, METRICS, METRICS_ASK, READY, WAKE, ProcessLink

log = logging.getLogger(__name__)

# After its SIGTERM a worker takes up to the shutdown grace to hand its turns back; past this
# margin on top it is killed (its jobs then wait out their leases, as after a crash).
STOP_MARGIN_S = 10.0
METRICS_TIMEOUT_S = 2.0
# A worker that dies within this long of its start is restarted after a growing delay (a broken
# configuration must not spin a core), up to MAX_RESTART_DELAY_S.
QUICK_DEATH_S = 10.0
MAX_RESTART_DELAY_S = 30.0


@dataclass
class _Worker:
    index: int
    process: BaseProcess
    link: ProcessLink
    started: float
    identity: str | None = None  # its job runner's (platform/workers.py), from its READY frame
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    metrics_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    metrics_reply: asyncio.Future[bytes] | None = None
    reader: asyncio.Task[None] | None = None


class WorkerPool:
    """``count`` processes each running ``target(sock, index, *args)`` (a module-level function:
    processes are spawned, not forked, so nothing of the edge's event loop or connections is
    inherited). ``on_changed(conversation_id)`` runs in the edge for each ``CHANGED`` frame;
    ``on_dead(identity)`` once a worker has exited, before another is started, with the identity
    its job runner gave in its ``READY`` frame (what its leases are named after)."""

    def __init__(
        self,
        count: int,
        target: Callable[..., None],
        args: tuple[Any, ...],
        *,
        on_changed: Callable[[str], None],
        on_dead: Callable[[str], Awaitable[None]] | None = None,
        restart_delay_s: float = 1.0,
    ) -> None:
        self._count = count
        self._target = target
        self._args = args
        self._on_changed = on_changed
        self._on_dead = on_dead
        self._restart_delay_s = restart_delay_s
        self._context = multiprocessing.get_context("spawn")
        self._workers: dict[int, _Worker] = {}
        self._next_wake = 0
        self._stopping = False
        self.restarts = 0

    async def start(self) -> None:
        for index in range(self._count):
            await self._spawn(index)

    @property
    def pids(self) -> list[int]:
        return [w.process.pid for w in self._workers.values() if w.process.pid is not None]

    async def wait_ready(self, timeout_s: float) -> None:
        """Until every worker has started its runner (``TimeoutError`` after ``timeout_s``)."""
        async with asyncio.timeout(timeout_s):
            for index in range(self._count):
                await self._workers[index].ready.wait()

    def wake(self) -> None:
        """Tell one worker, in turn, that a job was queued."""
        workers = [w for w in self._workers.values() if w.ready.is_set()]
        if not workers:
            return  # starting workers read the queue first thing
        self._next_wake = (self._next_wake + 1) % len(workers)
        workers[self._next_wake].link.send(WAKE)

    async def metrics(self) -> list[bytes]:
        """Each running worker's metrics exposition; a worker that does not answer in time is
        left out of this scrape (its counters are back in the next)."""
        answers = await asyncio.gather(*(self._metrics_of(w) for w in list(self._workers.values())))
        return [a for a in answers if a is not None]

    async def _metrics_of(self, worker: _Worker) -> bytes | None:
        if not worker.ready.is_set():
            return None
        async with worker.metrics_lock:
            reply: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
            worker.metrics_reply = reply
            worker.link.send(METRICS_ASK)
            try:
                return await asyncio.wait_for(reply, METRICS_TIMEOUT_S)
            except TimeoutError:
                log.warning("worker process %d sent no metrics within %.0f s", worker.index, METRICS_TIMEOUT_S)
                return None
            finally:
                worker.metrics_reply = None

    async def stop(self, grace_s: float) -> None:
        """SIGTERM to every worker (each stops claiming and gives its running turns ``grace_s``),
        then wait for them; one still alive ``STOP_MARGIN_S`` later is killed."""
        self._stopping = True
        workers = list(self._workers.values())
        for worker in workers:
            if worker.process.is_alive():
                worker.process.terminate()
        deadline = time.monotonic() + grace_s + STOP_MARGIN_S
        for worker in workers:
            await asyncio.to_thread(worker.process.join, max(deadline - time.monotonic(), 0.0))
            if worker.process.is_alive():
                log.warning("worker process %d did not stop in time: killed", worker.index)
                worker.process.kill()
                await asyncio.to_thread(worker.process.join, 5.0)
        for worker in workers:
            if worker.reader is not None:
                worker.reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await worker.reader
            await worker.link.close()
        self._workers.clear()

    async def _spawn(self, index: int) -> None:
        ours, theirs = socket.socketpair()
        process = self._context.Process(
            target=self._target, args=(theirs, index, *self._args), name=f"{WORKER_PROCESS_PREFIX}{index}", daemon=True
        )
        process.start()
        theirs.close()
        worker = _Worker(index, process, await ProcessLink.open(ours), time.monotonic())
        worker.reader = asyncio.create_task(self._read(worker), name=f"worker-process-{index}")
        self._workers[index] = worker
        log.info("worker process %d started (pid %s)", index, process.pid)

    async def _read(self, worker: _Worker) -> None:
        async for kind, payload in worker.link.frames():
            if kind == CHANGED:
                self._on_changed(payload.decode())
            elif kind == METRICS and worker.metrics_reply is not None and not worker.metrics_reply.done():
                worker.metrics_reply.set_result(payload)
            elif kind == READY:
                worker.identity = payload.decode() or None
                worker.ready.set()
        # The link closed: the worker has gone (or is going): no wake-up or scrape waits on it.
        worker.ready.clear()
        await asyncio.to_thread(worker.process.join, 5.0)
        if self._stopping:
            return
        lived_s = time.monotonic() - worker.started
        delay = (
            self._restart_delay_s if lived_s > QUICK_DEATH_S else min(MAX_RESTART_DELAY_S, 2 ** min(self.restarts, 5))
        )
        log.error(
            "worker process %d (pid %s) exited with %s; its running jobs are queued again, and another "
            "process starts in %.0f s",
            worker.index,
            worker.process.pid,
            worker.process.exitcode,
            delay,
        )
        await worker.link.close()
        if self._on_dead is not None and worker.identity is not None:
            try:
                await self._on_dead(worker.identity)
            except Exception:  # the leases still run out: recovery is only later
                log.exception("could not hand back the jobs of worker process %d", worker.index)
        await asyncio.sleep(delay)
        if not self._stopping:
            self.restarts += 1
            await self._spawn(worker.index)
