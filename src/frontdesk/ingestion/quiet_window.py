"""When a burst of customer messages may be answered: the quiet window and the readiness gate.

A batch is ready once its newest message has been quiet for ``window_s`` (or its oldest has
waited ``cap_s``, so a customer who never stops typing still gets an answer), and no media of it
is still being prepared (waited for up to ``media_ready_timeout_s``, then answered as its
placeholder). Quietness is judged at ``settled``, the moment the conversation's lease read under
its row lock (see ``ingestion/lease.py``), never at the clock after reading: a message stamped in
between cannot be left for a turn of its own. Every bound counts from stored timestamps, so any
instance reaches the same decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from frontdesk.ingestion.ingest import arrived
from frontdesk.platform.store.schema import Message


@dataclass(frozen=True)
class Ready:
    """The batch may be answered now; how long it waited, for the turn's trace."""

    wait_ms: float
    pending_media: int

    def as_trace(self) -> dict[str, Any]:
        return {"wait_ms": self.wait_ms, "pending_media": self.pending_media}


@dataclass(frozen=True)
class Defer:
    """Not ready yet: look again in ``seconds`` (0: it has become ready since ``settled``).
    ``media``: the pending media rows waited for, if that is the reason."""

    seconds: float
    media: tuple[int, ...] = ()


@dataclass(frozen=True)
class QuietWindow:
    window_s: float = 1.5
    cap_s: float = 10.0
    media_ready_timeout_s: float = 20.0

    def judge(self, rows: Sequence[Message], settled: datetime, now: datetime) -> Ready | Defer:
        """Whether the unanswered ``rows`` (oldest first, at least one) may be answered now."""
        first, last = min(map(arrived, rows)), max(map(arrived, rows))
        quiet = (settled - last).total_seconds() >= self.window_s
        capped = (settled - first).total_seconds() >= self.cap_s
        silent_s = (now - last).total_seconds()
        waited_s = (now - first).total_seconds()
        if not quiet and not capped:
            # Come back when the window closes; at once if it has closed since ``settled`` (the
            # next look settles afresh).
            return Defer(max(0.0, min(self.window_s - silent_s, self.cap_s - waited_s)))
        pending = [r for r in rows if r.status == "pending"]
        if pending:
            pending_for_s = (now - pending[0].created_at).total_seconds()
            if pending_for_s < self.media_ready_timeout_s:
                # ``Ingestor.mark_ready`` pulls the job forward as soon as the media is ready.
                return Defer(self.media_ready_timeout_s - pending_for_s, tuple(r.id for r in pending))
        return Ready(round(waited_s * 1000, 2), len(pending))
