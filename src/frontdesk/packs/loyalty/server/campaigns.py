"""Campaign tools: list, search, read, create, update, delete, and the draft → active ⇄ paused → ended lifecycle."""

from __future__ import annotations

from datetime import date
from typing import Literal, Self

from pydantic import Field, model_validator

from frontdesk.packs.loyalty.server._tool import JsonObject, Registrar, contains, loads, paged, require, where
from frontdesk.packs.loyalty.server.db import Database, Row, dumps
from frontdesk.packs.loyalty.server.errors import StateError
from frontdesk.packs.loyalty.server.models import (
    CampaignId,
    CampaignStatus,
    Channel,
    Idempotent,
    Input,
    Page,
    Query,
)

tool = Registrar()
TOOLS = tool.tools

# action -> (states it may start from, state it leads to)
TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "activate": (frozenset({"draft", "paused"}), "active"),
    "pause": (frozenset({"active"}), "paused"),
    "end": (frozenset({"active", "paused"}), "ended"),
}


class CampaignListInput(Page):
    status: CampaignStatus | None = Field(default=None, description="Only campaigns in this state")
    channel: Channel | None = Field(default=None, description="Only campaigns open on this channel")


class CampaignSearchInput(Page):
    query: Query


class CampaignRef(Input):
    campaign_id: CampaignId


class CampaignFields(Input):
    name: str = Field(min_length=3, max_length=120, description="Campaign name")
    description: str = Field(default="", max_length=1000, description="What the campaign is for")
    start_date: date | None = Field(default=None, description="First day (inclusive); none = from activation")
    end_date: date | None = Field(default=None, description="Last day (inclusive); none = open-ended")
    budget_points: int | None = Field(default=None, ge=1, description="Points the campaign may award in total")
    channels: list[Channel] = Field(default=[], description="Channels it runs on; empty = all")

    @model_validator(mode="after")
    def _window(self) -> Self:
        if self.start_date and self.end_date and self.end_date < self.start_date:
            raise ValueError("end_date is before start_date")
        return self


class CampaignCreateInput(CampaignFields, Idempotent):
    pass


class CampaignUpdateInput(CampaignRef):
    name: str | None = Field(default=None, min_length=3, max_length=120, description="New name")
    description: str | None = Field(default=None, max_length=1000, description="New description")
    start_date: date | None = Field(default=None, description="New first day")
    end_date: date | None = Field(default=None, description="New last day")
    budget_points: int | None = Field(default=None, ge=1, description="New points budget")
    channels: list[Channel] | None = Field(default=None, description="New channel list; [] = all")


class CampaignPauseInput(CampaignRef):
    reason: str = Field(default="", max_length=300, description="Why it is paused (optional)")


class CampaignCloneInput(CampaignRef, Idempotent):
    name: str | None = Field(default=None, min_length=3, max_length=120, description="Name of the copy")


class CampaignRulesInput(CampaignRef):
    status: Literal["active", "inactive"] | None = Field(default=None, description="Only rules in this state")


def campaign_row(db: Database, campaign_id: str) -> Row:
    return loads(require(db, "campaigns", "campaign", campaign_id), "channels")


def _counts(db: Database, campaign_id: str) -> JsonObject:
    return {
        "rules": db.scalar("SELECT COUNT(*) FROM rules WHERE campaign_id = ?", (campaign_id,)),
        "points_awarded": db.scalar(
            "SELECT COALESCE(SUM(points), 0) FROM ledger WHERE campaign_id = ?", (campaign_id,)
        ),
    }


@tool(CampaignListInput, read_only=True)
def campaign_list(db: Database, p: CampaignListInput) -> JsonObject:
    """List campaigns (newest first), optionally only those in one state or on one channel."""
    clause, params = where(
        [
            ("status = ?", p.status),
            ("(channels = '[]' OR EXISTS (SELECT 1 FROM json_each(channels) WHERE value = ?))", p.channel),
        ]
    )
    sql = f"SELECT id, name, status, start_date, end_date, channels FROM campaigns{clause}"
    result = paged(db, sql, params, p, "created_at DESC, id DESC")
    result["items"] = [loads(row, "channels") for row in result["items"]]
    return result


@tool(CampaignSearchInput, read_only=True)
def campaign_search(db: Database, p: CampaignSearchInput) -> JsonObject:
    """Find campaigns whose name or description contains the words (accents optional)."""
    sql = "SELECT id, name, status, start_date, end_date FROM campaigns WHERE fold(name || ' ' || description) LIKE ?"
    return paged(db, sql, [contains(p.query)], p, "id")


@tool(CampaignRef, read_only=True)
def campaign_get(db: Database, p: CampaignRef) -> JsonObject:
    """Read one campaign with its rule count and the points it has awarded."""
    return {"campaign": campaign_row(db, p.campaign_id), **_counts(db, p.campaign_id)}


@tool(CampaignCreateInput)
def campaign_create(db: Database, p: CampaignCreateInput) -> JsonObject:
    """Create a campaign in the draft state; add rules, then activate it."""
    campaign_id = db.next_id("cmp")
    now = db.now_iso()
    db.insert(
        "campaigns",
        {
            "id": campaign_id,
            "name": p.name,
            "description": p.description,
            "status": "draft",
            "start_date": p.start_date and p.start_date.isoformat(),
            "end_date": p.end_date and p.end_date.isoformat(),
            "budget_points": p.budget_points,
            "channels": dumps(p.channels),
            "created_at": now,
            "updated_at": now,
        },
    )
    return {"campaign": campaign_row(db, campaign_id)}


@tool(CampaignUpdateInput)
def campaign_update(db: Database, p: CampaignUpdateInput) -> JsonObject:
    """Change a draft, active or paused campaign's name, description, dates, budget or channels."""
    current = campaign_row(db, p.campaign_id)
    if current["status"] == "ended":
        raise StateError(f"campaign {p.campaign_id} has ended and can no longer be changed; clone it instead")
    changes = p.model_dump(exclude={"campaign_id"}, exclude_none=True, mode="json")
    if not changes:
        raise StateError("nothing to update: give at least one field")
    start = changes.get("start_date", current["start_date"])
    end = changes.get("end_date", current["end_date"])
    if start and end and end < start:
        raise StateError(f"end_date {end} would be before start_date {start}")
    if "channels" in changes:
        changes["channels"] = dumps(changes["channels"])
    db.update("campaigns", p.campaign_id, {**changes, "updated_at": db.now_iso()})
    return {"campaign": campaign_row(db, p.campaign_id), "changed": sorted(changes)}


@tool(CampaignRef, destructive=True)
def campaign_delete(db: Database, p: CampaignRef) -> JsonObject:
    """Delete a draft campaign and its rules; campaigns that have run must be ended instead."""
    current = campaign_row(db, p.campaign_id)
    if current["status"] != "draft":
        raise StateError(f"campaign {p.campaign_id} is {current['status']}; only drafts can be deleted, end it instead")
    rules = db.execute("DELETE FROM rules WHERE campaign_id = ?", (p.campaign_id,))
    db.execute("UPDATE rewards SET campaign_id = NULL WHERE campaign_id = ?", (p.campaign_id,))
    db.execute("UPDATE vouchers SET campaign_id = NULL WHERE campaign_id = ?", (p.campaign_id,))
    db.execute("DELETE FROM campaigns WHERE id = ?", (p.campaign_id,))
    return {"deleted": p.campaign_id, "rules_deleted": rules}


def _transition(db: Database, campaign_id: str, action: str, note: str = "") -> JsonObject:
    current = campaign_row(db, campaign_id)
    sources, target = TRANSITIONS[action]
    if current["status"] not in sources:
        allowed = " or ".join(sorted(sources))
        raise StateError(f"cannot {action} campaign {campaign_id}: it is {current['status']} (must be {allowed})")
    db.update("campaigns", campaign_id, {"status": target, "updated_at": db.now_iso()})
    result: JsonObject = {"campaign": campaign_row(db, campaign_id), "previous_status": current["status"]}
    if note:
        result["note"] = note
    return result


@tool(CampaignRef)
def campaign_activate(db: Database, p: CampaignRef) -> JsonObject:
    """Start (or resume) a draft or paused campaign; it needs an active rule and an end date not yet past."""
    current = campaign_row(db, p.campaign_id)
    if current["end_date"] and current["end_date"] < db.now().date().isoformat():
        raise StateError(f"campaign {p.campaign_id} ended on {current['end_date']}; move end_date first")
    active = db.scalar("SELECT COUNT(*) FROM rules WHERE campaign_id = ? AND status = 'active'", (p.campaign_id,))
    if current["status"] in TRANSITIONS["activate"][0] and not active:
        raise StateError(f"campaign {p.campaign_id} has no active rule; add one with rule_create first")
    return _transition(db, p.campaign_id, "activate")


@tool(CampaignPauseInput)
def campaign_pause(db: Database, p: CampaignPauseInput) -> JsonObject:
    """Pause an active campaign: its rules stop awarding points until it is activated again."""
    return _transition(db, p.campaign_id, "pause", p.reason)


@tool(CampaignRef, destructive=True)
def campaign_end(db: Database, p: CampaignRef) -> JsonObject:
    """End an active or paused campaign for good (it cannot be reactivated; clone it to run again)."""
    return _transition(db, p.campaign_id, "end")


@tool(CampaignCloneInput)
def campaign_clone(db: Database, p: CampaignCloneInput) -> JsonObject:
    """Copy a campaign and all its rules into a new draft campaign."""
    source = campaign_row(db, p.campaign_id)
    campaign_id = db.next_id("cmp")
    now = db.now_iso()
    db.insert(
        "campaigns",
        {
            **source,
            "id": campaign_id,
            "name": p.name or f"{source['name']} (copy)",
            "status": "draft",
            "channels": dumps(source["channels"]),
            "created_at": now,
            "updated_at": now,
        },
    )
    rules = db.rows("SELECT * FROM rules WHERE campaign_id = ? ORDER BY id", (p.campaign_id,))
    for rule in rules:
        db.insert("rules", {**rule, "id": db.next_id("rul"), "campaign_id": campaign_id, "created_at": now})
    return {"campaign": campaign_row(db, campaign_id), "cloned_from": p.campaign_id, "rules_copied": len(rules)}


@tool(CampaignRulesInput, read_only=True)
def campaign_list_rules(db: Database, p: CampaignRulesInput) -> JsonObject:
    """List a campaign's rules (id, name, formula type, status, priority)."""
    campaign_row(db, p.campaign_id)
    clause, params = where([("campaign_id = ?", p.campaign_id), ("status = ?", p.status)])
    rules = db.rows(
        f"SELECT id, name, formula_type, status, priority, stackable FROM rules{clause} ORDER BY priority DESC, id",
        params,
    )
    for rule in rules:
        rule["stackable"] = bool(rule["stackable"])
    return {"campaign_id": p.campaign_id, "rules": rules}


@tool(CampaignRef, read_only=True)
def campaign_list_rewards(db: Database, p: CampaignRef) -> JsonObject:
    """List the rewards attached to a campaign."""
    campaign_row(db, p.campaign_id)
    rewards = db.rows(
        "SELECT id, name, kind, points_cost, stock, status FROM rewards WHERE campaign_id = ? ORDER BY id",
        (p.campaign_id,),
    )
    return {"campaign_id": p.campaign_id, "rewards": rewards}
