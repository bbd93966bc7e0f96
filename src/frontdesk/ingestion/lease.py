"""The per-conversation turn lease (invariant 5), held in the conversation row itself.

A lease is taken when free or expired, renewed while a turn works, and checked again in the
transaction that commits a reply (a fence: a holder whose lease was taken over commits nothing).

Taking or renewing the lease also tells the holder *when* it may judge the conversation quiet.
The ingest stamps a customer message while holding a share lock on the same row (on SQLite, the
write lock), so the clock read just after the lease's UPDATE, still inside its transaction, is a
moment before which every message of the conversation has committed: one stamped earlier but
committed later (a slow transaction under load) cannot make the holder answer half a burst.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import BindParameter, bindparam, exists, or_
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.platform.clock import Clock
from frontdesk.platform.observability import lock_taken_over
from frontdesk.platform.periodic import every
from frontdesk.platform.store.engine import Database, rows_affected, unsynced_update
from frontdesk.platform.store.schema import Conversation, Message

log = logging.getLogger(__name__)


# The statements of every turn are built once and executed with their values (building one cost
# more CPU than SQLite took to run it).
_CONVERSATION: BindParameter[str] = bindparam("conversation")
_OWNER: BindParameter[str] = bindparam("owner")
_TAKE_FREE = (
    unsynced_update(Conversation)
    .where(Conversation.id == _CONVERSATION, or_(Conversation.lock_owner.is_(None), Conversation.lock_owner == _OWNER))
    .values(lock_owner=_OWNER, lock_until=bindparam("until"))
)
_FENCE = (
    unsynced_update(Conversation)
    .where(Conversation.id == _CONVERSATION, Conversation.lock_owner == _OWNER)
    .values(version=Conversation.version + 1, updated_at=bindparam("now"))
    .returning(Conversation.ai_enabled)
)
_WAITING = exists().where(
    Message.conversation_id == _CONVERSATION, Message.role == "user", Message.processed_at.is_(None)
)
_RELEASE_IF_ANSWERED = (
    unsynced_update(Conversation)
    .where(Conversation.id == _CONVERSATION, Conversation.lock_owner == _OWNER, ~_WAITING)
    .values(lock_owner=None, lock_until=None)
)


@dataclass(frozen=True)
class Fenced:
    """The fence held: the settled moment for the next turn (read under the row lock), and
    whether the AI still answers this thread (an operator may have taken it over meanwhile)."""

    settled: datetime
    ai_enabled: bool


class ConversationLease:
    def __init__(self, db: Database, clock: Clock, ttl_s: float) -> None:
        self._db = db
        self._clock = clock
        self.ttl_s = ttl_s

    async def acquire(self, conversation_id: str, owner: str) -> datetime | None:
        """Take the lease. Returns the settled moment (see the module docstring), or None when
        another live holder has it."""
        async with self._db.transaction() as session:
            return await self.take(session, conversation_id, owner)

    async def take(self, session: AsyncSession, conversation_id: str, owner: str) -> datetime | None:
        """``acquire`` in the caller's transaction (a turn reads its batch in the same one)."""
        now = self._clock.now()
        until = now + timedelta(seconds=self.ttl_s)
        # The common case first, in one statement: nobody holds it, or we do already.
        taken = await session.execute(_TAKE_FREE, {"conversation": conversation_id, "owner": owner, "until": until})
        if rows_affected(taken):
            return self._clock.now()
        # Another holder's lease that has run out: it died or stalled (a takeover).
        taken_over = await session.execute(
            unsynced_update(Conversation)
            .where(Conversation.id == conversation_id, Conversation.lock_until < now)
            .values(lock_owner=owner, lock_until=until)
        )
        if rows_affected(taken_over):
            lock_taken_over("conversation")
            return self._clock.now()
        return None

    async def renew(self, conversation_id: str, owner: str) -> datetime | None:
        """Extend the lease. Returns the settled moment, or None when it was lost."""
        async with self._db.transaction() as session:
            return await self.extend(session, conversation_id, owner)

    async def extend(self, session: AsyncSession, conversation_id: str, owner: str) -> datetime | None:
        """``renew`` in the caller's transaction."""
        result = await session.execute(
            unsynced_update(Conversation)
            .where(Conversation.id == conversation_id, Conversation.lock_owner == owner)
            .values(lock_until=self._clock.now() + timedelta(seconds=self.ttl_s))
        )
        return self._clock.now() if rows_affected(result) else None

    async def release(self, conversation_id: str, owner: str) -> None:
        async with self._db.transaction() as session:
            await session.execute(
                unsynced_update(Conversation)
                .where(Conversation.id == conversation_id, Conversation.lock_owner == owner)
                .values(lock_owner=None, lock_until=None)
            )

    async def release_all_of(self, worker: str) -> int:
        """Let go of every lease a worker known to be dead held (``serve`` saw its worker process
        exit): its turns are answered by the next job at once, not when the leases run out. Safe
        because a dead process commits nothing, and its fence would refuse it anyway."""
        async with self._db.transaction() as session:
            result = await session.execute(
                unsynced_update(Conversation)
                .where(Conversation.lock_owner.startswith(f"{worker}/", autoescape=True))
                .values(lock_owner=None, lock_until=None)
            )
        return rows_affected(result)

    async def fence(self, session: AsyncSession, conversation_id: str, owner: str) -> Fenced | None:
        """In the caller's transaction (a turn's commit): bump the conversation row if ``owner``
        still holds the lease, which locks it until the commit. None when the lease was taken over
        (the caller must commit nothing)."""
        held = {"conversation": conversation_id, "owner": owner, "now": self._clock.now()}
        fenced = (await session.execute(_FENCE, held)).first()
        return None if fenced is None else Fenced(self._clock.now(), bool(fenced.ai_enabled))

    async def release_if_answered(self, session: AsyncSession, conversation_id: str, owner: str) -> bool:
        """In the caller's transaction (a turn's last one): let the lease go when no customer
        message waits, saving the holder a transaction to release it and two reads to find there
        is nothing more. A message committed after this read queues a job of its own (the ingest's
        enqueue finds this job running, not queued), so it is never left behind. Returns whether
        the lease was released."""
        released = await session.execute(_RELEASE_IF_ANSWERED, {"conversation": conversation_id, "owner": owner})
        return rows_affected(released) > 0

    @contextlib.asynccontextmanager
    async def kept_alive(self, conversation_id: str, owner: str) -> AsyncIterator[None]:
        """Renew the lease every third of its TTL while the body runs."""

        async def renew() -> bool:
            if await self.renew(conversation_id, owner) is not None:
                return True
            log.warning("lease on %s lost by %s", conversation_id, owner)
            return False

        async with every(self.ttl_s / 3, renew, what=f"lease renewal of {conversation_id}"):
            yield
