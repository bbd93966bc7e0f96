"""Tier tools: the four tiers, their thresholds and benefits, and evaluating members against them.

A member's tier follows their lifetime earned points (redemptions do not lower it). Evaluation
upgrades by default; downgrades only when asked. A manual override locks the tier until unlocked.
"""

from __future__ import annotations

from pydantic import Field

from frontdesk.packs.loyalty.server._tool import JsonObject, Registrar, loads, paged, require
from frontdesk.packs.loyalty.server.db import Database, Row, dumps
from frontdesk.packs.loyalty.server.errors import StateError
from frontdesk.packs.loyalty.server.models import Input, MemberId, Page, Reason, TierCode

tool = Registrar()
TOOLS = tool.tools


class NoInput(Input):
    pass


class TierRef(Input):
    tier_code: TierCode = Field(description="Tier code")


class TierUpdateInput(TierRef):
    name: str | None = Field(default=None, min_length=2, max_length=60, description="Display name")
    min_points: int | None = Field(default=None, ge=0, le=10_000_000, description="Lifetime points to reach it")
    earn_multiplier: float | None = Field(default=None, ge=1, le=5, description="Multiplier on every award")
    benefits: list[str] | None = Field(default=None, max_length=20, description="Benefit lines shown to members")


class MemberRef(Input):
    member_id: MemberId


class EvaluateInput(MemberRef):
    allow_downgrade: bool = Field(default=False, description="Also move the member down if below their tier")


class EvaluateAllInput(Input):
    allow_downgrade: bool = Field(default=False, description="Also move members down")
    dry_run: bool = Field(default=False, description="Only report what would change")


class SetTierInput(MemberRef):
    tier_code: TierCode = Field(description="Tier to put the member in")
    reason: Reason
    lock: bool = Field(default=True, description="Keep this tier until tier_unlock_member (evaluation skips it)")


class TierMembersInput(TierRef, Page):
    pass


def tiers(db: Database) -> list[Row]:
    return [loads(row, "benefits") for row in db.rows("SELECT * FROM tiers ORDER BY rank")]


def deserved(db: Database, lifetime_points: int) -> Row:
    return [tier for tier in tiers(db) if tier["min_points"] <= lifetime_points][-1]


def _progress(db: Database, member: Row) -> JsonObject:
    ladder = tiers(db)
    above = [tier for tier in ladder if tier["min_points"] > member["lifetime_points"]]
    return {
        "member_id": member["id"],
        "current_tier": member["tier"],
        "tier_locked": bool(member["tier_locked"]),
        "qualifying_points": member["lifetime_points"],
        "deserved_tier": deserved(db, member["lifetime_points"])["code"],
        "next_tier": above[0]["code"] if above else None,
        "points_to_next_tier": above[0]["min_points"] - member["lifetime_points"] if above else 0,
    }


def _move(db: Database, member_id: str, from_tier: str, to_tier: str, reason: str) -> None:
    db.execute("UPDATE members SET tier = ? WHERE id = ?", (to_tier, member_id))
    db.insert(
        "tier_history",
        {
            "member_id": member_id,
            "from_tier": from_tier,
            "to_tier": to_tier,
            "reason": reason,
            "created_at": db.now_iso(),
        },
    )


def apply_tier(
    db: Database, member_id: str, reason: str, allow_downgrade: bool = False, dry: bool = False
) -> JsonObject:
    """Move the member to the tier their points deserve (up only, unless ``allow_downgrade``)."""
    member = require(db, "members", "member", member_id)
    progress = _progress(db, member)
    rank = {tier["code"]: tier["rank"] for tier in tiers(db)}
    target = progress["deserved_tier"]
    up = rank[target] > rank[member["tier"]]
    down = rank[target] < rank[member["tier"]] and allow_downgrade
    changed = not member["tier_locked"] and (up or down)
    if changed and not dry:
        _move(db, member_id, member["tier"], target, reason)
    return {
        **progress,
        "from_tier": member["tier"],
        "to_tier": target if changed else member["tier"],
        "changed": changed,
    }


@tool(NoInput, read_only=True)
def tier_list(db: Database, p: NoInput) -> JsonObject:
    """List the tiers in order with thresholds, earn multipliers, benefits and member counts."""
    counts = {row["tier"]: row["n"] for row in db.rows("SELECT tier, COUNT(*) AS n FROM members GROUP BY tier")}
    return {"tiers": [{**tier, "members": counts.get(tier["code"], 0)} for tier in tiers(db)]}


@tool(TierRef, read_only=True)
def tier_get(db: Database, p: TierRef) -> JsonObject:
    """Read one tier: threshold, earn multiplier, benefits and member count."""
    tier = loads(require(db, "tiers", "tier", p.tier_code, column="code"), "benefits")
    members = db.scalar("SELECT COUNT(*) FROM members WHERE tier = ?", (p.tier_code,))
    return {"tier": tier, "members": members}


@tool(TierUpdateInput)
def tier_update(db: Database, p: TierUpdateInput) -> JsonObject:
    """Change a tier's name, threshold, earn multiplier or benefits (thresholds must keep rising by rank)."""
    changes = p.model_dump(exclude={"tier_code"}, exclude_none=True)
    if not changes:
        raise StateError("nothing to update: give at least one field")
    ladder = {tier["code"]: tier for tier in tiers(db)}
    if "min_points" in changes:
        ladder[p.tier_code] = {**ladder[p.tier_code], "min_points": changes["min_points"]}
        thresholds = [tier["min_points"] for tier in sorted(ladder.values(), key=lambda tier: tier["rank"])]
        if thresholds[0] != 0 or thresholds != sorted(set(thresholds)):
            raise StateError(f"thresholds must start at 0 and rise by rank; would be {thresholds}")
    if "benefits" in changes:
        changes["benefits"] = dumps(changes["benefits"])
    sets = ", ".join(f"{column} = ?" for column in changes)
    db.execute(f"UPDATE tiers SET {sets} WHERE code = ?", [*changes.values(), p.tier_code])
    return {
        "tier": loads(require(db, "tiers", "tier", p.tier_code, column="code"), "benefits"),
        "changed": sorted(changes),
    }


@tool(MemberRef, read_only=True)
def tier_preview_member(db: Database, p: MemberRef) -> JsonObject:
    """Show a member's qualifying points, the tier they deserve and the points missing to the next tier."""
    return _progress(db, require(db, "members", "member", p.member_id))


@tool(EvaluateInput)
def tier_evaluate_member(db: Database, p: EvaluateInput) -> JsonObject:
    """Re-evaluate one member's tier from their lifetime points and apply any upgrade (or asked-for downgrade)."""
    return apply_tier(db, p.member_id, "evaluation", p.allow_downgrade)


@tool(EvaluateAllInput)
def tier_evaluate_all(db: Database, p: EvaluateAllInput) -> JsonObject:
    """Re-evaluate every active member's tier; with dry_run only report the changes."""
    changes = []
    for row in db.rows("SELECT id FROM members WHERE status = 'active' ORDER BY id"):
        result = apply_tier(db, row["id"], "batch evaluation", p.allow_downgrade, dry=p.dry_run)
        if result["changed"]:
            changes.append({key: result[key] for key in ("member_id", "from_tier", "to_tier", "qualifying_points")})
    return {"dry_run": p.dry_run, "changed": len(changes), "changes": changes}


@tool(SetTierInput)
def tier_set_member(db: Database, p: SetTierInput) -> JsonObject:
    """Put a member in a tier by hand (e.g. a goodwill upgrade), locked against evaluation by default."""
    member = require(db, "members", "member", p.member_id)
    if member["tier"] != p.tier_code:
        _move(db, p.member_id, member["tier"], p.tier_code, f"manual: {p.reason}")
    db.execute("UPDATE members SET tier_locked = ? WHERE id = ?", (int(p.lock), p.member_id))
    return {"member_id": p.member_id, "from_tier": member["tier"], "to_tier": p.tier_code, "tier_locked": p.lock}


@tool(MemberRef)
def tier_unlock_member(db: Database, p: MemberRef) -> JsonObject:
    """Remove a manual tier lock so evaluation manages the member's tier again."""
    member = require(db, "members", "member", p.member_id)
    if not member["tier_locked"]:
        raise StateError(f"member {p.member_id}'s tier is not locked")
    db.execute("UPDATE members SET tier_locked = 0 WHERE id = ?", (p.member_id,))
    return {"member_id": p.member_id, "tier": member["tier"], "tier_locked": False}


@tool(TierMembersInput, read_only=True)
def tier_list_members(db: Database, p: TierMembersInput) -> JsonObject:
    """List the members of one tier, highest lifetime points first."""
    sql = "SELECT id, name, points_balance, lifetime_points, status FROM members WHERE tier = ?"
    return {"tier_code": p.tier_code, **paged(db, sql, [p.tier_code], p, "lifetime_points DESC, id")}


@tool(MemberRef, read_only=True)
def tier_get_history(db: Database, p: MemberRef) -> JsonObject:
    """List a member's tier changes, newest first."""
    require(db, "members", "member", p.member_id)
    history = db.rows(
        "SELECT from_tier, to_tier, reason, created_at FROM tier_history WHERE member_id = ? ORDER BY id DESC",
        (p.member_id,),
    )
    return {"member_id": p.member_id, "history": history}
