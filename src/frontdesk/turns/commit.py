"""Committing a ``TurnRecord``: one write transaction, under the lease fence.

The fence comes first: the conversation row is updated only if this worker still holds its
lease, which also locks the row, so no other turn of the conversation commits meanwhile and the
clock read just after it is the next turn's settled moment. Then, in order: whether an operator
took the thread over while the reply was being written, the trace, what the turn learned
(ledgers, refused drafts, a due memory refresh), the hold's task or the budget notice, the
processed marks (refused if another turn answered the rows meanwhile), late media opened again,
and the reply staged with its receipt. Any refusal rolls all of it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.context.ledgers import LedgerStore
from frontdesk.context.summarizer import SUMMARIZE_CONVERSATION
from frontdesk.humans import hold_for_team, open_tasks
from frontdesk.humans.model_budget import hold_for_budget
from frontdesk.ingestion.ingest import reopen_late_media
from frontdesk.ingestion.lease import ConversationLease
from frontdesk.output.delivery import Deliverer, StagedReply
from frontdesk.output.rendering import DeliveryTarget
from frontdesk.platform.clock import Clock
from frontdesk.platform.jobs import JobQueue
from frontdesk.platform.observability import turn_outcome
from frontdesk.platform.store.engine import rows_affected, unsynced_update
from frontdesk.platform.store.schema import ClaimRejection, Message, Tenant, TurnTrace
from frontdesk.reasoning.loop import Outcome
from frontdesk.turns.record import Reply, TurnRecord


class LeaseLost(Exception):
    """Our lease was taken over while we worked; the new holder answers instead."""


_TRACES = cast(Table, TurnTrace.__table__)
_INSERT_TRACE = insert(_TRACES).returning(_TRACES.c.id)
# Every turn marks its batch answered: built once, executed with the batch's ids.
_MARK_ANSWERED = (
    unsynced_update(Message)
    .where(Message.id.in_(bindparam("batch", expanding=True)), Message.processed_at.is_(None))
    .values(processed_at=bindparam("now"), turn_id=bindparam("turn"))
)


@dataclass(frozen=True)
class Committed:
    trace_id: int
    settled: datetime  # read under the fence's row lock (see ConversationLease)
    reply: Reply
    staged: StagedReply | None  # None: nothing to send


class TurnCommitter:
    def __init__(
        self, clock: Clock, lease: ConversationLease, ledgers: LedgerStore, queue: JobQueue, deliverer: Deliverer
    ) -> None:
        self._clock = clock
        self._lease = lease
        self._ledgers = ledgers
        self._queue = queue
        self._deliverer = deliverer

    async def commit(self, session: AsyncSession, record: TurnRecord, target: DeliveryTarget) -> Committed:
        """Write ``record`` in the caller's transaction. Raises ``LeaseLost`` (the caller rolls
        back) when the lease was taken over or another turn answered the batch meanwhile."""
        conversation_id = record.conversation_id
        fenced = await self._lease.fence(session, conversation_id, record.worker)
        if fenced is None:
            raise LeaseLost(conversation_id)
        result = record.result
        reply = Reply.of(record, fenced.ai_enabled)
        connection = await session.connection()  # Core: the ORM's unit of work costs more than the insert
        trace_id: int = (await connection.execute(_INSERT_TRACE, self._trace(record, reply))).scalar_one()
        await self._learned(session, record, trace_id)
        if record.budget_spent is not None:
            await hold_for_budget(
                session,
                tenant_id=record.tenant_id,
                conversation_id=conversation_id,
                spent=record.budget_spent,
                turn_id=trace_id,
                now=self._clock.now(),
            )
        elif reply.outcome == Outcome.FALLBACK and result.hold:
            await self._hold_for_team(session, record, trace_id)
        answered = await session.execute(
            _MARK_ANSWERED, {"batch": list(record.batch_ids), "now": self._clock.now(), "turn": trace_id}
        )
        if rows_affected(answered) != len(record.batch_ids):  # another turn answered them meanwhile
            raise LeaseLost(conversation_id)
        if fenced.ai_enabled:  # (handed off in this very turn: the person reads it in the console)
            await self._reopen_media_ready_meanwhile(session, record, trace_id)
        turn_outcome(reply.outcome.value, steps=result.steps)  # counted once it is this turn's for sure
        staged = None
        if reply.blocks:
            staged = await self._deliverer.stage(session, target, reply.blocks, turn_id=trace_id, origin="agent")
        return Committed(trace_id, fenced.settled, reply, staged)

    def _trace(self, record: TurnRecord, reply: Reply) -> dict[str, Any]:
        """The trace row's columns."""
        result = record.result
        return {
            "conversation_id": record.conversation_id,
            "worker": record.worker,
            "started_at": record.started_at,
            "batch_size": len(record.batch_ids),
            "batch_span_ms": record.batch_span_ms,
            "model": record.model,
            "steps": result.steps,
            "tool_calls": result.tool_calls,
            "usage": result.usage,
            "latency_ms": {},  # filled in by the delivery's last transaction
            "outcome": reply.outcome.value,
            "detail": reply.detail,
            "route": dict(record.route),
            "tools_offered": list(record.tools_offered),
            "prefix_hash": record.prefix_hash,
            "prompt_size": dict(record.prompt_size),
            "claims": result.claims,
        }

    async def _learned(self, session: AsyncSession, record: TurnRecord, turn_id: int) -> None:
        """What the turn learned: ledger entries, the gate's refused drafts, a due memory refresh."""
        if record.ledgers is not None:
            await self._ledgers.save(session, record.conversation_id, record.ledgers)
        for rejection in record.result.rejections:
            session.add(
                ClaimRejection(
                    conversation_id=record.conversation_id,
                    turn_id=turn_id,
                    attempt=rejection["attempt"],
                    claims=rejection["claims"],
                    failures=rejection["failures"],
                    reply_text=rejection["reply_text"],
                    created_at=self._clock.now(),
                )
            )
        if record.memory_due:
            await self._queue.enqueue(
                session,
                SUMMARIZE_CONVERSATION,
                {"conversation_id": record.conversation_id},
                key=f"episodic:{record.conversation_id}",
                coalesce=True,
            )

    async def _hold_for_team(self, session: AsyncSession, record: TurnRecord, turn_id: int) -> None:
        """The hold message says a person will reply: give a person the task, with the refused
        draft and why (unless a person has the thread already)."""
        if await open_tasks(session, record.conversation_id, "handoff"):
            return
        tenant = await session.get(Tenant, record.tenant_id)
        language = str((tenant.policy or {}).get("operator_language", "en")) if tenant is not None else "en"
        result = record.result
        last = result.rejections[-1] if result.rejections else {}
        reasons = [f"{f['rule']}: {f['reason']}" for f in last.get("failures", [])] or [result.detail or "no answer"]
        await hold_for_team(
            session,
            tenant_id=record.tenant_id,
            conversation_id=record.conversation_id,
            operator_language=language,
            draft=str(last.get("reply_text", "")),
            reasons=reasons,
            turn_id=turn_id,
            now=self._clock.now(),
        )

    async def _reopen_media_ready_meanwhile(self, session: AsyncSession, record: TurnRecord, turn_id: int) -> None:
        """Media that was pending when the batch was collected (the gate gave up waiting) and is
        ready by now was answered as its placeholder: open it again for a turn that reads it.
        ``Ingestor.mark_ready`` does the same when it lands after this commit."""
        late = record.pending_media_ids
        if not late:
            return
        ready = select(Message).where(Message.id.in_(late), Message.status == "ready")
        for message in await session.scalars(ready):
            reopen_late_media(message, turn_id, self._clock.now())
