"""The turn assembler (invariant 5): one agent run per burst, one more per mid-turn arrival.

``process(conversation_id)`` is the ``process_conversation`` job. It takes the conversation's
lease (losers return at once and leave their rows for the winner). If the conversation is not
quiet yet (``ingestion/quiet_window.py``) or a pending media row is still being prepared, it does
not sleep on a worker: it re-queues itself for the moment the window closes. Otherwise it runs
one turn over every unanswered customer message: collect, generate (the responder returns an
``AgentRun`` and writes nothing), commit one ``TurnRecord`` under the lease fence, deliver; then
it drains: rows that arrived mid-turn get the same treatment. After releasing the lease it looks
once more, so a message whose job lost the race in the instant before release is not stranded.

It reads and writes only through its ports (``turns/ports.py``): ``turns/sql_store.py`` in the
service, ``turns/memory.py`` in its unit tests.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from frontdesk.ingestion.ingest import arrived, reopened
from frontdesk.ingestion.quiet_window import Defer, QuietWindow, Ready
from frontdesk.output.blocks import text_blocks
from frontdesk.platform.clock import Clock
from frontdesk.platform.ids import new_id
from frontdesk.platform.jobs import RetryLater
from frontdesk.platform.model_budget import Claimed, Spent
from frontdesk.platform.observability import DEFERRED, observe_turn, stage, turn_outcome
from frontdesk.platform.observability.tracing import ASSEMBLE, CONTEXT
from frontdesk.platform.store.schema import Message
from frontdesk.platform.workers import run_to_completion
from frontdesk.reasoning.agent import AgentRun, ModelOutage
from frontdesk.reasoning.loop import FALLBACK_TEXT, GenerationResult, Outcome
from frontdesk.reasoning.turn import Turn
from frontdesk.turns.batch import Batch, Thread, turn_message
from frontdesk.turns.commit import LeaseLost
from frontdesk.turns.ports import RENEW, TAKE, Collected, LeaseStep, Responder, TurnStore, Typing
from frontdesk.turns.record import TurnRecord

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


class TurnAssembler:
    def __init__(
        self,
        store: TurnStore,
        clock: Clock,
        responder: Responder,
        typing: Typing,
        quiet: QuietWindow,
        model_outage_budget_s: float = 90.0,
    ) -> None:
        self._store = store
        self._clock = clock
        self._responder = responder
        self._typing = typing
        self._quiet = quiet
        self._model_outage_budget_s = model_outage_budget_s

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
                async with self._store.kept_alive(conversation_id, owner):
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
                    await self._store.release(conversation_id, owner)
            if released:
                return turns
            if defer is not None:
                if defer.media and await self._store.media_landed(defer.media):
                    # It landed while we were deciding to wait for it: the turn its readiness
                    # queued may have found our lease still held and gone, so look again now.
                    continue
                await self._store.come_back(conversation_id, defer.seconds)
                return turns
            if not await self._store.waiting(conversation_id):
                return turns

    # -- collecting a batch

    async def _collect(self, conversation_id: str, owner: str, lease: LeaseStep) -> Collected | None:
        """Take or renew the lease (or hold it, settled at ``lease``), then read the batch to answer
        now with its thread and history, and claim the model's budget for it: one transaction.
        None when the lease is not ours."""
        found = await self._store.collect(conversation_id, owner, lease, self._judge)
        if found is None:
            return None
        rows, thread = found.rows, found.thread
        if not rows or thread is None:
            return Collected(None)
        if not thread.conversation.ai_enabled:
            fresh = [r for r in rows if not reopened(r)]  # late media was answered once already
            if fresh and await self._store.handed_off_since(conversation_id, fresh[0].created_at):
                # The hand-off committed but the turn's reply did not (a crash, a lost lease):
                # these rows still get the courtesy reply, never silence.
                history = await self._store.history(conversation_id)
                return Collected(Batch(thread, rows, {"courtesy_after_handoff": True}, history, courtesy=True))
            await self._store.mark_seen_without_reply(conversation_id)
            return Collected(None)
        if not isinstance(found.ready, Ready):
            return Collected(found.ready)
        return Collected(Batch(thread, rows, found.ready.as_trace(), found.history, claim=found.claim))

    def _judge(self, rows: Sequence[Message], thread: Thread, settled: datetime) -> Ready | Defer | None:
        """Answer now, later, or not at all (a person has the thread)."""
        if not thread.conversation.ai_enabled:
            return None
        return self._quiet.judge(rows, settled, self._clock.now())

    # -- running a turn

    async def _run_turn(self, batch: Batch, owner: str, attempt: Attempt) -> datetime | None:
        """Answer ``batch``. Returns the settled moment read in the commit's fence, or None when
        no message waited at the end and the lease was released with the delivery."""
        started_at = self._clock.now()
        t0 = time.monotonic()
        run = await self._generate(batch, attempt)
        model = self._responder.model_name
        record = TurnRecord.of(run, batch, worker=owner, started_at=started_at, model=model)
        generation_ms = (time.monotonic() - t0) * 1000

        # Once the responder has answered, committing and delivering take milliseconds: a shutdown
        # waits for them rather than leaving a committed reply with its receipt stuck at "sending".
        async def commit_and_deliver() -> datetime | None:
            t1 = time.monotonic()
            committed = await self._store.commit(record, batch.target)
            commit_ms = (time.monotonic() - t1) * 1000
            t2 = time.monotonic()

            def latency(status: str) -> dict[str, Any]:
                # Read in the delivery's final transaction (its last part's commit is not counted).
                return {
                    **batch.waits,
                    "generation_ms": round(generation_ms, 2),
                    "commit_ms": round(commit_ms, 2),
                    "delivery_ms": round((time.monotonic() - t2) * 1000, 2),
                    "total_ms": round((self._clock.now() - batch.rows[0].created_at).total_seconds() * 1000, 2),
                    "delivery_status": status,
                }

            released = await self._store.deliver(committed, record.conversation_id, owner, latency)
            return None if released else committed.settled

        return await run_to_completion(commit_and_deliver())

    async def _generate(self, batch: Batch, attempt: Attempt) -> AgentRun:
        """Reasoning's answer to ``batch``: a value, never a write. A model outage is left to the
        job's retries (``RetryLater``) while the customer can still wait; after that, and on any
        other failure, the answer is the hold message, and the trace says why."""
        conversation = batch.thread.conversation
        with stage(CONTEXT):
            context = await self._store.context(batch.thread, self._clock.now())
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
            async with self._typing.typing_while(batch.target):
                if batch.courtesy:
                    return await self._responder.courtesy_after_handoff(turn, context)
                spent = batch.claim if isinstance(batch.claim, Spent) else None
                return await self._responder.generate(turn, context, spent=spent)
        except ModelOutage as outage:  # nothing done, nothing said yet: the job may ask again later
            if isinstance(batch.claim, Claimed):
                await self._store.give_back(batch.claim)  # unanswered, it costs nothing; a retry claims again
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
