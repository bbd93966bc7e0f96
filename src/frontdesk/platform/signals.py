"""In-process wake-ups for live views (web chat streams, the terminal chat).

A signal carries no data: listeners re-read the store, which stays the source of truth. That is
why the same listeners also poll on a timer: a reply written by another instance is found by
the poll (PostgreSQL LISTEN/NOTIFY can replace the timer later without changing listeners).
Take the ticket *before* reading the store, so a publish between the read and the wait counts.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from frontdesk.platform.store.engine import Database


class ConversationSignals:
    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    async def start(self, db: Database) -> None:
        """Begin receiving other instances' publishes (nothing to do in one process)."""

    async def close(self) -> None:
        """Stop receiving other instances' publishes."""

    def ticket(self, conversation_id: str) -> asyncio.Event:
        return self._events.setdefault(conversation_id, asyncio.Event())

    def publish(self, conversation_id: str) -> None:
        event = self._events.pop(conversation_id, None)
        if event is not None:
            event.set()

    @staticmethod
    async def wait(ticket: asyncio.Event, timeout_s: float) -> bool:
        """True if the conversation was published since the ticket was taken."""
        try:
            await asyncio.wait_for(ticket.wait(), timeout_s)
            return True
        except TimeoutError:
            return False
