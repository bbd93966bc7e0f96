"""PostgreSQL LISTEN/NOTIFY on one dedicated connection: wake-ups that cross instances.

The bridge keeps a single asyncpg connection outside the SQLAlchemy pool (operations count it as
the "+1" per instance). It LISTENs on one channel and hands every payload sent by *another*
backend to ``on_payload``; ``send`` queues a payload that the same connection NOTIFYs. Sends are
never awaited by the caller: a wake-up is a hint (listeners re-read the store and poll anyway),
so a send while the connection is down is kept for the next connection rather than failing a
turn.

If the connection drops (a server restart, ``pg_terminate_backend``, a silent network cut caught
by the keep-alive query) the bridge reconnects with exponential backoff, and after every
(re)connect calls ``on_connected``: NOTIFYs sent while nobody listened are lost, so everyone
waiting must re-read once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type information

log = logging.getLogger(__name__)

# PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; ours are ids.
MAX_PAYLOAD_BYTES = 7999
# A send queue that outgrows this while disconnected is dropped: the reconnect wakes everyone anyway.
MAX_PENDING = 10_000

Connect = Callable[[str], Awaitable[Any]]


@dataclass(frozen=True)
class BridgeTiming:
    connect_timeout_s: float = 5.0
    keepalive_s: float = 10.0  # an idle connection runs SELECT 1 this often...
    keepalive_timeout_s: float = 5.0  # ...and is abandoned if it takes longer than this
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0


class PgNotifyBridge:
    def __init__(
        self,
        connect_args: Mapping[str, Any],
        channel: str,
        on_payload: Callable[[str], None],
        on_connected: Callable[[], None],
        *,
        timing: BridgeTiming | None = None,
    ) -> None:
        self._connect_args = dict(connect_args)
        self._channel = channel
        self._on_payload = on_payload
        self._on_connected = on_connected
        self._timing = timing or BridgeTiming()
        self._pending: dict[str, None] = {}  # an ordered set: one NOTIFY per id per flush
        self._wake = asyncio.Event()
        self._closing = asyncio.Event()
        self._listening = asyncio.Event()
        self._own_pid: int | None = None
        self._task: asyncio.Task[None] | None = None
        self.connections = 0  # how many times a connection was established (reconnects show here)

    @property
    def listening(self) -> bool:
        return self._listening.is_set()

    @property
    def server_pid(self) -> int | None:
        """The backend process of the current connection (``pg_stat_activity.pid``)."""
        return self._own_pid if self.listening else None

    async def start(self) -> None:
        """Start the supervisor and wait (briefly) for the first LISTEN. A database that does not
        answer yet is not fatal: the bridge keeps trying in the background."""
        if self._task is not None:
            return
        self._task = asyncio.create_task(self._supervise(), name=f"listen {self._channel}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._listening.wait(), self._timing.connect_timeout_s)

    async def wait_listening(self, timeout_s: float) -> bool:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._listening.wait(), timeout_s)
        return self.listening

    def send(self, payload: str) -> None:
        if len(payload.encode()) > MAX_PAYLOAD_BYTES:
            log.warning("NOTIFY payload of %d bytes not sent (limit %d)", len(payload.encode()), MAX_PAYLOAD_BYTES)
            return
        if len(self._pending) >= MAX_PENDING:
            self._pending.clear()
        self._pending[payload] = None
        self._wake.set()

    async def close(self) -> None:
        self._closing.set()
        self._wake.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # -- the connection's life

    async def _supervise(self) -> None:
        backoff_s = self._timing.backoff_initial_s
        while not self._closing.is_set():
            connections_before = self.connections
            try:
                await self._session()
            except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                # The message names the failure, never the DSN (it may carry a password).
                log.warning("LISTEN %s connection failed: %s: %s", self._channel, type(exc).__name__, exc)
            except Exception:
                log.exception("LISTEN %s connection failed", self._channel)
            finally:
                self._listening.clear()
            if self._closing.is_set():
                return
            if self.connections > connections_before:  # it listened: the next failure starts the backoff over
                backoff_s = self._timing.backoff_initial_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), backoff_s)
            backoff_s = min(backoff_s * 2, self._timing.backoff_max_s)

    async def _session(self) -> None:
        """One connection, from connect to its loss (or ``close``)."""
        connection = await asyncpg.connect(**self._connect_args, timeout=self._timing.connect_timeout_s)
        lost = asyncio.Event()
        connection.add_termination_listener(lambda _conn: lost.set())
        try:
            await connection.add_listener(self._channel, self._received)
            self._own_pid = connection.get_server_pid()
            self.connections += 1
            self._listening.set()
            if self.connections > 1:
                log.info("LISTEN %s re-established", self._channel)
            self._on_connected()
            await self._serve(connection, lost)
        finally:
            if not connection.is_closed():
                with contextlib.suppress(Exception):  # closing a broken connection may fail; it is gone either way
                    await asyncio.wait_for(connection.close(), self._timing.keepalive_timeout_s)
                connection.terminate()

    async def _serve(self, connection: Any, lost: asyncio.Event) -> None:
        timing = self._timing
        while not self._closing.is_set() and not lost.is_set():
            self._wake.clear()
            if self._pending:
                # Take the batch out before sending: a publish made while a NOTIFY is in flight must
                # be sent again, not dropped as a duplicate of the one being sent.
                batch, self._pending = list(self._pending), {}
                for n, payload in enumerate(batch):
                    try:
                        await asyncio.wait_for(
                            connection.execute("SELECT pg_notify($1, $2)", self._channel, payload),
                            timing.keepalive_timeout_s,
                        )
                    except BaseException:
                        for unsent in batch[n:]:  # for the next connection
                            self._pending.setdefault(unsent, None)
                        raise
                continue
            woke = await _first_of(self._wake, lost, timeout_s=timing.keepalive_s)
            if not woke and not lost.is_set():
                await asyncio.wait_for(connection.fetchval("SELECT 1"), timing.keepalive_timeout_s)

    def _received(self, _connection: Any, pid: int, _channel: str, payload: str) -> None:
        if pid == self._own_pid:  # our own NOTIFY: the publisher already woke this process
            return
        try:
            self._on_payload(payload)
        except Exception:
            log.exception("NOTIFY handler failed")


async def _first_of(*events: asyncio.Event, timeout_s: float) -> bool:
    """Wait until any event is set; False on timeout."""
    waiters = [asyncio.create_task(e.wait()) for e in events]
    try:
        done, _ = await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        return bool(done)
    finally:
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
