"""What instrumented code calls: one function per event worth counting.

Each records on the active app's metrics (``observer.active``) and does nothing outside an app.
Label values must stay bounded: pass names from our own code or catalog, never model output.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

from frontdesk.platform.observability.logs import log_context
from frontdesk.platform.observability.metrics import Metrics
from frontdesk.platform.observability.observer import active
from frontdesk.platform.observability.tracing import TURN, Attributes, stage

log = logging.getLogger("frontdesk.turns")

ABORTED = "aborted"  # the turn raised (a lost lease, a shutdown) before it had an outcome
DEFERRED = "deferred"  # the model was unreachable before anything was done: the job retries later
ToolOutcome = Literal["ok", "error", "refused"]


def _metrics() -> Metrics | None:
    observability = active()
    return observability.metrics if observability is not None else None


@dataclass
class _TurnRecord:
    outcome: str | None = None
    steps: int = 0


_turn: ContextVar[_TurnRecord | None] = ContextVar("frontdesk_turn_record", default=None)


@contextmanager
def observe_turn(conversation_id: str, tenant_id: str, *, batch_size: int) -> Iterator[None]:
    """Around one turn: the ``turn`` span (its stages nest inside), the conversation id on every
    log line, and on exit ``frontdesk_turns_total``, the turn's duration and one log line
    "turn finished". The outcome comes from ``turn_outcome`` (``aborted`` if never set)."""
    record = _TurnRecord()
    started = time.perf_counter()
    attributes: Attributes = {
        "frontdesk.conversation_id": conversation_id,
        "frontdesk.tenant_id": tenant_id,
        "frontdesk.batch_size": batch_size,
    }
    with log_context(conversation_id), stage(TURN, attributes) as span:
        token = _turn.set(record)
        try:
            yield
        finally:
            _turn.reset(token)
            outcome = record.outcome or ABORTED
            seconds = time.perf_counter() - started
            span.set_attribute("frontdesk.outcome", outcome)
            span.set_attribute("frontdesk.steps", record.steps)
            metrics = _metrics()
            if metrics is not None:
                metrics.turns.labels(tenant_id, outcome).inc()
                metrics.turn_seconds.labels(outcome).observe(seconds)
            log.info(
                "turn finished: %s after %d step(s) in %.2f s",
                outcome,
                record.steps,
                seconds,
                extra={"outcome": outcome, "steps": record.steps, "duration_ms": round(seconds * 1000, 1)},
            )


def turn_outcome(outcome: str, *, steps: int = 0) -> None:
    """The current turn's final outcome (replied, salvaged, fallback, suppressed)."""
    record = _turn.get()
    if record is not None:
        record.outcome = outcome
        record.steps = steps


def model_called(slot: str, model: str, seconds: float, *, input_tokens: int, output_tokens: int) -> None:
    metrics = _metrics()
    if metrics is None:
        return
    metrics.model_seconds.labels(slot, model).observe(seconds)
    metrics.model_tokens.labels(slot, model, "input").inc(input_tokens)
    metrics.model_tokens.labels(slot, model, "output").inc(output_tokens)


def model_failed(slot: str, model: str, seconds: float) -> None:
    metrics = _metrics()
    if metrics is not None:
        metrics.model_seconds.labels(slot, model).observe(seconds)
        metrics.model_errors.labels(slot, model).inc()


def tool_called(tool: str, result: ToolOutcome) -> None:
    """``tool``: the catalog's name of a tool that was offered; a refused unknown name is counted
    under ``(not offered)``, so a model inventing names cannot grow the label set."""
    metrics = _metrics()
    if metrics is not None:
        metrics.tool_calls.labels(tool, result).inc()


def reply_verified(*, accepted: bool) -> None:
    metrics = _metrics()
    if metrics is not None:
        metrics.replies_verified.labels("accepted" if accepted else "rejected").inc()


def claim_rejected(reason: str, *, kind: Literal["claim", "companion"]) -> None:
    metrics = _metrics()
    if metrics is not None:
        metrics.claim_rejections.labels(reason, kind).inc()


def receipt_finished(status: str) -> None:
    metrics = _metrics()
    if metrics is not None:
        metrics.receipts.labels(status).inc()


def lock_taken_over(lock: Literal["conversation", "job"], count: int = 1) -> None:
    """A lease taken from a holder whose lease had expired (its process died or stalled)."""
    metrics = _metrics()
    if metrics is not None and count > 0:
        metrics.lock_takeovers.labels(lock).inc(count)
