"""The turn assembler (invariant 5): one agent run per burst, one more per mid-turn arrival.

``process(conversation_id)`` is the ``process_conversation`` job. It takes the conversation's
lease (losers return at once and leave their rows for the winner). If the conversation is not
quiet yet (``ingestion/quiet_window.py``) or a pending media row is still being prepared, it does
not sleep on a worker: it re-queues itself for the moment the window closes. Otherwise it runs
one turn over every unanswered customer message: collect (``batch.py``), generate (reasoning
returns an ``AgentRun`` and writes nothing), commit one ``TurnRecord`` under the lease fence
(``commit.py``), deliver; then it drains: rows that arrived mid-turn get the same treatment.
After releasing the lease it looks once more, so a message whose job lost the race in the
instant before release is not stranded.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal
from zoneinfo import ZoneInfoNotFoundError

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.context.conversation import ContextLoader
from frontdesk.errors import ConfigError
from frontdesk.ingestion.ingest import arrived, queue_turn, reopened
from frontdesk.ingestion.lease import ConversationLease
from frontdesk.ingestion.quiet_window import Defer, QuietWindow, Ready
from frontdesk.output.blocks import text_blocks
from frontdesk.output.delivery import Deliverer, Finish
from frontdesk.platform.clock import Clock
from frontdesk.platform.ids import new_id
from frontdesk.platform.jobs import JobQueue, RetryLater
from frontdesk.platform.model_budget import Claimed, ModelBudget, Spent
from frontdesk.platform.observability import DEFERRED, observe_turn, stage, turn_outcome
from frontdesk.platform.observability.tracing import ASSEMBLE, CONTEXT
from frontdesk.platform.store.engine import Database, unsynced_update
from frontdesk.platform.store.schema import Message, Task, TurnTrace
from frontdesk.platform.workers import run_to_completion
from frontdesk.reasoning.agent import Agent, AgentRun, ModelOutage, understood_nothing
from frontdesk.reasoning.loop import FALLBACK_TEXT, GenerationResult, Outcome
from frontdesk.reasoning.turn import Turn, TurnMessage
from frontdesk.turns.batch import Batch, Thread, history_of, turn_message, unanswered, unanswered_with_thread
from frontdesk.turns.commit import Committed, LeaseLost, TurnCommitter
from frontdesk.turns.record import TurnRecord
from frontdesk.turns.recovery import recover_dead_worker

log = logging.getLogger(__name__)

# A vendor's Retry-After is honoured up to this: the customer is waiting, and the job's attempts
# are few, so an hour-long "come back later" becomes the hold message sooner.
MAX_RETRY_AFTER_S = 60.0


@dataclass(frozen=True)
class Attempt:
    """Which run of the conversation's job this is. A model outage before the turn did anything is
    left to the job's retries (with backoff) until the last one, which sends the hold message."""

    number: int = 1
    of: int = 1

    @property
    def last(self) -> bool:
        return self.number >= self.of


# Every turn's last write, built once.
_RECORD_TIMINGS = (
    unsynced_update(TurnTrace)
    .where(TurnTrace.id == bindparam("trace"))
    .values(finished_at=bindparam("finished"), latency_ms=bindparam("latency"))
)

# How a collecting transaction holds the lease: takes it, renews it, or holds it since the moment
# its last commit's fence settled.
TAKE: Final = "take"
RENEW: Final = "renew"
LeaseStep = Literal["take", "renew"] | datetime


@dataclass(frozen=True)
class Collected:
    """What a collecting transaction found under the lease: a batch, when to look again, or nothing."""

    found: Batch | Defer | None


class TurnAssembler:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        lease: ConversationLease,
        agent: Agent,
        loader: ContextLoader,
        committer: TurnCommitter,
        deliverer: Deliverer,
        queue: JobQueue,
        quiet: QuietWindow,
        model_outage_budget_s: float = 90.0,
        budget: ModelBudget | None = None,
    ) -> None:
        self._db = db
        self._queue = queue
        self._clock = clock
        self._lease = lease
        self._agent = agent
        self._loader = loader
        self._committer = committer
        self._deliverer = deliverer
        self._quiet = quiet
        self._model_outage_budget_s = model_outage_budget_s
        self._budget = budget if budget is not None and budget.enabled else None

    async def process(self, conversation_id: str, owner: str, attempt: Attempt = Attempt()) -> int:
        """Run every turn this conversation is ready for now. Returns how many turns ran here.
        Raises ``RetryLater`` when the model is down and ``attempt`` is not the last."""
        turns = 0
        while True:
            taken = await self._collect(conversation_id, owner, TAKE)
            if taken is None:
                return turns
            collected = taken.found
            defer: Defer | None = None
            released = False
            try:
                async with self._lease.kept_alive(conversation_id, owner):
                    while True:
                        if isinstance(collected, Defer) and collected.seconds == 0:
                            # Quiet by now but not at ``settled`` (a slow delivery after the last
                            # turn): settle again rather than going round the job queue.
                            renewed = await self._collect(conversation_id, owner, RENEW)
                            if renewed is None:
                                raise LeaseLost(conversation_id)
                            collected = renewed.found
                        if isinstance(collected, Defer):
                            defer = collected
                            break
                        if collected is None:
                            break
                        conversation = collected.thread.conversation
                        with observe_turn(conversation_id, conversation.tenant_id, batch_size=len(collected.rows)):
                            next_settled = await self._run_turn(collected, owner, attempt)
                        turns += 1
                        if next_settled is None:  # nothing waits: the turn let the lease go with its delivery
                            released = True
                            break
                        after = await self._collect(conversation_id, owner, next_settled)
                        collected = after.found if after is not None else None
            except LeaseLost:
                log.warning("lease on %s lost mid-turn by %s; reply discarded", conversation_id, owner)
                return turns
            finally:
                if not released:
                    await self._lease.release(conversation_id, owner)
            if released:
                return turns
            if defer is not None:
                if defer.media and await self._media_landed(defer.media):
                    # It landed while we were deciding to wait for it: the turn its readiness
                    # queued may have found our lease still held and gone, so look again now.
                    continue
                await self._come_back(conversation_id, defer.seconds)
                return turns
            async with self._db.read() as session:
                if not await unanswered(session, conversation_id):
                    return turns

    async def _media_landed(self, message_ids: tuple[int, ...]) -> bool:
        async with self._db.read() as session:
            landed = select(Message.id).where(Message.id.in_(message_ids), Message.status != "pending")
            return await session.scalar(landed.limit(1)) is not None

    async def _come_back(self, conversation_id: str, delay_s: float) -> None:
        async with self._db.transaction() as session:
            await queue_turn(self._queue, session, conversation_id, delay_s=delay_s)
        self._queue.notify()

    async def recover_dead_worker(self, worker: str) -> tuple[int, int]:
        """(jobs queued again, leases let go) of a worker known to be dead (``turns/recovery.py``)."""
        return await recover_dead_worker(self._lease, self._queue, worker)

    # -- collecting a batch

    async def _collect(self, conversation_id: str, owner: str, lease: LeaseStep) -> Collected | None:
        """Take or renew the lease (or hold it, settled at ``lease``), then read the batch to answer
        now with its thread and history, and claim the model's budget for it: one transaction.
        None when the lease is not ours."""
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
            answers = thread is not None and thread.conversation.ai_enabled
            ready = self._quiet.judge(rows, settled, self._clock.now()) if answers else None
            history: tuple[TurnMessage, ...] = ()
            claim: Claimed | Spent | None = None
            if isinstance(ready, Ready) and thread is not None:
                history = await history_of(session, conversation_id)
                claim = await self._claim(session, thread, rows)
        if not rows or thread is None:
            return Collected(None)
        if not thread.conversation.ai_enabled:
            fresh = [r for r in rows if not reopened(r)]  # late media was answered once already
            if fresh and await self._handed_off_while_answering(conversation_id, fresh[0]):
                # The hand-off committed but the turn's reply did not (a crash, a lost lease):
                # these rows still get the courtesy reply, never silence.
                async with self._db.read() as session:
                    history = await history_of(session, conversation_id)
                return Collected(Batch(thread, rows, {"courtesy_after_handoff": True}, history, courtesy=True))
            await self._mark_seen_without_reply(conversation_id)
            return Collected(None)
        if not isinstance(ready, Ready):
            return Collected(ready)
        return Collected(Batch(thread, rows, ready.as_trace(), history, claim=claim))

    async def _claim(self, session: AsyncSession, thread: Thread, rows: list[Message]) -> Claimed | Spent | None:
        """The tenant's model budget for a batch the model will read (None: no budget, or no model)."""
        if self._budget is None or understood_nothing([turn_message(m) for m in rows]):
            return None
        tenant = thread.row.tenant
        try:
            zone = self._agent.zone_of(tenant.pack, tenant.policy or {})
        except (ConfigError, ZoneInfoNotFoundError, ValueError):
            # A pack or a stored policy that no longer works: the agent fails the same way before
            # asking the model, and the customer gets the hold message (never silence).
            return None
        return await self._budget.claim_in(session, tenant.id, zone)

    async def _handed_off_while_answering(self, conversation_id: str, oldest: Message) -> bool:
        async with self._db.read() as session:
            found = await session.scalar(
                select(Task.id)
                .where(
                    Task.conversation_id == conversation_id,
                    Task.kind == "handoff",
                    Task.status == "open",
                    Task.created_at >= oldest.created_at,
                )
                .limit(1)
            )
        return found is not None

    async def _mark_seen_without_reply(self, conversation_id: str) -> None:
        """A human has this thread: customer rows are consumed without an agent turn."""
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

    # -- running a turn

    async def _run_turn(self, batch: Batch, owner: str, attempt: Attempt) -> datetime | None:
        """Answer ``batch``. Returns the settled moment read in the commit's fence, or None when
        no message waited at the end and the lease was released with the delivery."""
        started_at = self._clock.now()
        t0 = time.monotonic()
        run = await self._generate(batch, attempt)
        record = TurnRecord.of(run, batch, worker=owner, started_at=started_at, model=self._agent.model_name)
        generation_ms = (time.monotonic() - t0) * 1000

        # Once the model has answered, committing and delivering take milliseconds: a shutdown
        # waits for them rather than leaving a committed reply with its receipt stuck at "sending".
        async def commit_and_deliver() -> datetime | None:
            t1 = time.monotonic()
            async with self._db.transaction() as session:
                committed = await self._committer.commit(session, record, batch.target)
            commit_ms = (time.monotonic() - t1) * 1000
            t2 = time.monotonic()
            released = False

            async def record_timings(session: AsyncSession, status: str) -> None:
                nonlocal released
                # In the delivery's final transaction (its last part's commit is not counted).
                latency = {
                    **batch.waits,
                    "generation_ms": round(generation_ms, 2),
                    "commit_ms": round(commit_ms, 2),
                    "delivery_ms": round((time.monotonic() - t2) * 1000, 2),
                    "total_ms": round((self._clock.now() - batch.rows[0].created_at).total_seconds() * 1000, 2),
                    "delivery_status": status,
                }
                timings = {"trace": committed.trace_id, "finished": self._clock.now(), "latency": latency}
                await session.execute(_RECORD_TIMINGS, timings)
                # Held until the reply is out, so that the next turn's reply can never overtake it.
                released = await self._lease.release_if_answered(session, record.conversation_id, owner)

            await self._deliver(committed, record_timings)
            return None if released else committed.settled

        return await run_to_completion(commit_and_deliver())

    async def _deliver(self, committed: Committed, then: Finish) -> None:
        """Send the committed reply; ``then`` runs in its final transaction (or in one of its own
        when there was nothing to send)."""
        if committed.staged is not None:
            await self._deliverer.deliver(committed.staged, then=then)
        else:
            async with self._db.transaction() as session:
                await then(session, "not_sent")

    async def _generate(self, batch: Batch, attempt: Attempt) -> AgentRun:
        """Reasoning's answer to ``batch``: a value, never a write. A model outage is left to the
        job's retries (``RetryLater``) while the customer can still wait; after that, and on any
        other failure, the answer is the hold message, and the trace says why."""
        conversation = batch.thread.conversation
        with stage(CONTEXT):
            # The conversation's row came with the batch; its open tasks and ledgers are read now.
            async with self._db.read() as session:
                context = await self._loader.complete(session, batch.thread.row, self._clock.now())
        with stage(ASSEMBLE) as span:
            turn = Turn(
                tenant_id=conversation.tenant_id,
                business_name=batch.thread.tenant_name,
                conversation_id=conversation.id,
                batch=tuple(turn_message(m) for m in batch.rows),
                history=batch.history,
                channel_account_id=conversation.channel_account_id,
                run_key=new_id("run"),
            )
            span.set_attribute("frontdesk.history_messages", len(turn.history))
        try:
            async with self._deliverer.typing_while(batch.target):
                if batch.courtesy:
                    return await self._agent.courtesy_after_handoff(turn, context)
                spent = batch.claim if isinstance(batch.claim, Spent) else None
                return await self._agent.generate(turn, context, spent=spent)
        except ModelOutage as outage:  # nothing done, nothing said yet: the job may ask again later
            if self._budget is not None and isinstance(batch.claim, Claimed):
                await self._budget.give_back(batch.claim)  # unanswered, it costs nothing; a retry claims again
            waited_s = (self._clock.now() - min(map(arrived, batch.rows))).total_seconds()
            # The wait counts the quiet window and any queue, so a backlog alone must not turn the
            # first failure into the hold message: the first attempt is always retried.
            within_budget = attempt.number == 1 or waited_s < self._model_outage_budget_s
            if not attempt.last and within_budget:
                retry_after = outage.error.retry_after
                after_s = min(retry_after, MAX_RETRY_AFTER_S) if retry_after else None
                turn_outcome(DEFERRED)
                raise RetryLater(f"model unavailable: {outage.error.message}", after_s=after_s) from outage
            run = outage.hold
            waited = "" if within_budget else f" (the customer has waited {waited_s:.0f} s)"
            run.result.detail = (
                f"model unavailable on attempt {attempt.number} of {attempt.of}{waited}: {outage.error.message}"
            )
            return run
        except Exception as exc:  # the customer still gets a holding reply; the trace says why
            log.exception("turn for %s failed", conversation.id)
            failed = GenerationResult(
                Outcome.FALLBACK, text_blocks(FALLBACK_TEXT), detail=f"error: {exc}"[:2000], hold=True
            )
            return AgentRun(failed)
