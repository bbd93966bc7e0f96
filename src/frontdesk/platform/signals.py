"""Wake-ups for live views (web chat streams, console threads, the terminal chat).

A signal carries no data: listeners re-read the store, which stays the source of truth. Take the
ticket *before* reading the store, so a publish between the read and the wait counts.

In one process a publish sets the waiting tickets directly. On PostgreSQL it also NOTIFYs the
``frontdesk_conversation`` channel (payload: the conversation id), and ``start`` LISTENs on it
over one dedicated connection, so a reply written by another instance wakes this one's streams at
once. Publishers call ``publish`` after the transaction that wrote the change has committed, so a
woken listener always finds the rows.

Where a publish may not arrive (SQLite, which several processes may share: ``frontdesk chat``
beside ``frontdesk demo``; PostgreSQL while the LISTEN connection is down), one watcher per
process reads the messages added since its last look, every ``watch_interval_s`` while anyone
waits, and wakes their conversations (a message committed after one with a higher id included).
That is one query per second per process however many streams are open; each listener's own
timer can then be long (a safety net, not the mechanism).
After the bridge reconnects it wakes everyone, so nothing published meanwhile is missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_, select
from sqlalchemy.engine import URL

from frontdesk.platform.pg_notify import BridgeTiming, PgNotifyBridge
from frontdesk.platform.store.schema import Message

if TYPE_CHECKING:
    from frontdesk.platform.store.engine import Database

CONVERSATION_CHANNEL = "frontdesk_conversation"
# A ticket woken by every conversation's wake-up: the console's list of threads listens on it.
ANY_CONVERSATION = "*"
WATCH_INTERVAL_S = 1.0
WATCH_BATCH = 5000  # rows per look; past that, the watcher skips to the present
# Skipped ids looked for again (see _Frontier): for this long, and at most this many (one query's
# parameters; a stream's own 15 s timer covers anything past them).
HOLE_TTL_S = 30.0
MAX_HOLES = 1000

log = logging.getLogger(__name__)


def listen_connect_args(url: URL) -> dict[str, Any]:
    """asyncpg keyword arguments for the LISTEN connection, from the SQLAlchemy URL. Not a DSN:
    asyncpg sends a DSN's unknown query parameters to the server as settings, which refuses
    SQLAlchemy's own (``prepared_statement_cache_size``) and ``ssl``; TLS is passed as asyncpg's
    ``ssl`` argument instead."""
    args: dict[str, Any] = url.translate_connect_args(username="user")
    ssl = url.query.get("ssl") or url.query.get("sslmode")
    if ssl:
        args["ssl"] = ssl if isinstance(ssl, str) else ssl[0]
    return args


class ConversationSignals:
    def __init__(
        self,
        *,
        channel: str = CONVERSATION_CHANNEL,
        timing: BridgeTiming | None = None,
        watch_interval_s: float = WATCH_INTERVAL_S,
    ) -> None:
        # A ticket lives as long as a listener holds it: one that closed (or a web-chat session
        # that never posted) leaves nothing behind.
        self._events: weakref.WeakValueDictionary[str, asyncio.Event] = weakref.WeakValueDictionary()
        self._channel = channel
        self._timing = timing
        self._bridge: PgNotifyBridge | None = None
        self._watch_interval_s = watch_interval_s
        self._watcher: asyncio.Task[None] | None = None
        self._relays: list[Callable[[str], None]] = []

    async def start(self, db: Database) -> None:
        """Begin receiving other processes' changes: on PostgreSQL their publishes, and the
        store watcher wherever a publish may not arrive."""
        if self._watcher is None:
            self._watcher = asyncio.create_task(self._watch(db), name="signals-watcher")
        if db.dialect != "postgresql" or self._bridge is not None:
            return
        self._bridge = PgNotifyBridge(
            listen_connect_args(db.engine.url), self._channel, self._wake, self._wake_all, timing=self._timing
        )
        await self._bridge.start()

    async def close(self) -> None:
        """Stop receiving other processes' changes."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        if self._bridge is not None:
            await self._bridge.close()
            self._bridge = None

    async def _watch(self, db: Database) -> None:
        frontier: _Frontier | None = None  # None: start from the present
        with contextlib.suppress(Exception):  # the store may be away at start: anchored at the next look
            frontier = await self._wake_for_new_messages(db, None)
        while True:
            await asyncio.sleep(self._watch_interval_s)
            if self._bridge is not None and self._bridge.listening:
                frontier = None  # publishes arrive; after a reconnect the bridge wakes everyone
                continue
            if not self.listeners and frontier is not None:
                continue  # nobody waits: no query (the frontier stays, so nothing is skipped)
            try:
                # Anchored even with nobody waiting when the LISTEN connection has just dropped:
                # a stream opened a moment later must still hear of what committed meanwhile.
                frontier = await self._wake_for_new_messages(db, frontier)
            except Exception:  # the store is away for a moment: listeners' own timers still run
                log.warning("the signals watcher could not read new messages", exc_info=True)

    async def _wake_for_new_messages(self, db: Database, frontier: _Frontier | None) -> _Frontier:
        async with db.read() as session:
            if frontier is None:
                return _Frontier(int(await session.scalar(select(func.max(Message.id))) or 0))
            rows = (
                await session.execute(
                    select(Message.id, Message.conversation_id)
                    .where(or_(Message.id > frontier.last, Message.id.in_(frontier.holes)))
                    .order_by(Message.id)
                    .limit(WATCH_BATCH)
                )
            ).all()
        for _, conversation_id in rows:
            self._wake(conversation_id)
        if len(rows) == WATCH_BATCH:  # a backlog from a spell nobody watched: go on from the present
            return await self._wake_for_new_messages(db, None)
        frontier.advance([message_id for message_id, _ in rows], time.monotonic())
        return frontier

    @property
    def bridge(self) -> PgNotifyBridge | None:
        """The LISTEN/NOTIFY connection, when running on PostgreSQL (for readiness and tests)."""
        return self._bridge

    @property
    def listeners(self) -> int:
        """Tickets held right now (a closed stream's goes with it)."""
        return len(self._events)

    def ticket(self, conversation_id: str) -> asyncio.Event:
        event = self._events.get(conversation_id)
        if event is None:
            event = self._events[conversation_id] = asyncio.Event()
        return event

    def publish(self, conversation_id: str) -> None:
        """Wake this conversation's listeners here and, on PostgreSQL, on every other instance.
        Call it once the change is committed."""
        self._wake(conversation_id)
        for relay in self._relays:
            relay(conversation_id)
        if self._bridge is not None:
            self._bridge.send(conversation_id)

    def relay(self, to: Callable[[str], None]) -> None:
        """Also hand every publish to ``to``: a worker process of ``serve`` hands its publishes
        to its HTTP process, which publishes them there (its streams, and on PostgreSQL the other
        instances)."""
        self._relays.append(to)

    def _wake(self, conversation_id: str) -> None:
        for key in (conversation_id, ANY_CONVERSATION):
            event = self._events.pop(key, None)
            if event is not None:
                event.set()

    def _wake_all(self) -> None:
        """After a (re)connect: publishes made while nobody listened are lost, so re-read all."""
        events, self._events = self._events, weakref.WeakValueDictionary()
        for event in list(events.values()):
            event.set()

    @staticmethod
    async def wait(ticket: asyncio.Event, timeout_s: float) -> bool:
        """True if the conversation was published since the ticket was taken."""
        try:
            await asyncio.wait_for(ticket.wait(), timeout_s)
            return True
        except TimeoutError:
            return False


class _Frontier:
    """How far the watcher has read. PostgreSQL hands out ids at insert but transactions commit in
    any order, so a row with a lower id can appear after a higher one was read: the ids skipped
    over are kept as holes and looked for again until ``HOLE_TTL_S`` (most are ids no row will
    ever have: a rolled-back insert, or a redelivery's ``ON CONFLICT DO NOTHING``)."""

    def __init__(self, last: int) -> None:
        self.last = last
        self._holes: dict[int, float] = {}  # id -> when first missed (monotonic)

    @property
    def holes(self) -> list[int]:
        return list(self._holes)

    def advance(self, seen: list[int], now: float) -> None:
        for message_id in seen:
            self._holes.pop(message_id, None)
        newest = max(seen, default=self.last)
        if newest > self.last:
            found = set(seen)
            for missing in range(max(self.last + 1, newest - MAX_HOLES), newest):
                if missing not in found:
                    self._holes[missing] = now
            self.last = newest
        expired = [hole for hole, since in self._holes.items() if now - since > HOLE_TTL_S]
        for hole in expired:
            del self._holes[hole]
        while len(self._holes) > MAX_HOLES:  # dicts keep insertion order: the oldest go first
            del self._holes[next(iter(self._holes))]
