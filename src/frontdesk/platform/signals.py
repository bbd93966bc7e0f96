"""Wake-ups for live views (web chat streams, console threads, the terminal chat).

A signal carries no data: listeners re-read the store, which stays the source of truth. Take the
ticket *before* reading the store, so a publish between the read and the wait counts.

In one process a publish sets the waiting tickets directly. On PostgreSQL it also NOTIFYs the
``frontdesk_conversation`` channel (payload: the conversation id), and ``start`` LISTENs on it
over one dedicated connection, so a reply written by another instance wakes this one's streams at
once. Publishers call ``publish`` after the transaction that wrote the change has committed, so a
woken listener always finds the rows. Listeners keep polling on a timer as well: it covers a
dropped LISTEN connection (the bridge reconnects with backoff and wakes everyone once it is back)
and SQLite, where several processes (``frontdesk chat`` beside ``frontdesk demo``) share a file.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import URL

from frontdesk.platform.pg_notify import BridgeTiming, PgNotifyBridge

if TYPE_CHECKING:
    from frontdesk.platform.store.engine import Database

CONVERSATION_CHANNEL = "frontdesk_conversation"


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
    def __init__(self, *, channel: str = CONVERSATION_CHANNEL, timing: BridgeTiming | None = None) -> None:
        self._events: dict[str, asyncio.Event] = {}
        self._channel = channel
        self._timing = timing
        self._bridge: PgNotifyBridge | None = None

    async def start(self, db: Database) -> None:
        """On PostgreSQL, begin receiving other instances' publishes (nothing to do on SQLite)."""
        if db.dialect != "postgresql" or self._bridge is not None:
            return
        self._bridge = PgNotifyBridge(
            listen_connect_args(db.engine.url), self._channel, self._wake, self._wake_all, timing=self._timing
        )
        await self._bridge.start()

    async def close(self) -> None:
        """Stop receiving other instances' publishes."""
        if self._bridge is not None:
            await self._bridge.close()
            self._bridge = None

    @property
    def bridge(self) -> PgNotifyBridge | None:
        """The LISTEN/NOTIFY connection, when running on PostgreSQL (for readiness and tests)."""
        return self._bridge

    def ticket(self, conversation_id: str) -> asyncio.Event:
        return self._events.setdefault(conversation_id, asyncio.Event())

    def publish(self, conversation_id: str) -> None:
        """Wake this conversation's listeners here and, on PostgreSQL, on every other instance.
        Call it once the change is committed."""
        self._wake(conversation_id)
        if self._bridge is not None:
            self._bridge.send(conversation_id)

    def _wake(self, conversation_id: str) -> None:
        event = self._events.pop(conversation_id, None)
        if event is not None:
            event.set()

    def _wake_all(self) -> None:
        """After a (re)connect: publishes made while nobody listened are lost, so re-read all."""
        events, self._events = self._events, {}
        for event in events.values():
            event.set()

    @staticmethod
    async def wait(ticket: asyncio.Event, timeout_s: float) -> bool:
        """True if the conversation was published since the ticket was taken."""
        try:
            await asyncio.wait_for(ticket.wait(), timeout_s)
            return True
        except TimeoutError:
            return False
