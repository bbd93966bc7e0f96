"""How many chat-model turns a tenant may start per hour and per day.

The web chat's limits (``ingestion/channels/webchat/limits.py``) slow one sender down; this caps
what all senders together can cost a tenant, however many addresses and sessions they use. A
turn claims one unit of both windows before the model runs, with one conditional UPDATE over both
windows' rows (the sign-in limits' pattern), in the transaction that takes the turn's lease:
parallel turns queue on the rows and each sees the counts the previous one left, so no burst gets
past the limit. A turn whose model then failed before answering gives its unit back (its retry
claims again).

Windows follow the tenant's own clock: an hour from the top of the hour, a day from local
midnight, so the owner's "resets at midnight" is their midnight. A limit of 0 turns that window
off; with both off, nothing is written per turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from functools import cache
from typing import Any, Literal

from sqlalchemy import Update, and_, bindparam, delete, or_
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.platform.clock import Clock
from frontdesk.platform.store.engine import Database, unsynced_update
from frontdesk.platform.store.schema import ModelBudgetCounter

Period = Literal["hour", "day"]
# Counters of windows older than this are deleted when a tenant opens a new window.
KEEP_COUNTERS = timedelta(days=2)


@dataclass(frozen=True)
class Window:
    period: Period
    start: datetime  # UTC
    end: datetime  # UTC: when the next window starts
    zone: tzinfo  # the tenant's clock the window follows (to say when it resets, in its time)


@dataclass(frozen=True)
class Claimed:
    """One turn counted against ``windows``; given back if the model fails before answering."""

    tenant_id: str
    windows: tuple[Window, ...]


@dataclass(frozen=True)
class Spent:
    """The tenant has started ``limit`` turns in ``window`` already: no model for this turn."""

    window: Window
    limit: int

    @property
    def period(self) -> Period:
        return self.window.period


def window_of(period: Period, now: datetime, zone: tzinfo) -> Window:
    """The hour or day ``now`` falls in, on the tenant's clock (a day across a DST change is 23 or
    25 hours long, as the owner lives it)."""
    local = now.astimezone(zone)
    if period == "hour":
        start = local.replace(minute=0, second=0, microsecond=0)
        end = start + timedelta(hours=1)
    else:
        start = _midnight(local.date(), zone)
        end = _midnight(local.date() + timedelta(days=1), zone)
    return Window(period, start.astimezone(now.tzinfo), end.astimezone(now.tzinfo), zone)


def _midnight(day: date, zone: tzinfo) -> datetime:
    return datetime.combine(day, time(0), tzinfo=zone)


class ModelBudget:
    def __init__(self, db: Database, clock: Clock, *, per_hour: int, per_day: int) -> None:
        self._db = db
        self._clock = clock
        # The day first: when both are spent, the owner hears of the one that lasts longer.
        by_period: tuple[tuple[Period, int], ...] = (("day", per_day), ("hour", per_hour))
        self._limits = tuple((period, limit) for period, limit in by_period if limit > 0)

    @property
    def enabled(self) -> bool:
        return bool(self._limits)

    async def claim(self, tenant_id: str, zone: tzinfo) -> Claimed | Spent:
        """Count one turn in every window, or in none when one of them is spent."""
        async with self._db.transaction() as session:
            return await self.claim_in(session, tenant_id, zone)

    async def claim_in(self, session: AsyncSession, tenant_id: str, zone: tzinfo) -> Claimed | Spent:
        """``claim`` in the caller's transaction (a turn claims in the one that takes its lease)."""
        now = self._clock.now()
        windows = tuple(window_of(period, now, zone) for period, _ in self._limits)
        if not windows:
            return Claimed(tenant_id, ())
        limits = tuple(limit for _, limit in self._limits)
        # The common case in one statement: every window's row is there and has room.
        counted = await _count_in_all(session, tenant_id, windows, limits)
        for window, limit in zip(windows, limits, strict=True):
            if window.period not in counted and not await _open_window(session, tenant_id, window, limit, now):
                # Spent: take back what this claim counted, so no window counts a refused turn
                # (the caller's transaction goes on: it holds the lease).
                await _take_back(session, tenant_id, tuple(w for w in windows if w.period in counted))
                return Spent(window, limit)
            counted.add(window.period)
        return Claimed(tenant_id, windows)

    async def give_back(self, claimed: Claimed) -> None:
        if not claimed.windows:
            return
        async with self._db.transaction() as session:
            await _take_back(session, claimed.tenant_id, claimed.windows)


async def _take_back(session: AsyncSession, tenant_id: str, windows: tuple[Window, ...]) -> None:
    if not windows:
        return
    await session.execute(
        unsynced_update(ModelBudgetCounter)
        .where(
            ModelBudgetCounter.tenant_id == tenant_id,
            or_(
                *(
                    and_(ModelBudgetCounter.period == w.period, ModelBudgetCounter.window_start == w.start)
                    for w in windows
                )
            ),
            ModelBudgetCounter.turns > 0,
        )
        .values(turns=ModelBudgetCounter.turns - 1)
    )


async def _count_in_all(
    session: AsyncSession, tenant_id: str, windows: tuple[Window, ...], limits: tuple[int, ...]
) -> set[str]:
    """Count the turn in each window whose row exists and has room; returns those periods."""
    params: dict[str, Any] = {"tenant": tenant_id}
    for index, (window, limit) in enumerate(zip(windows, limits, strict=True)):
        params |= {f"period_{index}": window.period, f"start_{index}": window.start, f"limit_{index}": limit}
    counted = await session.execute(_count_statement(len(windows)), params)
    return {str(period) for (period,) in counted}


@cache
def _count_statement(windows: int) -> Update:
    """``_count_in_all``'s UPDATE for that many windows, built once (building it cost more CPU
    than running it)."""
    return (
        unsynced_update(ModelBudgetCounter)
        .where(
            ModelBudgetCounter.tenant_id == bindparam("tenant"),
            or_(
                *(
                    and_(
                        ModelBudgetCounter.period == bindparam(f"period_{index}"),
                        ModelBudgetCounter.window_start == bindparam(f"start_{index}"),
                        ModelBudgetCounter.turns < bindparam(f"limit_{index}"),
                    )
                    for index in range(windows)
                )
            ),
        )
        .values(turns=ModelBudgetCounter.turns + 1)
        .returning(ModelBudgetCounter.period)
    )


async def _open_window(session: AsyncSession, tenant_id: str, window: Window, limit: int, now: datetime) -> bool:
    """A window ``_count_in_all`` did not count in: new (its row is inserted already counting this
    turn), opened meanwhile by a parallel first turn (counted again), or spent (False)."""
    insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else postgresql_insert
    first = (
        insert(ModelBudgetCounter)
        .values(tenant_id=tenant_id, period=window.period, window_start=window.start, turns=1)
        .on_conflict_do_nothing()
        .returning(ModelBudgetCounter.turns)
    )
    if (await session.execute(first)).first() is not None:
        await session.execute(  # a new window: the tenant's old ones are done with
            delete(ModelBudgetCounter).where(
                ModelBudgetCounter.tenant_id == tenant_id, ModelBudgetCounter.window_start < now - KEEP_COUNTERS
            )
        )
        return True
    return window.period in await _count_in_all(session, tenant_id, (window,), (limit,))
