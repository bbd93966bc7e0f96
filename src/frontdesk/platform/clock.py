"""Time as a port. Stored timestamps are timezone-aware UTC."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class ClockFrom:
    """Real time, as if it had started at ``start``: a run reads the same day and hour whenever
    it is played (an eval whose customer picks a cake up "on Saturday" against a three-day lead
    time), while time still passes for its quiet windows and retries."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("a clock's start needs its time zone")
        self._start = start
        self._started = time.monotonic()

    def now(self) -> datetime:
        return self._start + timedelta(seconds=time.monotonic() - self._started)

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """Time that moves only when told to: for tests, and for anything that drives a runtime
    through time faster than it passes (``JobRunner.run_until_idle`` moves it to the next due
    job). ``monotonic`` moves with ``now``."""

    def __init__(self, start: datetime | None = None) -> None:
        self._start = start or datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
        self._now = self._start

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return (self._now - self._start).total_seconds()

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self._now += timedelta(seconds=seconds)

    def set(self, moment: datetime) -> None:
        """Move to ``moment`` (never back)."""
        self.advance((moment - self._now).total_seconds())
