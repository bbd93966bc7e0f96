"""Shared input types: ids, enums, paging, purchases, the rule formula union and rule criteria.

These models are the JSON schemas the agent sees, so every field carries a description and the
tightest type that fits. The formula is a union discriminated by ``type``: each of the eight types
has its own fields, and ``FORMULA_MODELS`` maps a type to its model for staged loading.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal, Self, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema an agent sees for a model: pydantic's, without the generated titles."""
    return cast(dict[str, Any], _drop_titles(model.model_json_schema()))


def _drop_titles(node: object, in_properties: bool = False) -> object:
    # Under "properties" and "$defs" the keys are names (a field may be called "title"), not keywords.
    if isinstance(node, dict):
        return {
            key: _drop_titles(value, in_properties=key in ("properties", "$defs") and not in_properties)
            for key, value in node.items()
            if in_properties or key != "title"
        }
    if isinstance(node, list):
        return [_drop_titles(item) for item in node]
    return node


class Input(BaseModel):
    """Base of every tool input: unknown fields are rejected, strings are trimmed."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, frozen=True)


def _id(prefix: str, what: str) -> object:
    return Field(pattern=rf"^{prefix}_\d{{4,6}}$", description=f"{what} id, e.g. {prefix}_0001")


CampaignId = Annotated[str, _id("cmp", "Campaign")]
RuleId = Annotated[str, _id("rul", "Rule")]
RewardId = Annotated[str, _id("rwd", "Reward")]
MemberId = Annotated[str, _id("mem", "Member")]
VoucherId = Annotated[str, _id("vch", "Voucher")]
SegmentId = Annotated[str, _id("seg", "Segment")]
RedemptionId = Annotated[str, _id("rdm", "Redemption")]

Channel = Literal["store", "online", "app", "zalo", "facebook", "hotline"]
TierCode = Literal["bronze", "silver", "gold", "platinum"]
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
CampaignStatus = Literal["draft", "active", "paused", "ended"]
Category = Annotated[
    str, Field(pattern=r"^[a-z][a-z0-9_]{1,39}$", description="Product category slug, e.g. coffee, bakery, beauty")
]
Points = Annotated[int, Field(ge=1, le=10_000_000)]
AmountVnd = Annotated[int, Field(ge=0, le=10_000_000_000, description="Amount in VND (whole dong)")]
Reason = Annotated[str, Field(min_length=3, max_length=300, description="Why, in words kept on the ledger")]
IdempotencyKey = Annotated[
    str | None,
    Field(
        default=None,
        min_length=8,
        max_length=100,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="Optional client key; a repeated call with the same key returns the first result",
    ),
]
Query = Annotated[str, Field(min_length=1, max_length=100, description="Words to look for; accents optional")]


class Idempotent(Input):
    """Inputs of writes that must not run twice carry an optional idempotency key."""

    idempotency_key: IdempotencyKey = None


class Page(Input):
    limit: int = Field(default=20, ge=1, le=100, description="Maximum items to return")
    offset: int = Field(default=0, ge=0, description="Items to skip, for paging")


class PurchaseItem(Input):
    category: Category
    amount_vnd: AmountVnd


class Purchase(Input):
    amount_vnd: int = Field(ge=1, le=10_000_000_000, description="Total paid in VND")
    channel: Channel = Field(default="store", description="Where the purchase happened")
    items: list[PurchaseItem] = Field(default=[], max_length=50, description="Lines by category (optional)")
    occurred_at: datetime | None = Field(default=None, description="When (ISO 8601); defaults to now")


# --- the eight formula types -------------------------------------------------------------------------


class FixedPoints(Input):
    """A flat number of points for every qualifying purchase."""

    type: Literal["fixed_points"]
    points: Points = Field(description="Points per qualifying purchase")


class PointsPerAmount(Input):
    """Points proportional to the amount spent (e.g. 1 point per 10,000 VND)."""

    type: Literal["points_per_amount"]
    points: Points = Field(default=1, description="Points earned per `per_amount_vnd` spent")
    per_amount_vnd: int = Field(default=10_000, ge=1_000, le=10_000_000, description="VND spent per unit of points")
    rounding: Literal["floor", "round", "ceil"] = Field(default="floor", description="How partial units count")
    max_points: Points | None = Field(default=None, description="Cap per purchase; none = no cap")


class Multiplier(Input):
    """A multiple of the base earn rate (e.g. x2 points weekend)."""

    type: Literal["multiplier"]
    factor: float = Field(gt=1, le=10, description="Multiple of the base rate, e.g. 2 for double points")
    base_points: Points = Field(default=1, description="Base points per `base_per_amount_vnd`")
    base_per_amount_vnd: int = Field(default=10_000, ge=1_000, le=10_000_000, description="VND per base unit")
    max_points: Points | None = Field(default=None, description="Cap per purchase; none = no cap")


class SpendBand(Input):
    min_spend_vnd: AmountVnd = Field(description="Purchase amount (VND) from which this band applies")
    points: Points = Field(description="Points awarded when this is the highest band reached")


class TieredSpend(Input):
    """Points by spend band: the highest band the purchase reaches is awarded."""

    type: Literal["tiered_spend"]
    bands: list[SpendBand] = Field(min_length=1, max_length=10, description="Bands, increasing min_spend_vnd")

    @model_validator(mode="after")
    def _increasing(self) -> Self:
        spends = [band.min_spend_vnd for band in self.bands]
        if spends != sorted(set(spends)):
            raise ValueError("bands must have strictly increasing min_spend_vnd")
        return self


class FirstPurchaseBonus(Input):
    """A one-off bonus on a member's first purchase."""

    type: Literal["first_purchase_bonus"]
    points: Points = Field(description="Bonus points on the first purchase")
    within_days_of_joining: int | None = Field(
        default=None, ge=1, le=365, description="Only if the first purchase comes this many days after joining"
    )


class BirthdayBonus(Input):
    """A bonus for purchases around the member's birthday."""

    type: Literal["birthday_bonus"]
    points: Points = Field(description="Bonus points")
    window: Literal["day", "week", "month"] = Field(
        default="month", description="day = the birthday, week = within 3 days of it, month = the birth month"
    )
    once_per_year: bool = Field(default=True, description="Award at most once per calendar year")


class CategoryBonus(Input):
    """Extra points on the part of a purchase in given product categories."""

    type: Literal["category_bonus"]
    categories: list[Category] = Field(min_length=1, max_length=20, description="Categories that earn the bonus")
    points: Points = Field(default=1, description="Points per `per_amount_vnd` spent in those categories")
    per_amount_vnd: int = Field(default=10_000, ge=1_000, le=10_000_000, description="VND per unit of points")


class Streak(Input):
    """A bonus for buying in several consecutive weeks or months."""

    type: Literal["streak"]
    period: Literal["week", "month"] = Field(description="Length of one period of the streak")
    periods: int = Field(ge=2, le=24, description="Consecutive periods with a purchase needed for the bonus")
    bonus_points: Points = Field(description="Points awarded when the streak is reached")
    repeat: bool = Field(default=True, description="Award again every further `periods` periods")


Formula = Annotated[
    FixedPoints
    | PointsPerAmount
    | Multiplier
    | TieredSpend
    | FirstPurchaseBonus
    | BirthdayBonus
    | CategoryBonus
    | Streak,
    Field(discriminator="type", description="How many points the rule awards; fields depend on `type`"),
]
FormulaType = Literal[
    "fixed_points",
    "points_per_amount",
    "multiplier",
    "tiered_spend",
    "first_purchase_bonus",
    "birthday_bonus",
    "category_bonus",
    "streak",
]
FORMULA_MODELS: dict[str, type[Input]] = {
    "fixed_points": FixedPoints,
    "points_per_amount": PointsPerAmount,
    "multiplier": Multiplier,
    "tiered_spend": TieredSpend,
    "first_purchase_bonus": FirstPurchaseBonus,
    "birthday_bonus": BirthdayBonus,
    "category_bonus": CategoryBonus,
    "streak": Streak,
}


class RuleCriteria(Input):
    """When a rule applies; every list left empty means "no restriction"."""

    channels: list[Channel] = Field(default=[], description="Purchase channels that qualify")
    tiers: list[TierCode] = Field(default=[], description="Member tiers that qualify")
    segment_ids: list[SegmentId] = Field(default=[], max_length=20, description="Member must be in one of these")
    exclude_segment_ids: list[SegmentId] = Field(default=[], max_length=20, description="Members in these never earn")
    categories: list[Category] = Field(default=[], max_length=20, description="Purchase must include one of these")
    min_spend_vnd: AmountVnd | None = Field(default=None, description="Minimum purchase amount in VND")
    start_date: date | None = Field(default=None, description="First day the rule applies (inclusive)")
    end_date: date | None = Field(default=None, description="Last day the rule applies (inclusive)")
    days_of_week: list[Weekday] = Field(default=[], description="Weekdays the rule applies")
    hour_from: int | None = Field(default=None, ge=0, le=23, description="Earliest hour (Vietnam time), inclusive")
    hour_to: int | None = Field(default=None, ge=1, le=24, description="Latest hour (Vietnam time), exclusive")
    member_joined_within_days: int | None = Field(default=None, ge=1, le=3650, description="Only recent members")
    max_awards_per_member: int | None = Field(default=None, ge=1, le=1000, description="Awards per member, ever")
    max_awards_total: int | None = Field(default=None, ge=1, le=10_000_000, description="Awards across members")

    @model_validator(mode="after")
    def _windows(self) -> Self:
        if self.start_date and self.end_date and self.end_date < self.start_date:
            raise ValueError("end_date is before start_date")
        if self.hour_from is not None and self.hour_to is not None and self.hour_to <= self.hour_from:
            raise ValueError("hour_to must be after hour_from")
        return self


class RuleDefinition(Input):
    """Everything that defines a rule; ``rule_create`` and ``rule_update`` take all of it."""

    name: str = Field(min_length=3, max_length=120, description="Rule name shown to staff")
    description: str = Field(default="", max_length=1000, description="What the rule is for")
    priority: int = Field(default=100, ge=0, le=1000, description="Higher runs first; decides exclusive rules")
    stackable: bool = Field(
        default=True, description="Combines with other rules; of non-stackable matches only the top priority counts"
    )
    status: Literal["active", "inactive"] = Field(default="active", description="Inactive rules never award")
    formula: Formula
    criteria: RuleCriteria = Field(default=RuleCriteria(), description="When the rule applies")


class SegmentCriteria(Input):
    """Who belongs to a dynamic segment; every condition left empty means "no restriction"."""

    tiers: list[TierCode] = Field(default=[], description="Member tiers")
    cities: list[str] = Field(default=[], max_length=20, description="Cities, e.g. Hà Nội, TP. Hồ Chí Minh")
    min_points_balance: int | None = Field(default=None, ge=0, description="Minimum current points balance")
    max_points_balance: int | None = Field(default=None, ge=0, description="Maximum current points balance")
    min_lifetime_spend_vnd: AmountVnd | None = Field(default=None, description="Minimum total spend in VND")
    birthday_month: int | None = Field(default=None, ge=1, le=12, description="Month of birth (1-12)")
    joined_after: date | None = Field(default=None, description="Joined on or after this day")
    joined_before: date | None = Field(default=None, description="Joined before this day")
    inactive_days: int | None = Field(default=None, ge=1, le=3650, description="No purchase in this many days")
    active_within_days: int | None = Field(default=None, ge=1, le=3650, description="Bought in this many days")
    status: Literal["active", "inactive"] | None = Field(default="active", description="Member status; null = any")
