"""The turn assembler (invariant 5): one agent run per burst, one more per mid-turn arrival.

``process(conversation_id)`` is the ``process_conversation`` job. It takes the conversation's
lease (losers return at once and leave their rows for the winner). If the conversation is not
quiet yet (the last message is younger than the quiet window) or a pending media row is still
being prepared, it does not sleep on a worker: it re-queues itself for the moment the window
closes (bounded by the cap and the media timeout, both counted from the stored messages, so any
instance reaches the same decision). Otherwise it runs one turn over every unprocessed customer
message, commits the reply under the lease fence, delivers it, and drains: rows that arrived
mid-turn get the same treatment. After releasing the lease it looks once more, so a message
whose job lost the race in the instant before release is not stranded.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, exists, func, literal, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.context.budget import drop_partial_first_turn
from frontdesk.humans import hold_for_team, open_tasks
from frontdesk.humans.model_budget import hold_for_budget
from frontdesk.ingestion.ingest import (
    CONVERSATION_JOB_KEY_PREFIX,
    ai_answers,
    arrived,
    queue_turn,
    reopen_late_media,
    reopened,
)
from frontdesk.ingestion.lease import ConversationLease
from frontdesk.output.blocks import blocks_adapter, text_blocks
from frontdesk.output.delivery import Deliverer
from frontdesk.output.rendering import DeliveryTarget
from frontdesk.platform.clock import Clock
from frontdesk.platform.ids import new_id
from frontdesk.platform.jobs import DEAD, QUEUED, RUNNING, JobQueue, RetryLater
from frontdesk.platform.observability import DEFERRED, observe_turn, stage, turn_outcome
from frontdesk.platform.observability.tracing import ASSEMBLE
from frontdesk.platform.store.engine import Database, rows_affected
from frontdesk.platform.store.schema import ChannelAccount, Contact, Conversation, Job, Message, Task, Tenant, TurnTrace
from frontdesk.platform.workers import run_to_completion
from frontdesk.reasoning.agent import Agent, AgentRun, ModelOutage
from frontdesk.reasoning.loop import FALLBACK_TEXT, GenerationResult, Outcome
from frontdesk.reasoning.turn import Turn, TurnMessage

log = logging.getLogger(__name__)

# The most stored messages one turn reads. The chat slot's memory budget decides how many of
# them the model sees (whole turns, newest first); this only keeps the query bounded.
HISTORY_LOAD_LIMIT = 200
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


@dataclass(frozen=True)
class AssemblerTiming:
    quiet_window_s: float = 1.5
    quiet_window_cap_s: float = 10.0
    media_ready_timeout_s: float = 20.0
    model_outage_budget_s: float = 90.0


@dataclass(frozen=True)
class _Defer:
    """Not ready yet: run again in ``seconds``."""

    seconds: float


class LeaseLost(Exception):
    """Our lease was taken over while we worked; the new holder answers instead."""


# A batch to answer: its thread, the rows, the waits for the trace, and the history (None: read it).
_Collected = tuple["_Thread", list[Message], dict[str, Any], tuple[TurnMessage, ...] | None]


@dataclass(frozen=True)
class _Thread:
    conversation: Conversation
    tenant_name: str
    target: DeliveryTarget


class TurnAssembler:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        lease: ConversationLease,
        agent: Agent,
        deliverer: Deliverer,
        queue: JobQueue,
        timing: AssemblerTiming,
    ) -> None:
        self._db = db
        self._queue = queue
        self._clock = clock
        self._lease = lease
        self._agent = agent
        self._deliverer = deliverer
        self._timing = timing

    async def process(self, conversation_id: str, owner: str, attempt: Attempt = Attempt()) -> int:
        """Run every turn this conversation is ready for now. Returns how many turns ran here.
        Raises ``RetryLater`` when the model is down and ``attempt`` is not the last."""
        turns = 0
        while True:
            settled = await self._lease.acquire(conversation_id, owner)
            if settled is None:
                return turns
            defer_s: float | None = None
            released = False
            try:
                async with self._lease.kept_alive(conversation_id, owner):
                    while True:
                        collected = await self._collect(conversation_id, settled)
                        if isinstance(collected, _Defer) and collected.seconds == 0:
                            # Quiet by now but not at ``settled`` (a slow delivery after the last
                            # turn): settle again rather than going round the job queue.
                            settled = await self._lease.renew(conversation_id, owner)
                            if settled is None:
                                raise LeaseLost(conversation_id)
                            collected = await self._collect(conversation_id, settled)
                        if isinstance(collected, _Defer):
                            defer_s = collected.seconds
                            break
                        if collected is None:
                            break
                        thread, batch, waits, history = collected
                        with observe_turn(conversation_id, thread.conversation.tenant_id, batch_size=len(batch)):
                            next_settled = await self._run_turn(thread, batch, waits, history, owner, attempt)
                        turns += 1
                        if next_settled is None:  # nothing waits: the turn let the lease go with its delivery
                            released = True
                            break
                        settled = next_settled
            except LeaseLost:
                log.warning("lease on %s lost mid-turn by %s; reply discarded", conversation_id, owner)
                return turns
            finally:
                if not released:
                    await self._lease.release(conversation_id, owner)
            if released:
                return turns
            if defer_s is not None:
                await self._come_back(conversation_id, defer_s)
                return turns
            if not await self._unprocessed(conversation_id):
                return turns

    async def _come_back(self, conversation_id: str, delay_s: float) -> None:
        async with self._db.transaction() as session:
            await queue_turn(self._queue, session, conversation_id, delay_s=delay_s)
        self._queue.notify()

    # -- collecting a batch

    async def _collect(self, conversation_id: str, settled: datetime) -> _Collected | _Defer | None:
        """The batch to answer now, its thread and (when it is to be answered by the agent) the
        history, in one read. ``settled`` is the moment, read under the conversation's row lock,
        before which every message is committed: quietness is judged at it, not at the clock after
        reading, so a message stamped in between cannot be left for a turn of its own."""
        async with self._db.read() as session:
            rows = await _unprocessed_rows(session, conversation_id)
            thread = await _thread(session, conversation_id) if rows else None
            ready = self._ready(rows, settled) if thread is not None and thread.conversation.ai_enabled else None
            history = await _history(session, conversation_id) if isinstance(ready, dict) else None
        if not rows or thread is None:
            return None
        if not thread.conversation.ai_enabled:
            fresh = [r for r in rows if not reopened(r)]  # late media was answered once already
            if fresh and await self._handed_off_while_answering(conversation_id, fresh[0]):
                # The hand-off committed but the turn's reply did not (a crash, a lost lease):
                # these rows still get the courtesy reply, never silence.
                return thread, rows, {"courtesy_after_handoff": True}, None
            await self._mark_seen_without_reply(conversation_id)
            return None
        if isinstance(ready, _Defer) or ready is None:
            return ready
        return thread, rows, ready, history

    def _ready(self, rows: list[Message], settled: datetime) -> dict[str, Any] | _Defer:
        """The batch's waits when it may be answered now, else when to look again."""
        timing = self._timing
        now = self._clock.now()
        first, last = min(map(arrived, rows)), max(map(arrived, rows))
        quiet = (settled - last).total_seconds() >= timing.quiet_window_s
        capped = (settled - first).total_seconds() >= timing.quiet_window_cap_s
        silent_s = (now - last).total_seconds()
        waited_s = (now - first).total_seconds()
        if not quiet and not capped:
            # Come back when the window closes; at once if it has closed since ``settled`` (the
            # next run settles afresh).
            return _Defer(max(0.0, min(timing.quiet_window_s - silent_s, timing.quiet_window_cap_s - waited_s)))
        pending = [r for r in rows if r.status == "pending"]
        if pending:
            pending_for_s = (now - pending[0].created_at).total_seconds()
            if pending_for_s < timing.media_ready_timeout_s:
                # ``Ingestor.mark_ready`` pulls this job forward as soon as the media is ready.
                return _Defer(timing.media_ready_timeout_s - pending_for_s)
        return {"wait_ms": round(waited_s * 1000, 2), "pending_media": len(pending)}

    async def _reopen_media_ready_meanwhile(self, session: AsyncSession, batch: list[Message], turn_id: int) -> None:
        """Media that was pending when the batch was collected (the gate gave up waiting) and is
        ready by now was answered as its placeholder: open it again for a turn that reads it.
        ``Ingestor.mark_ready`` does the same when it lands after this commit."""
        late = [m.id for m in batch if m.status == "pending"]
        if not late or not await ai_answers(session, batch[0].conversation_id):
            return  # (handed off in this very turn: the person reads it in the console)
        for message in await session.scalars(select(Message).where(Message.id.in_(late), Message.status == "ready")):
            reopen_late_media(message, turn_id, self._clock.now())

    async def _unprocessed(self, conversation_id: str) -> list[Message]:
        async with self._db.read() as session:
            return await _unprocessed_rows(session, conversation_id)

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
                update(Message)
                .where(
                    Message.conversation_id == conversation_id,
                    Message.role == "user",
                    Message.processed_at.is_(None),
                )
                .values(processed_at=self._clock.now())
            )

    async def _read_history(self, conversation_id: str) -> tuple[TurnMessage, ...]:
        async with self._db.read() as session:
            return await _history(session, conversation_id)

    # -- running a turn

    async def _run_turn(
        self,
        thread: _Thread,
        batch: list[Message],
        waits: dict[str, Any],
        history: tuple[TurnMessage, ...] | None,
        owner: str,
        attempt: Attempt,
    ) -> datetime | None:
        """Answer ``batch``. Returns the settled moment read in the commit's fenced UPDATE, or None
        when no message waited at the end and the lease was released with the delivery."""
        conversation = thread.conversation
        started_at = self._clock.now()
        t0 = time.monotonic()
        with stage(ASSEMBLE) as span:
            turn = Turn(
                tenant_id=conversation.tenant_id,
                business_name=thread.tenant_name,
                conversation_id=conversation.id,
                batch=tuple(_turn_message(m) for m in batch),
                history=history if history is not None else await self._read_history(conversation.id),
                channel_account_id=conversation.channel_account_id,
                run_key=new_id("run"),
            )
            span.set_attribute("frontdesk.history_messages", len(turn.history))
        model_name: str | None = None
        try:
            model_name = self._agent.model_name
            async with self._deliverer.typing_while(_answering(thread.target, batch)):
                if waits.get("courtesy_after_handoff"):
                    run = await self._agent.courtesy_after_handoff(turn)
                else:
                    run = await self._agent.generate(turn)
        except ModelOutage as outage:  # nothing done, nothing said yet: the job may ask again later
            waited_s = (self._clock.now() - min(map(arrived, batch))).total_seconds()
            # The wait counts the quiet window and any queue, so a backlog alone must not turn the
            # first failure into the hold message: the first attempt is always retried.
            within_budget = attempt.number == 1 or waited_s < self._timing.model_outage_budget_s
            if not attempt.last and within_budget:
                retry_after = outage.error.retry_after
                after_s = min(retry_after, MAX_RETRY_AFTER_S) if retry_after else None
                turn_outcome(DEFERRED)
                raise RetryLater(f"model unavailable: {outage.error.message}", after_s=after_s) from outage
            run = outage.hold
            spent = "" if within_budget else f" (the customer has waited {waited_s:.0f} s)"
            run.result.detail = (
                f"model unavailable on attempt {attempt.number} of {attempt.of}{spent}: {outage.error.message}"
            )
        except Exception as exc:  # the customer still gets a holding reply; the trace says why
            log.exception("turn for %s failed", conversation.id)
            failed = GenerationResult(
                Outcome.FALLBACK, text_blocks(FALLBACK_TEXT), detail=f"error: {exc}"[:2000], hold=True
            )
            run = AgentRun(failed)
        result = run.result
        generation_ms = (time.monotonic() - t0) * 1000

        # Once the model has answered, committing and delivering take milliseconds: a shutdown
        # waits for them rather than leaving a committed reply with its receipt stuck at "sending".
        async def commit_and_deliver() -> datetime | None:
            t1 = time.monotonic()
            async with self._db.transaction() as session:
                fenced = await session.execute(
                    update(Conversation)
                    .where(Conversation.id == conversation.id, Conversation.lock_owner == owner)
                    .values(version=Conversation.version + 1, updated_at=self._clock.now())
                )
                if not rows_affected(fenced):
                    raise LeaseLost(conversation.id)
                settled = self._clock.now()  # the row is locked: see ConversationLease
                if await self._taken_over(session, conversation.id, run, waits):
                    # An operator turned the AI off while the model was writing: their thread now, so
                    # the reply is kept in the trace and not sent over them.
                    result.outcome, result.blocks = Outcome.SUPPRESSED, []
                    result.detail = "not sent: an operator took the thread over while the reply was being written"
                trace = TurnTrace(
                    conversation_id=conversation.id,
                    worker=owner,
                    started_at=started_at,
                    batch_size=len(batch),
                    batch_span_ms=turn.batch_span_ms,
                    model=model_name,
                    steps=result.steps,
                    tool_calls=result.tool_calls,
                    usage=result.usage,
                    latency_ms={},
                    outcome=result.outcome.value,
                    detail=result.detail,
                    route=run.route,
                    tools_offered=run.tools_offered,
                    prefix_hash=run.prefix_hash,
                    prompt_size=run.prompt_size,
                    claims=result.claims,
                )
                session.add(trace)
                await session.flush()
                await self._agent.persist(session, run, conversation.id, trace.id)
                if run.budget_spent is not None:
                    await hold_for_budget(
                        session,
                        tenant_id=conversation.tenant_id,
                        conversation_id=conversation.id,
                        spent=run.budget_spent,
                        turn_id=trace.id,
                        now=self._clock.now(),
                    )
                elif result.outcome == Outcome.FALLBACK and result.hold:
                    await _hold_for_team(session, conversation, result, trace.id, self._clock.now())
                answered = await session.execute(
                    update(Message)
                    .where(Message.id.in_([m.id for m in batch]), Message.processed_at.is_(None))
                    .values(processed_at=self._clock.now(), turn_id=trace.id)
                )
                if rows_affected(answered) != len(batch):  # someone else answered them meanwhile
                    raise LeaseLost(conversation.id)
                await self._reopen_media_ready_meanwhile(session, batch, trace.id)
                turn_outcome(result.outcome.value, steps=result.steps)  # counted once it is this turn's for sure
                staged = None
                if result.blocks:
                    staged = await self._deliverer.stage(
                        session, _answering(thread.target, batch), result.blocks, turn_id=trace.id, origin="agent"
                    )
            commit_ms = (time.monotonic() - t1) * 1000

            t2 = time.monotonic()
            released = False

            async def record_timings(session: AsyncSession, status: str) -> None:
                nonlocal released
                # In the delivery's final transaction (its last part's commit is not counted).
                latency = {
                    **waits,
                    "generation_ms": round(generation_ms, 2),
                    "commit_ms": round(commit_ms, 2),
                    "delivery_ms": round((time.monotonic() - t2) * 1000, 2),
                    "total_ms": round((self._clock.now() - batch[0].created_at).total_seconds() * 1000, 2),
                    "delivery_status": status,
                }
                await session.execute(
                    update(TurnTrace)
                    .where(TurnTrace.id == trace.id)
                    .values(finished_at=self._clock.now(), latency_ms=latency)
                )
                # Held until the reply is out, so that the next turn's reply can never overtake it.
                released = await self._lease.release_if_answered(session, conversation.id, owner)

            if staged is not None:
                await self._deliverer.deliver(staged, then=record_timings)
            else:
                async with self._db.transaction() as session:
                    await record_timings(session, "not_sent")
            return None if released else settled

        return await run_to_completion(commit_and_deliver())

    async def _taken_over(
        self, session: AsyncSession, conversation_id: str, run: AgentRun, waits: dict[str, Any]
    ) -> bool:
        """The AI was switched off during this turn by someone else than the turn itself (its own
        hand-off still owes the customer the courtesy reply)."""
        if waits.get("courtesy_after_handoff"):
            return False
        if run.state is not None and any(event == "handoff_triggered" for event, _ in run.state.turn_events()):
            return False
        return not await ai_answers(session, conversation_id)

    # -- crash recovery

    async def recover_dead_worker(self, queue: JobQueue, worker: str) -> tuple[int, int]:
        """A worker known to be dead (``serve`` saw its worker process exit): its jobs go back in
        the queue and its conversation leases are let go now, instead of when they run out.
        Returns (jobs, leases)."""
        leases = await self._lease.release_all_of(worker)
        jobs = await queue.requeue_of(worker)
        return jobs, leases

    async def requeue_orphans(self, queue: JobQueue) -> int:
        """Sweeper: conversations with unanswered rows, no live lease and no pending job get one.

        A conversation whose job already died over these rows is left for an operator (the dead
        job and its ``last_error`` say why); a newer customer message queues a fresh job anyway."""
        now = self._clock.now()
        job_key = literal(CONVERSATION_JOB_KEY_PREFIX) + Conversation.id
        oldest_unanswered = (
            select(func.min(Message.created_at))
            .where(Message.conversation_id == Conversation.id, Message.role == "user", Message.processed_at.is_(None))
            .scalar_subquery()
        )
        async with self._db.transaction() as session:
            orphans = list(
                await session.scalars(
                    select(Conversation.id).where(
                        exists().where(
                            Message.conversation_id == Conversation.id,
                            Message.role == "user",
                            Message.processed_at.is_(None),
                        ),
                        or_(Conversation.lock_owner.is_(None), Conversation.lock_until < now),
                        ~exists().where(and_(Job.key == job_key, Job.status.in_([QUEUED, RUNNING]))),
                        ~exists().where(
                            and_(Job.key == job_key, Job.status == DEAD, Job.updated_at >= oldest_unanswered)
                        ),
                    )
                )
            )
            for conversation_id in orphans:
                await queue_turn(queue, session, conversation_id)
        return len(orphans)


async def _thread(session: AsyncSession, conversation_id: str) -> _Thread | None:
    row = (
        await session.execute(
            select(Conversation, ChannelAccount, Contact, Tenant.name)
            .join(ChannelAccount, ChannelAccount.id == Conversation.channel_account_id)
            .join(Contact, Contact.id == Conversation.contact_id)
            .join(Tenant, Tenant.id == Conversation.tenant_id)
            .where(Conversation.id == conversation_id)
        )
    ).first()
    if row is None:
        return None
    conversation, account, contact, tenant_name = row
    target = DeliveryTarget(
        channel=account.channel,
        channel_account_id=account.id,
        conversation_id=conversation.id,
        contact_external_id=contact.external_id,
        message_id=0,
        account_config=account.config,
    )
    return _Thread(conversation, tenant_name, target)


async def _history(session: AsyncSession, conversation_id: str) -> tuple[TurnMessage, ...]:
    """The conversation so far, in the order it was answered: a message that arrived while a
    reply was being written has a smaller id than that reply but comes after it. When the limit
    cut the conversation, its oldest turn may be missing its start and is left out."""
    rows = list(
        await session.scalars(
            select(Message)
            .where(Message.conversation_id == conversation_id, Message.processed_at.is_not(None))
            .order_by(Message.processed_at.desc(), Message.id.desc())
            .limit(HISTORY_LOAD_LIMIT)
        )
    )
    history = [_turn_message(m) for m in reversed(rows)]
    if len(rows) == HISTORY_LOAD_LIMIT:
        history = drop_partial_first_turn(history, lambda m: m.role == "user")
    return tuple(history)


async def _unprocessed_rows(session: AsyncSession, conversation_id: str) -> list[Message]:
    rows = await session.scalars(
        select(Message)
        .where(Message.conversation_id == conversation_id, Message.role == "user", Message.processed_at.is_(None))
        .order_by(Message.id)
    )
    return list(rows)


async def _hold_for_team(
    session: AsyncSession, conversation: Conversation, result: GenerationResult, turn_id: int, now: datetime
) -> None:
    """The hold message says a person will reply: give a person the task, with the refused draft
    and why (unless a person has the thread already)."""
    if await open_tasks(session, conversation.id, "handoff"):
        return
    tenant = await session.get(Tenant, conversation.tenant_id)
    language = str((tenant.policy or {}).get("operator_language", "en")) if tenant is not None else "en"
    last = result.rejections[-1] if result.rejections else {}
    reasons = [f"{f['rule']}: {f['reason']}" for f in last.get("failures", [])] or [result.detail or "no answer"]
    await hold_for_team(
        session,
        tenant_id=conversation.tenant_id,
        conversation_id=conversation.id,
        operator_language=language,
        draft=str(last.get("reply_text", "")),
        reasons=reasons,
        turn_id=turn_id,
        now=now,
    )


def _answering(target: DeliveryTarget, batch: list[Message]) -> DeliveryTarget:
    """The thread's target, carrying the newest customer message's metadata (a LINE reply token,
    the message a typing indicator marks as read)."""
    return dataclasses.replace(target, reply_context=dict(batch[-1].meta or {}))


def _turn_message(message: Message) -> TurnMessage:
    meta = message.meta or {}
    transcript = meta.get("transcript")
    return TurnMessage(
        id=message.id,
        role=message.role,
        content_type=message.content_type,
        text=message_text(message),
        created_at=message.created_at,
        image_key=meta.get("media_key") if message.content_type == "image" else None,
        transcript_quality=transcript.get("quality") if isinstance(transcript, dict) else None,
    )


def message_text(message: Message) -> str:
    """What the model reads for a stored message (assistant rows keep blocks as JSON)."""
    if message.content_type != "blocks":
        return message.content
    parts: list[str] = []
    for block in blocks_adapter.validate_json(message.content):
        if block.type == "text":
            parts.append(block.text)
        else:
            parts.append(f"[{len(block.urls)} image(s)" + (f": {block.caption}]" if block.caption else "]"))
    return "\n\n".join(parts)
