"""``TurnRecord``: everything one turn writes, as a value.

Reasoning returns an ``AgentRun`` and writes nothing; the turn turns it into one record and
``turns/commit.py`` commits it in one transaction under the lease fence. What a record holds is
what a reader of the database finds after the turn: the trace, the reply (its message, receipt
and planned parts), the ledgers' new entries, the gate's refused drafts, a due memory refresh,
the hold's task or the budget notice, and the processed marks on the batch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from frontdesk.context.ledgers import WorkingState
from frontdesk.output.blocks import Block
from frontdesk.platform.model_budget import Spent
from frontdesk.reasoning.agent import AgentRun
from frontdesk.reasoning.loop import GenerationResult, Outcome
from frontdesk.turns.batch import Batch


@dataclass(frozen=True)
class TurnRecord:
    conversation_id: str
    tenant_id: str
    worker: str  # the lease holder; the commit is refused if it no longer holds the lease
    started_at: datetime
    model: str | None
    # The customer messages answered (marked processed), and those of them whose media was still
    # being prepared (opened again for a turn of their own if ready by the commit).
    batch_ids: tuple[int, ...]
    pending_media_ids: tuple[int, ...]
    batch_span_ms: int
    result: GenerationResult
    route: Mapping[str, Any] = field(default_factory=dict)
    tools_offered: tuple[str, ...] = ()
    prefix_hash: str | None = None
    prompt_size: Mapping[str, int] = field(default_factory=dict)
    ledgers: WorkingState | None = None  # its ``added`` entries are written, the windows pruned
    memory_due: bool = False
    budget_spent: Spent | None = None
    # The turn handed the thread to a person itself (or is the courtesy reply for one that did):
    # its reply still goes out; any other switch-off meanwhile means an operator took over.
    handed_off_itself: bool = False

    @classmethod
    def of(cls, run: AgentRun, batch: Batch, *, worker: str, started_at: datetime, model: str | None) -> TurnRecord:
        rows = batch.rows
        own_handoff = run.state is not None and any(e == "handoff_triggered" for e, _ in run.state.turn_events())
        return cls(
            conversation_id=batch.thread.conversation.id,
            tenant_id=batch.thread.conversation.tenant_id,
            worker=worker,
            started_at=started_at,
            model=model,
            batch_ids=tuple(m.id for m in rows),
            pending_media_ids=tuple(m.id for m in rows if m.status == "pending"),
            batch_span_ms=int((rows[-1].created_at - rows[0].created_at).total_seconds() * 1000),
            result=run.result,
            route=run.route,
            tools_offered=tuple(run.tools_offered),
            prefix_hash=run.prefix_hash,
            prompt_size=run.prompt_size,
            ledgers=run.state,
            memory_due=run.memory_due,
            budget_spent=run.budget_spent,
            handed_off_itself=batch.courtesy or own_handoff,
        )


@dataclass(frozen=True)
class Reply:
    """What the committed turn says: the generated reply, or nothing when an operator took the
    thread over while it was being written (kept in the trace, not sent over them)."""

    outcome: Outcome
    blocks: list[Block]
    detail: str | None

    @classmethod
    def of(cls, record: TurnRecord, ai_answers: bool) -> Reply:
        """What ``record`` says, as committed while the AI still answers the thread (``ai_answers``,
        read under the fence) or not: a turn that handed the thread over itself still replies."""
        if not record.handed_off_itself and not ai_answers:
            return cls.suppressed()
        result = record.result
        return cls(result.outcome, result.blocks, result.detail)

    @classmethod
    def suppressed(cls) -> Reply:
        detail = "not sent: an operator took the thread over while the reply was being written"
        return cls(Outcome.SUPPRESSED, [], detail)
