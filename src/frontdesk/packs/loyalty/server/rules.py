"""Rule tools: list, search, read, and the writes that take the whole rule model (formula + criteria).

``rule_create`` and ``rule_update`` deliberately take everything at once (a large schema); the small
read tools in ``rule_checks.py`` let a staged flow build the same rule piece by piece.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from frontdesk.packs.loyalty.server._tool import JsonObject, Registrar, contains, loads, paged, require, where
from frontdesk.packs.loyalty.server.campaigns import campaign_row
from frontdesk.packs.loyalty.server.db import Database, Row, dumps
from frontdesk.packs.loyalty.server.errors import NotFoundError, StateError
from frontdesk.packs.loyalty.server.models import (
    CampaignId,
    FormulaType,
    Idempotent,
    Input,
    Page,
    Query,
    RuleCriteria,
    RuleDefinition,
    RuleId,
)

tool = Registrar()
TOOLS = tool.tools


class RuleListInput(Page):
    campaign_id: CampaignId | None = Field(default=None, description="Only rules of this campaign")
    status: Literal["active", "inactive"] | None = Field(default=None, description="Only rules in this state")
    formula_type: FormulaType | None = Field(default=None, description="Only rules with this formula type")


class RuleSearchInput(Page):
    query: Query


class RuleRef(Input):
    rule_id: RuleId


class RuleCreateInput(RuleDefinition, Idempotent):
    campaign_id: CampaignId = Field(description="Campaign the rule belongs to (not ended)")


class RuleUpdateInput(RuleDefinition):
    rule_id: RuleId = Field(description="Rule to replace; every field is replaced, as in rule_create")


class RuleCloneInput(RuleRef, Idempotent):
    campaign_id: CampaignId | None = Field(default=None, description="Target campaign; default: the same one")
    name: str | None = Field(default=None, min_length=3, max_length=120, description="Name of the copy")


class RulePriorityInput(RuleRef):
    priority: int = Field(ge=0, le=1000, description="New priority; higher runs first")


def rule_json(row: Row) -> Row:
    row = loads(row, "formula", "criteria")
    row["stackable"] = bool(row["stackable"])
    return row


def rule_row(db: Database, rule_id: str) -> Row:
    return rule_json(require(db, "rules", "rule", rule_id))


def check_segments(db: Database, criteria: RuleCriteria) -> None:
    for segment_id in [*criteria.segment_ids, *criteria.exclude_segment_ids]:
        if db.scalar("SELECT 1 FROM segments WHERE id = ?", (segment_id,)) is None:
            raise NotFoundError("segment", segment_id)


def _open_campaign(db: Database, campaign_id: str) -> Row:
    campaign = campaign_row(db, campaign_id)
    if campaign["status"] == "ended":
        raise StateError(f"campaign {campaign_id} has ended; its rules can no longer change")
    return campaign


def _columns(definition: RuleDefinition) -> Row:
    return {
        "name": definition.name,
        "description": definition.description,
        "status": definition.status,
        "priority": definition.priority,
        "stackable": int(definition.stackable),
        "formula_type": definition.formula.type,
        "formula": dumps(definition.formula.model_dump(mode="json")),
        "criteria": dumps(definition.criteria.model_dump(mode="json", exclude_defaults=True)),
    }


@tool(RuleListInput, read_only=True)
def rule_list(db: Database, p: RuleListInput) -> JsonObject:
    """List rules (id, campaign, name, formula type, status, priority), optionally filtered."""
    clause, params = where(
        [("campaign_id = ?", p.campaign_id), ("status = ?", p.status), ("formula_type = ?", p.formula_type)]
    )
    sql = f"SELECT id, campaign_id, name, formula_type, status, priority FROM rules{clause}"
    return paged(db, sql, params, p, "campaign_id, priority DESC, id")


@tool(RuleSearchInput, read_only=True)
def rule_search(db: Database, p: RuleSearchInput) -> JsonObject:
    """Find rules whose name or description contains the words (accents optional)."""
    sql = "SELECT id, campaign_id, name, formula_type, status FROM rules WHERE fold(name || ' ' || description) LIKE ?"
    return paged(db, sql, [contains(p.query)], p, "id")


@tool(RuleRef, read_only=True)
def rule_get(db: Database, p: RuleRef) -> JsonObject:
    """Read one rule in full: formula, criteria, status, and the awards it has given."""
    stats = db.row(
        "SELECT COUNT(*) AS awards, COALESCE(SUM(points), 0) AS points FROM ledger WHERE rule_id = ?", (p.rule_id,)
    )
    return {"rule": rule_row(db, p.rule_id), "awards": stats}


@tool(RuleCreateInput)
def rule_create(db: Database, p: RuleCreateInput) -> JsonObject:
    """Create a rule (name, formula, criteria, priority) in a campaign that has not ended."""
    _open_campaign(db, p.campaign_id)
    check_segments(db, p.criteria)
    rule_id = db.next_id("rul")
    now = db.now_iso()
    db.insert(
        "rules", {"id": rule_id, "campaign_id": p.campaign_id, **_columns(p), "created_at": now, "updated_at": now}
    )
    return {"rule": rule_row(db, rule_id)}


@tool(RuleUpdateInput)
def rule_update(db: Database, p: RuleUpdateInput) -> JsonObject:
    """Replace a rule's whole definition (name, formula, criteria, priority, status)."""
    current = rule_row(db, p.rule_id)
    _open_campaign(db, current["campaign_id"])
    check_segments(db, p.criteria)
    db.update("rules", p.rule_id, {**_columns(p), "updated_at": db.now_iso()})
    return {"rule": rule_row(db, p.rule_id), "previous_formula_type": current["formula_type"]}


@tool(RuleRef, destructive=True)
def rule_delete(db: Database, p: RuleRef) -> JsonObject:
    """Delete a rule that has never awarded points (otherwise deactivate it to keep the ledger's history)."""
    rule_row(db, p.rule_id)
    awards = db.scalar("SELECT COUNT(*) FROM ledger WHERE rule_id = ?", (p.rule_id,))
    if awards:
        raise StateError(f"rule {p.rule_id} has {awards} ledger entries; deactivate it instead of deleting")
    db.execute("DELETE FROM rules WHERE id = ?", (p.rule_id,))
    return {"deleted": p.rule_id}


def _set_status(db: Database, rule_id: str, status: str) -> JsonObject:
    current = rule_row(db, rule_id)
    _open_campaign(db, current["campaign_id"])
    if current["status"] == status:
        raise StateError(f"rule {rule_id} is already {status}")
    db.update("rules", rule_id, {"status": status, "updated_at": db.now_iso()})
    return {"rule": rule_row(db, rule_id), "previous_status": current["status"]}


@tool(RuleRef)
def rule_activate(db: Database, p: RuleRef) -> JsonObject:
    """Turn an inactive rule on; it awards points while its campaign is active."""
    return _set_status(db, p.rule_id, "active")


@tool(RuleRef)
def rule_deactivate(db: Database, p: RuleRef) -> JsonObject:
    """Turn a rule off without deleting it."""
    return _set_status(db, p.rule_id, "inactive")


@tool(RuleCloneInput)
def rule_clone(db: Database, p: RuleCloneInput) -> JsonObject:
    """Copy a rule, into the same or another campaign that has not ended."""
    source = require(db, "rules", "rule", p.rule_id)
    target = p.campaign_id or source["campaign_id"]
    _open_campaign(db, target)
    rule_id = db.next_id("rul")
    now = db.now_iso()
    name = p.name or f"{source['name']} (copy)"
    db.insert(
        "rules", {**source, "id": rule_id, "campaign_id": target, "name": name, "created_at": now, "updated_at": now}
    )
    return {"rule": rule_row(db, rule_id), "cloned_from": p.rule_id}


@tool(RulePriorityInput)
def rule_set_priority(db: Database, p: RulePriorityInput) -> JsonObject:
    """Change a rule's priority (higher runs first and wins among non-stackable rules)."""
    current = rule_row(db, p.rule_id)
    _open_campaign(db, current["campaign_id"])
    db.update("rules", p.rule_id, {"priority": p.priority, "updated_at": db.now_iso()})
    return {"rule_id": p.rule_id, "priority": p.priority, "previous_priority": current["priority"]}
