"""Small numbers for the reports page: turns per day, median reply latency, claim-rejection
rate and hand-offs, over the last ``DAYS`` days of one tenant. Computed in Python from bounded
reads (latency lives in a JSON column; a median is not portable SQL across both backends)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy import select

from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.platform.store.schema import ClaimRejection, Conversation, Task, TurnTrace

DAYS = 14
ROW_CAP = 20_000  # a very busy tenant gets an approximate chart, never a slow page


@dataclass(frozen=True)
class Series:
    key: str  # i18n key of the chart's title
    unit: str
    points: list[tuple[date, float]]

    @property
    def top(self) -> float:
        return max((v for _, v in self.points), default=0.0)

    @property
    def peak(self) -> float:
        """The bar scale: the top value, or 1 for an empty chart (no division by zero)."""
        return self.top or 1.0


async def daily_series(deps: ConsoleDeps, tenant_id: str, today: datetime) -> list[Series]:
    start = (today - timedelta(days=DAYS - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    days = [(start + timedelta(days=i)).date() for i in range(DAYS)]
    async with deps.db.read() as session:
        traces = (
            await session.execute(
                select(TurnTrace.id, TurnTrace.started_at, TurnTrace.latency_ms)
                .join(Conversation, Conversation.id == TurnTrace.conversation_id)
                .where(Conversation.tenant_id == tenant_id, TurnTrace.started_at >= start)
                .limit(ROW_CAP)
            )
        ).all()
        rejected = set(
            await session.scalars(
                select(ClaimRejection.turn_id)
                .join(Conversation, Conversation.id == ClaimRejection.conversation_id)
                .where(Conversation.tenant_id == tenant_id, ClaimRejection.created_at >= start)
                .limit(ROW_CAP)
            )
        )
        handoffs = list(
            await session.scalars(
                select(Task.created_at)
                .where(Task.tenant_id == tenant_id, Task.kind == "handoff", Task.created_at >= start)
                .limit(ROW_CAP)
            )
        )
    turns: dict[date, int] = dict.fromkeys(days, 0)
    latencies: dict[date, list[float]] = {d: [] for d in days}
    rejections: dict[date, int] = dict.fromkeys(days, 0)
    for trace_id, started_at, latency in traces:
        day = started_at.date()
        if day not in turns:
            continue
        turns[day] += 1
        total = (latency or {}).get("total_ms")
        if isinstance(total, int | float):
            latencies[day].append(float(total))
        rejections[day] += int(trace_id in rejected)
    handed: dict[date, int] = dict.fromkeys(days, 0)
    for created in handoffs:
        if created.date() in handed:
            handed[created.date()] += 1
    return [
        Series("reports.turns", "", [(d, float(turns[d])) for d in days]),
        Series(
            "reports.latency",
            "ms",
            [(d, round(statistics.median(latencies[d]), 1) if latencies[d] else 0.0) for d in days],
        ),
        Series(
            "reports.rejection_rate",
            "%",
            [(d, round(100 * rejections[d] / turns[d], 1) if turns[d] else 0.0) for d in days],
        ),
        Series("reports.handoffs", "", [(d, float(handed[d])) for d in days]),
    ]
