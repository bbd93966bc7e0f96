"""The turn's store on the database (``turns/ports.py``'s ``TurnStore``): SQLite or PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from datetime import datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfoNotFoundError

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.context.conversation import ContextLoader, ConversationContext
from frontdesk.errors import ConfigError
from frontdesk.ingestion.ingest import queue_turn
from frontdesk.ingestion.lease import ConversationLease
from frontdesk.ingestion.quiet_window import Ready
from frontdesk.output.delivery import Deliverer
from frontdesk.output.rendering import DeliveryTarget
from frontdesk.platform.clock import Clock
from frontdesk.platform.jobs import JobQueue
from frontdesk.platform.model_budget import Claimed, ModelBudget, Spent
from frontdesk.platform.store.engine import Database, unsynced_update
from frontdesk.platform.store.schema import Message, Task, TurnTrace
from frontdesk.reasoning.agent import understood_nothing
from frontdesk.reasoning.turn import TurnMessage
from frontdesk.turns.batch import Thread, history_of, turn_message, unanswered, unanswered_with_thread
from frontdesk.turns.commit import Committed, TurnCommitter
from frontdesk.turns.ports import RENEW, TAKE, Found, Judge, Latency, LeaseStep
from frontdesk.turns.record import TurnRecord

# The tenant's clock, for the model budget's windows (``Agent.zone_of``).
ZoneOf = Callable[[str, Mapping[str, Any]], tzinfo]

# Every turn's last write, built once.
_RECORD_TIMINGS = (
    unsynced_update(TurnTrace)
    .where(TurnTrace.id == bindparam("trace"))
    .values(finished_at=bindparam("finished"), latency_ms=bindparam("latency"))
)


class SqlTurnStore:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        lease: ConversationLease,
        loader: ContextLoader,
        committer: TurnCommitter,
        deliverer: Deliverer,
        queue: JobQueue,
        budget: ModelBudget | None = None,
        zone_of: ZoneOf | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self._lease = lease
        self._loader = loader
        self._committer = committer
        self._deliverer = deliverer
        self._queue = queue
        self._budget = budget if budget is not None and budget.enabled and zone_of is not None else None
        self._zone_of = zone_of

    def kept_alive(self, conversation_id: str, owner: str) -> AbstractAsyncContextManager[None]:
        return self._lease.kept_alive(conversation_id, owner)

    async def collect(self, conversation_id: str, owner: str, lease: LeaseStep, judge: Judge) -> Found | None:
        async with self._db.transaction() as session:
            if lease == TAKE:
                settled = await self._lease.take(session, conversation_id, owner)
            elif lease == RENEW:
                settled = await self._lease.extend(session, conversation_id, owner)
            else:
                settled = lease
            if settled is None:
                return None
            rows, thread = await unanswered_with_thread(session, conversation_id)
            if thread is None:
                return Found(rows, None, None)
            ready = judge(rows, thread, settled)
            if not isinstance(ready, Ready):
                return Found(rows, thread, ready)
            history = await history_of(session, conversation_id)
            return Found(rows, thread, ready, history, await self._claim(session, thread, rows))

    async def _claim(self, session: AsyncSession, thread: Thread, rows: list[Message]) -> Claimed | Spent | None:
        """The tenant's model budget for a batch the model will read (None: no budget, or no model)."""
        if self._budget is None or self._zone_of is None or understood_nothing([turn_message(m) for m in rows]):
            return None
        tenant = thread.row.tenant
        try:
            zone = self._zone_of(tenant.pack, tenant.policy or {})
        except (ConfigError, ZoneInfoNotFoundError, ValueError):
            # A pack or a stored policy that no longer works: the agent fails the same way before
            # asking the model, and the customer gets the hold message (never silence).
            return None
        return await self._budget.claim_in(session, tenant.id, zone)

    async def release(self, conversation_id: str, owner: str) -> None:
        await self._lease.release(conversation_id, owner)

    async def context(self, thread: Thread, now: datetime) -> ConversationContext:
        # The conversation's row came with the batch; its open tasks and ledgers are read now.
        async with self._db.read() as session:
            return await self._loader.complete(session, thread.row, now)

    async def commit(self, record: TurnRecord, target: DeliveryTarget) -> Committed:
        async with self._db.transaction() as session:
            return await self._committer.commit(session, record, target)

    async def deliver(self, committed: Committed, conversation_id: str, owner: str, latency: Latency) -> bool:
        released = False

        async def finish(session: AsyncSession, status: str) -> None:
            nonlocal released
            timings = {"trace": committed.trace_id, "finished": self._clock.now(), "latency": latency(status)}
            await session.execute(_RECORD_TIMINGS, timings)
            # Held until the reply is out, so that the next turn's reply can never overtake it.
            released = await self._lease.release_if_answered(session, conversation_id, owner)

        if committed.staged is not None:
            await self._deliverer.deliver(committed.staged, then=finish)
        else:
            async with self._db.transaction() as session:
                await finish(session, "not_sent")
        return released

    async def give_back(self, claim: Claimed) -> None:
        if self._budget is not None:
            await self._budget.give_back(claim)

    async def waiting(self, conversation_id: str) -> bool:
        async with self._db.read() as session:
            return bool(await unanswered(session, conversation_id))

    async def media_landed(self, message_ids: tuple[int, ...]) -> bool:
        async with self._db.read() as session:
            landed = select(Message.id).where(Message.id.in_(message_ids), Message.status != "pending")
            return await session.scalar(landed.limit(1)) is not None

    async def come_back(self, conversation_id: str, delay_s: float) -> None:
        async with self._db.transaction() as session:
            await queue_turn(self._queue, session, conversation_id, delay_s=delay_s)
        self._queue.notify()

    async def handed_off_since(self, conversation_id: str, since: datetime) -> bool:
        async with self._db.read() as session:
            found = await session.scalar(
                select(Task.id)
                .where(
                    Task.conversation_id == conversation_id,
                    Task.kind == "handoff",
                    Task.status == "open",
                    Task.created_at >= since,
                )
                .limit(1)
            )
        return found is not None

    async def history(self, conversation_id: str) -> tuple[TurnMessage, ...]:
        async with self._db.read() as session:
            return await history_of(session, conversation_id)

    async def mark_seen_without_reply(self, conversation_id: str) -> None:
        async with self._db.transaction() as session:
            await session.execute(
                unsynced_update(Message)
                .where(
                    Message.conversation_id == conversation_id,
                    Message.role == "user",
                    Message.processed_at.is_(None),
                )
                .values(processed_at=self._clock.now())
            )
