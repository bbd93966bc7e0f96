"""The points engine: does a rule's criteria match a purchase, and how many points does its formula give.

Pure functions over plain facts, so ``rule_preview_points`` (a sample purchase) and
``member_record_purchase`` (a real one, facts read from the database) share one implementation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone

from frontdesk.packs.loyalty.server.models import (
    BirthdayBonus,
    CategoryBonus,
    FirstPurchaseBonus,
    FixedPoints,
    Formula,
    Multiplier,
    PointsPerAmount,
    PurchaseItem,
    RuleCriteria,
    Streak,
    TieredSpend,
)

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
# Days, weekdays and hours in criteria are the programme's local time.
VIETNAM = timezone(timedelta(hours=7), "ICT")


@dataclass(frozen=True)
class PurchaseFacts:
    """A purchase and what is known about the member at that moment."""

    amount_vnd: int
    channel: str
    items: tuple[PurchaseItem, ...]
    occurred_at: datetime
    tier: str = "bronze"
    segment_ids: frozenset[str] = frozenset()
    joined_on: date | None = None
    birthday: date | None = None
    is_first_purchase: bool = False
    # dates of the member's earlier purchases (for streaks)
    history: tuple[date, ...] = ()
    # rule id -> awards so far (this member, all members); rule id -> last birthday award year
    awards_member: dict[str, int] = field(default_factory=dict)
    awards_total: dict[str, int] = field(default_factory=dict)
    birthday_award_years: dict[str, set[int]] = field(default_factory=dict)

    @property
    def local(self) -> datetime:
        return self.occurred_at.astimezone(VIETNAM)

    @property
    def day(self) -> date:
        return self.local.date()


def criteria_failures(rule_id: str, criteria: RuleCriteria, facts: PurchaseFacts) -> list[str]:
    """Why the criteria do not match (empty when they do)."""
    failures: list[str] = []
    if criteria.channels and facts.channel not in criteria.channels:
        failures.append(f"channel {facts.channel} not in {criteria.channels}")
    if criteria.tiers and facts.tier not in criteria.tiers:
        failures.append(f"tier {facts.tier} not in {criteria.tiers}")
    if criteria.segment_ids and not facts.segment_ids.intersection(criteria.segment_ids):
        failures.append("member is in none of the required segments")
    if facts.segment_ids.intersection(criteria.exclude_segment_ids):
        failures.append("member is in an excluded segment")
    if criteria.categories and not {item.category for item in facts.items}.intersection(criteria.categories):
        failures.append(f"purchase has no item in {criteria.categories}")
    if criteria.min_spend_vnd is not None and facts.amount_vnd < criteria.min_spend_vnd:
        failures.append(f"amount {facts.amount_vnd} below min_spend_vnd {criteria.min_spend_vnd}")
    if criteria.start_date and facts.day < criteria.start_date:
        failures.append(f"before start_date {criteria.start_date}")
    if criteria.end_date and facts.day > criteria.end_date:
        failures.append(f"after end_date {criteria.end_date}")
    if criteria.days_of_week and WEEKDAYS[facts.day.weekday()] not in criteria.days_of_week:
        failures.append(f"{WEEKDAYS[facts.day.weekday()]} not in {criteria.days_of_week}")
    hour = facts.local.hour
    if criteria.hour_from is not None and hour < criteria.hour_from:
        failures.append(f"hour {hour} before hour_from {criteria.hour_from}")
    if criteria.hour_to is not None and hour >= criteria.hour_to:
        failures.append(f"hour {hour} not before hour_to {criteria.hour_to}")
    if criteria.member_joined_within_days is not None and (
        facts.joined_on is None or (facts.day - facts.joined_on).days > criteria.member_joined_within_days
    ):
        failures.append(f"member joined more than {criteria.member_joined_within_days} days ago")
    given = facts.awards_member.get(rule_id, 0)
    if criteria.max_awards_per_member is not None and given >= criteria.max_awards_per_member:
        failures.append(f"member already has {given} awards (max {criteria.max_awards_per_member})")
    total = facts.awards_total.get(rule_id, 0)
    if criteria.max_awards_total is not None and total >= criteria.max_awards_total:
        failures.append(f"rule already gave {total} awards (max {criteria.max_awards_total})")
    return failures


def _per_amount(amount: int, points: int, per_amount: int, rounding: str = "floor") -> int:
    units = amount / per_amount
    whole = math.floor(units) if rounding == "floor" else math.ceil(units) if rounding == "ceil" else round(units)
    return whole * points


def _capped(points: int, cap: int | None) -> int:
    return points if cap is None else min(points, cap)


def _period_start(day: date, period: str) -> date:
    if period == "week":
        return day - timedelta(days=day.weekday())
    return day.replace(day=1)


def _previous_period(start: date, period: str) -> date:
    if period == "week":
        return start - timedelta(days=7)
    return (start - timedelta(days=1)).replace(day=1)


def streak_length(history: tuple[date, ...], today: date, period: str) -> tuple[int, bool]:
    """Consecutive periods with a purchase, ending with today's; and whether today is its first in the period."""
    starts = {_period_start(day, period) for day in history}
    current = _period_start(today, period)
    first_in_period = current not in starts
    length, cursor = 1, _previous_period(current, period)
    while cursor in starts:
        length += 1
        cursor = _previous_period(cursor, period)
    return length, first_in_period


def synthetic_history(today: date, period: str, periods: int) -> tuple[date, ...]:
    """Earlier purchase dates giving a streak of ``periods`` periods ending today (for previews)."""
    days: list[date] = []
    cursor = _period_start(today, period)
    for _ in range(periods - 1):
        cursor = _previous_period(cursor, period)
        days.append(cursor)
    return tuple(days)


def _in_birthday_window(birthday: date, day: date, window: str) -> bool:
    if window == "month":
        return birthday.month == day.month
    try:
        this_year = birthday.replace(year=day.year)
    except ValueError:  # 29 February in a common year
        this_year = date(day.year, 3, 1)
    return this_year == day if window == "day" else abs((this_year - day).days) <= 3


def formula_points(rule_id: str, formula: Formula, facts: PurchaseFacts) -> tuple[int, str]:
    """Points the formula gives for the purchase, with a one-line explanation."""
    match formula:
        case FixedPoints(points=points):
            return points, f"fixed {points} points"
        case PointsPerAmount():
            raw = _per_amount(facts.amount_vnd, formula.points, formula.per_amount_vnd, formula.rounding)
            got = _capped(raw, formula.max_points)
            return got, f"{formula.points} per {formula.per_amount_vnd} VND ({formula.rounding}) = {got}"
        case Multiplier():
            base = _per_amount(facts.amount_vnd, formula.base_points, formula.base_per_amount_vnd)
            got = _capped(math.floor(base * formula.factor), formula.max_points)
            return got, f"base {base} x {formula.factor} = {got}"
        case TieredSpend(bands=bands):
            reached = [band for band in bands if facts.amount_vnd >= band.min_spend_vnd]
            if not reached:
                return 0, f"amount below the first band ({bands[0].min_spend_vnd} VND)"
            return reached[-1].points, f"band from {reached[-1].min_spend_vnd} VND"
        case FirstPurchaseBonus():
            if not facts.is_first_purchase:
                return 0, "not the member's first purchase"
            late = facts.joined_on is not None and (facts.day - facts.joined_on).days > (
                formula.within_days_of_joining or 10**6
            )
            return (0, "first purchase came too long after joining") if late else (formula.points, "first purchase")
        case BirthdayBonus():
            if facts.birthday is None or not _in_birthday_window(facts.birthday, facts.day, formula.window):
                return 0, f"not in the birthday {formula.window}"
            if formula.once_per_year and facts.day.year in facts.birthday_award_years.get(rule_id, set()):
                return 0, "birthday bonus already given this year"
            return formula.points, f"birthday {formula.window}"
        case CategoryBonus():
            spend = sum(item.amount_vnd for item in facts.items if item.category in formula.categories)
            got = _per_amount(spend, formula.points, formula.per_amount_vnd)
            return got, f"{spend} VND in {formula.categories} = {got}"
        case Streak():
            length, first_in_period = streak_length(facts.history, facts.day, formula.period)
            due = length == formula.periods or (formula.repeat and length % formula.periods == 0)
            if first_in_period and due:
                return formula.bonus_points, f"{length} consecutive {formula.period}s"
            return 0, f"streak at {length} of {formula.periods} {formula.period}s"
    raise AssertionError(f"unhandled formula {formula!r}")  # pragma: no cover - the union is closed


def with_tier(points: int, multiplier: float) -> int:
    """The tier's earn multiplier applies to every award, rounded down."""
    return math.floor(points * multiplier)
