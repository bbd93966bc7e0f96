"""Reward tools: the catalogue members spend points on, stock, and redemptions (a voucher reward issues a voucher).

A redemption takes the points, decrements the stock and, for a voucher reward, issues the voucher,
all in one transaction; cancelling it refunds the points, restocks, and revokes an unused voucher.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from frontdesk.packs.loyalty.server._tool import JsonObject, Registrar, contains, paged, require, where
from frontdesk.packs.loyalty.server.db import Database, Row
from frontdesk.packs.loyalty.server.errors import StateError
from frontdesk.packs.loyalty.server.models import (
    AmountVnd,
    CampaignId,
    Idempotent,
    Input,
    MemberId,
    Page,
    Query,
    Reason,
    RedemptionId,
    RewardId,
    TierCode,
)
from frontdesk.packs.loyalty.server.points import active_member, post
from frontdesk.packs.loyalty.server.vouchers import VoucherTerms, issue_voucher

tool = Registrar()
TOOLS = tool.tools

RewardKind = Literal["physical", "voucher", "experience", "donation"]


class RewardListInput(Page):
    kind: RewardKind | None = Field(default=None, description="Only rewards of this kind")
    status: Literal["active", "inactive"] | None = Field(default=None, description="Only rewards in this state")
    max_points: int | None = Field(default=None, ge=1, description="Only rewards costing at most this many points")


class RewardSearchInput(Page):
    query: Query


class RewardRef(Input):
    reward_id: RewardId


class RewardCreateInput(Idempotent):
    name: str = Field(min_length=3, max_length=120, description="Reward name")
    description: str = Field(default="", max_length=1000, description="What the member gets")
    kind: RewardKind = Field(description="physical item, voucher (issued on redemption), experience or donation")
    points_cost: int = Field(ge=1, le=10_000_000, description="Points it costs")
    value_vnd: AmountVnd = Field(description="Its value in VND (a voucher reward's discount)")
    stock: int | None = Field(default=None, ge=0, description="Units available; none = unlimited")
    min_tier: TierCode = Field(default="bronze", description="Lowest tier allowed to redeem it")
    campaign_id: CampaignId | None = Field(default=None, description="Campaign it belongs to (optional)")


class RewardUpdateInput(RewardRef):
    name: str | None = Field(default=None, min_length=3, max_length=120, description="New name")
    description: str | None = Field(default=None, max_length=1000, description="New description")
    points_cost: int | None = Field(default=None, ge=1, le=10_000_000, description="New points cost")
    value_vnd: AmountVnd | None = Field(default=None, description="New value in VND")
    min_tier: TierCode | None = Field(default=None, description="New lowest tier")


class RestockInput(RewardRef):
    quantity: int = Field(ge=1, le=1_000_000, description="Units to add")


class RewardRedeemInput(RewardRef, Idempotent):
    member_id: MemberId


class CancelInput(Input):
    redemption_id: RedemptionId
    reason: Reason


class RedemptionListInput(Page):
    reward_id: RewardId | None = Field(default=None, description="Only redemptions of this reward")
    member_id: MemberId | None = Field(default=None, description="Only this member's redemptions")
    status: Literal["completed", "cancelled"] | None = Field(default=None, description="Only these")


def reward_row(db: Database, reward_id: str) -> Row:
    return require(db, "rewards", "reward", reward_id)


@tool(RewardListInput, read_only=True)
def reward_list(db: Database, p: RewardListInput) -> JsonObject:
    """List the reward catalogue (cheapest first), optionally by kind, status or maximum points cost."""
    clause, params = where([("kind = ?", p.kind), ("status = ?", p.status), ("points_cost <= ?", p.max_points)])
    sql = f"SELECT id, name, kind, points_cost, value_vnd, stock, min_tier, status FROM rewards{clause}"
    return paged(db, sql, params, p, "points_cost, id")


@tool(RewardSearchInput, read_only=True)
def reward_search(db: Database, p: RewardSearchInput) -> JsonObject:
    """Find rewards whose name or description contains the words (accents optional)."""
    sql = "SELECT id, name, kind, points_cost, stock, status FROM rewards WHERE fold(name || ' ' || description) LIKE ?"
    return paged(db, sql, [contains(p.query)], p, "points_cost, id")


@tool(RewardRef, read_only=True)
def reward_get(db: Database, p: RewardRef) -> JsonObject:
    """Read one reward with how often it has been redeemed."""
    redeemed = db.scalar(
        "SELECT COUNT(*) FROM redemptions WHERE reward_id = ? AND status = 'completed'", (p.reward_id,)
    )
    return {"reward": reward_row(db, p.reward_id), "redeemed": redeemed}


@tool(RewardCreateInput)
def reward_create(db: Database, p: RewardCreateInput) -> JsonObject:
    """Add a reward to the catalogue (active at once)."""
    if p.campaign_id:
        require(db, "campaigns", "campaign", p.campaign_id)
    reward_id = db.next_id("rwd")
    now = db.now_iso()
    fields = p.model_dump(exclude={"idempotency_key"})
    voucher = p.value_vnd if p.kind == "voucher" else None
    db.insert(
        "rewards",
        {
            "id": reward_id,
            **fields,
            "status": "active",
            "voucher_discount_vnd": voucher,
            "created_at": now,
            "updated_at": now,
        },
    )
    return {"reward": reward_row(db, reward_id)}


@tool(RewardUpdateInput)
def reward_update(db: Database, p: RewardUpdateInput) -> JsonObject:
    """Change a reward's name, description, points cost, value or minimum tier."""
    current = reward_row(db, p.reward_id)
    changes = p.model_dump(exclude={"reward_id"}, exclude_none=True)
    if not changes:
        raise StateError("nothing to update: give at least one field")
    if "value_vnd" in changes and current["kind"] == "voucher":
        changes["voucher_discount_vnd"] = changes["value_vnd"]
    db.update("rewards", p.reward_id, {**changes, "updated_at": db.now_iso()})
    return {"reward": reward_row(db, p.reward_id), "changed": sorted(changes)}


@tool(RewardRef, destructive=True)
def reward_delete(db: Database, p: RewardRef) -> JsonObject:
    """Delete a reward that has never been redeemed (otherwise deactivate it)."""
    reward_row(db, p.reward_id)
    used = db.scalar("SELECT COUNT(*) FROM redemptions WHERE reward_id = ?", (p.reward_id,))
    if used:
        raise StateError(f"reward {p.reward_id} has {used} redemptions; deactivate it instead of deleting")
    db.execute("DELETE FROM rewards WHERE id = ?", (p.reward_id,))
    return {"deleted": p.reward_id}


def _set_status(db: Database, reward_id: str, status: str) -> JsonObject:
    if reward_row(db, reward_id)["status"] == status:
        raise StateError(f"reward {reward_id} is already {status}")
    db.update("rewards", reward_id, {"status": status, "updated_at": db.now_iso()})
    return {"reward": reward_row(db, reward_id)}


@tool(RewardRef)
def reward_activate(db: Database, p: RewardRef) -> JsonObject:
    """Make an inactive reward redeemable again."""
    return _set_status(db, p.reward_id, "active")


@tool(RewardRef)
def reward_deactivate(db: Database, p: RewardRef) -> JsonObject:
    """Withdraw a reward from the catalogue without deleting it."""
    return _set_status(db, p.reward_id, "inactive")


@tool(RestockInput)
def reward_restock(db: Database, p: RestockInput) -> JsonObject:
    """Add units to a reward's stock (rewards with unlimited stock cannot be restocked)."""
    reward = reward_row(db, p.reward_id)
    if reward["stock"] is None:
        raise StateError(f"reward {p.reward_id} has unlimited stock")
    db.update("rewards", p.reward_id, {"stock": reward["stock"] + p.quantity, "updated_at": db.now_iso()})
    return {"reward_id": p.reward_id, "stock": reward["stock"] + p.quantity, "previous_stock": reward["stock"]}


@tool(RewardRedeemInput)
def reward_redeem(db: Database, p: RewardRedeemInput) -> JsonObject:
    """Redeem a reward for a member (checks tier, stock and balance); a voucher reward also issues the voucher."""
    member = active_member(db, p.member_id)
    reward = reward_row(db, p.reward_id)
    if reward["status"] != "active":
        raise StateError(f"reward {p.reward_id} is inactive")
    if reward["stock"] is not None and reward["stock"] <= 0:
        raise StateError(f"reward {p.reward_id} is out of stock")
    ranks = {row["code"]: row["rank"] for row in db.rows("SELECT code, rank FROM tiers")}
    if ranks[member["tier"]] < ranks[reward["min_tier"]]:
        raise StateError(f"reward {p.reward_id} needs tier {reward['min_tier']}; member is {member['tier']}")
    redemption_id = db.next_id("rdm")
    entry = post(
        db, p.member_id, "redeem", -reward["points_cost"], f"reward {reward['name']}", redemption_id=redemption_id
    )
    voucher = None
    if reward["kind"] == "voucher":
        terms = VoucherTerms(discount_type="amount", discount_value=reward["voucher_discount_vnd"], valid_days=90)
        voucher = issue_voucher(db, terms, p.member_id)
    if reward["stock"] is not None:
        db.update("rewards", p.reward_id, {"stock": reward["stock"] - 1})
    db.insert(
        "redemptions",
        {
            "id": redemption_id,
            "member_id": p.member_id,
            "reward_id": p.reward_id,
            "points": reward["points_cost"],
            "status": "completed",
            "voucher_id": voucher and voucher["id"],
            "created_at": db.now_iso(),
        },
    )
    return {
        "redemption_id": redemption_id,
        "reward_id": p.reward_id,
        "points": reward["points_cost"],
        "balance": entry["balance_after"],
        "voucher": voucher and {"id": voucher["id"], "code": voucher["code"], "expires_at": voucher["expires_at"]},
    }


@tool(CancelInput, destructive=True)
def reward_cancel_redemption(db: Database, p: CancelInput) -> JsonObject:
    """Cancel a redemption: refund the points, put the unit back in stock and revoke an unused voucher."""
    redemption = require(db, "redemptions", "redemption", p.redemption_id)
    if redemption["status"] == "cancelled":
        raise StateError(f"redemption {p.redemption_id} is already cancelled")
    if redemption["voucher_id"]:
        voucher = require(db, "vouchers", "voucher", redemption["voucher_id"])
        if voucher["status"] == "redeemed":
            raise StateError(f"its voucher {voucher['code']} has already been used; the redemption cannot be cancelled")
        db.update(
            "vouchers", voucher["id"], {"status": "revoked", "revoke_reason": f"redemption cancelled: {p.reason}"}
        )
    entry = post(
        db,
        redemption["member_id"],
        "refund",
        redemption["points"],
        f"cancelled: {p.reason}",
        redemption_id=p.redemption_id,
    )
    db.execute("UPDATE rewards SET stock = stock + 1 WHERE id = ? AND stock IS NOT NULL", (redemption["reward_id"],))
    db.update(
        "redemptions", p.redemption_id, {"status": "cancelled", "cancelled_at": db.now_iso(), "cancel_reason": p.reason}
    )
    return {
        "redemption_id": p.redemption_id,
        "refunded_points": redemption["points"],
        "balance": entry["balance_after"],
    }


@tool(RedemptionListInput, read_only=True)
def reward_list_redemptions(db: Database, p: RedemptionListInput) -> JsonObject:
    """List redemptions (newest first), optionally by reward, member or status."""
    clause, params = where([("reward_id = ?", p.reward_id), ("member_id = ?", p.member_id), ("status = ?", p.status)])
    sql = f"SELECT id, member_id, reward_id, points, status, voucher_id, created_at FROM redemptions{clause}"
    return paged(db, sql, params, p, "created_at DESC, id DESC")
