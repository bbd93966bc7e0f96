"""One worker process of ``frontdesk serve`` (``platform/worker_pool.py`` starts it): a whole
runtime running the job runner (turns, deliveries, media, notifications, sweeps) and no HTTP.

It stops the way ``serve`` does: on SIGTERM or Ctrl-C (and when the edge that started it has
gone: its end of the link closes) it stops claiming, gives its running turns the shutdown grace,
hands back what is still running, and exits."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket

from frontdesk.platform import tokens
from frontdesk.platform.observability import Observability, configure_logging
from frontdesk.platform.process_link import CHANGED, METRICS, METRICS_ASK, READY, WAKE, ProcessLink
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings

log = logging.getLogger(__name__)


MAX_AUTO_PROCESSES = 4


def worker_process_count(settings: Settings) -> int:
    """``worker_processes`` as set, or what suits the machine: on SQLite one (writes take turns
    anyway, and each more process only adds lock waits); on PostgreSQL one per core but the one
    the HTTP edge keeps, at least one and at most four (each holds a database pool of its own)."""
    if settings.worker_processes is not None:
        return settings.worker_processes
    if settings.database_url.startswith("sqlite"):
        return 1
    return max(1, min(MAX_AUTO_PROCESSES, (os.cpu_count() or 2) - 1))


# Turns yield the CPU to the HTTP process when both want it (a webhook's acknowledgement is what a
# platform times out on; a turn's reply is seconds anyway): nice 10 weighs about a tenth.
WORKER_NICENESS = 10


def run_worker_process(sock: socket.socket, index: int, settings: Settings) -> None:
    """The spawned process's entry point."""
    os.nice(WORKER_NICENESS)
    configure_logging(settings.log_format, settings.log_level)
    try:
        asyncio.run(_work(sock, index, settings))
    except Exception:
        log.exception("worker process %d failed", index)
        raise SystemExit(1) from None


async def _work(sock: socket.socket, index: int, settings: Settings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    link = await ProcessLink.open(sock)
    # One registry per process; the edge adds the workers' counters up at each scrape. The
    # process's own CPU and memory series stay the edge's (the same names cannot be summed).
    observability = Observability.from_settings(settings, process_metrics=False)
    runtime = Runtime.build(settings)
    with observability.activated():
        try:
            await asyncio.to_thread(tokens.warm)
            await runtime.start(role="worker")
            runtime.signals.relay(lambda conversation_id: link.send(CHANGED, conversation_id.encode()))
            runtime.runner.start()
            link.send(READY, runtime.runner.identity.encode())  # what its leases are named after
            log.info("worker process %d running %d workers", index, settings.workers)
            listening = asyncio.create_task(_listen(link, runtime, observability, stop), name="edge link")
            await stop.wait()
            listening.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listening
        finally:
            await runtime.close()  # stops the runner first: running turns get the shutdown grace
            await observability.shutdown()
            await link.close()


async def _listen(link: ProcessLink, runtime: Runtime, observability: Observability, stop: asyncio.Event) -> None:
    async for kind, _payload in link.frames():
        if kind == WAKE:
            runtime.queue.notify()
        elif kind == METRICS_ASK:
            metrics = observability.metrics
            if metrics is not None:
                metrics.database.work = runtime.db.work
            link.send(METRICS, metrics.render() if metrics is not None else b"")
    log.warning("the HTTP process has gone: stopping")
    stop.set()
