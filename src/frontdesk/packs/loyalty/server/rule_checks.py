"""Small read-only rule tools for a staged create flow: the formula types, one type's schema, validating
a formula or criteria, previewing a formula's points on a sample purchase, simulating a member's purchase."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from pydantic import Field, ValidationError

from frontdesk.packs.loyalty.server._earning import FORMULA, aware, evaluate, member_facts
from frontdesk.packs.loyalty.server._tool import JsonObject, Registrar, require
from frontdesk.packs.loyalty.server.db import Database, iso
from frontdesk.packs.loyalty.server.engine import (
    VIETNAM,
    PurchaseFacts,
    formula_points,
    synthetic_history,
    with_tier,
)
from frontdesk.packs.loyalty.server.errors import NotFoundError
from frontdesk.packs.loyalty.server.models import (
    FORMULA_MODELS,
    FormulaType,
    Input,
    MemberId,
    Purchase,
    RuleCriteria,
    TierCode,
    json_schema,
)
from frontdesk.packs.loyalty.server.rules import check_segments

tool = Registrar()
TOOLS = tool.tools


class NoInput(Input):
    pass


class FormulaTypeInput(Input):
    type: FormulaType = Field(description="Formula type")


class FormulaInput(FormulaTypeInput):
    fields: dict[str, Any] = Field(default={}, description="The formula's fields (see rule_get_formula_schema)")


class CriteriaInput(Input):
    criteria: dict[str, Any] = Field(description="Rule criteria as in rule_create (channels, tiers, dates, ...)")


class PreviewInput(FormulaInput):
    purchase: Purchase = Field(description="A sample purchase")
    tier: TierCode = Field(default="bronze", description="Tier of the sample member (its earn multiplier applies)")
    is_first_purchase: bool = Field(default=False, description="Treat as the member's first purchase")
    days_since_joining: int = Field(default=0, ge=0, le=36500, description="Days between joining and the purchase")
    birthday: date | None = Field(default=None, description="Sample member's birthday")
    streak_periods: int = Field(default=1, ge=1, le=104, description="Consecutive periods with a purchase, incl. this")


class SimulateInput(Input):
    member_id: MemberId
    purchase: Purchase = Field(description="The purchase to simulate (nothing is recorded)")


def _errors(exc: ValidationError) -> list[JsonObject]:
    return [
        {"field": ".".join(str(part) for part in err["loc"]) or "(root)", "message": err["msg"]} for err in exc.errors()
    ]


def _formula(p: FormulaInput) -> Any:
    fields = {key: value for key, value in p.fields.items() if key != "type"}
    return FORMULA.validate_python({"type": p.type, **fields})


@tool(NoInput, read_only=True)
def rule_list_formula_types(db: Database, p: NoInput) -> JsonObject:
    """List the 8 rule formula types with a one-line meaning and their field names."""
    types = [
        {
            "type": name,
            "description": (model.__doc__ or "").strip(),
            "fields": [field for field in model.model_fields if field != "type"],
            "required": [field for field, info in model.model_fields.items() if info.is_required() and field != "type"],
        }
        for name, model in FORMULA_MODELS.items()
    ]
    return {"formula_types": types}


@tool(FormulaTypeInput, read_only=True)
def rule_get_formula_schema(db: Database, p: FormulaTypeInput) -> JsonObject:
    """Return the JSON schema of one formula type, to fill in once the type is chosen."""
    return {"type": p.type, "schema": json_schema(FORMULA_MODELS[p.type])}


@tool(FormulaInput, read_only=True)
def rule_validate_formula(db: Database, p: FormulaInput) -> JsonObject:
    """Check a formula (type + fields) and return ok with the normalised formula, or the errors to fix."""
    try:
        formula = _formula(p)
    except ValidationError as exc:
        return {"ok": False, "type": p.type, "errors": _errors(exc)}
    return {"ok": True, "type": p.type, "formula": formula.model_dump(mode="json"), "errors": []}


@tool(CriteriaInput, read_only=True)
def rule_validate_criteria(db: Database, p: CriteriaInput) -> JsonObject:
    """Check rule criteria (and that its segments exist); return ok with the normalised criteria, or errors."""
    try:
        criteria = RuleCriteria.model_validate(p.criteria)
        check_segments(db, criteria)
    except ValidationError as exc:
        return {"ok": False, "errors": _errors(exc)}
    except NotFoundError as exc:
        return {"ok": False, "errors": [{"field": "segment_ids", "message": str(exc)}]}
    return {"ok": True, "criteria": criteria.model_dump(mode="json", exclude_defaults=True), "errors": []}


@tool(PreviewInput, read_only=True)
def rule_preview_points(db: Database, p: PreviewInput) -> JsonObject:
    """Compute the points a formula gives for a sample purchase and member (criteria are not checked)."""
    try:
        formula = _formula(p)
    except ValidationError as exc:
        return {"ok": False, "type": p.type, "errors": _errors(exc)}
    at = aware(p.purchase.occurred_at) if p.purchase.occurred_at else db.now()
    day = at.astimezone(VIETNAM).date()
    facts = PurchaseFacts(
        amount_vnd=p.purchase.amount_vnd,
        channel=p.purchase.channel,
        items=tuple(p.purchase.items),
        occurred_at=at,
        tier=p.tier,
        joined_on=day - timedelta(days=p.days_since_joining),
        birthday=p.birthday,
        is_first_purchase=p.is_first_purchase,
        history=synthetic_history(day, getattr(formula, "period", "week"), p.streak_periods),
    )
    points, explanation = formula_points("preview", formula, facts)
    multiplier = float(db.scalar("SELECT earn_multiplier FROM tiers WHERE code = ?", (p.tier,)))
    return {
        "ok": True,
        "type": p.type,
        "points": points,
        "tier_multiplier": multiplier,
        "points_with_tier": with_tier(points, multiplier),
        "explanation": explanation,
    }


@tool(SimulateInput, read_only=True)
def rule_simulate_purchase(db: Database, p: SimulateInput) -> JsonObject:
    """Dry-run a member's purchase: which active rules would award how many points, and why others would not."""
    member = require(db, "members", "member", p.member_id)
    at = aware(p.purchase.occurred_at) if p.purchase.occurred_at else db.now()
    result = evaluate(db, member_facts(db, member, p.purchase, at))
    return {
        "member_id": p.member_id,
        "occurred_at": iso(at),
        "tier": member["tier"],
        "tier_multiplier": result.tier_multiplier,
        "total_points": result.total,
        "awards": [award.as_json() for award in result.awards],
        "skipped": result.skipped,
    }
