"""Member point tools: record a purchase (rules award points), earn, redeem, adjust, transfer, and read the ledger.

Every change is one ledger entry carrying the balance after it; a balance never goes negative (checked
here with a clear error, and by a CHECK constraint underneath). Earned points also count toward the tier.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from frontdesk.packs.loyalty.server._earning import aware, evaluate, member_facts
from frontdesk.packs.loyalty.server._tool import JsonObject, Registrar, paged, require, where
from frontdesk.packs.loyalty.server.db import Database, Row, dumps, iso
from frontdesk.packs.loyalty.server.errors import ConflictError, InsufficientPointsError, StateError
from frontdesk.packs.loyalty.server.models import CampaignId, Idempotent, Input, MemberId, Page, Purchase, Reason
from frontdesk.packs.loyalty.server.tiers import apply_tier

tool = Registrar()
TOOLS = tool.tools

Kind = Literal["earn", "redeem", "adjust", "refund"]


class MemberRef(Input):
    member_id: MemberId


class RecordPurchaseInput(Purchase, Idempotent):
    member_id: MemberId
    order_ref: str | None = Field(
        default=None, min_length=1, max_length=60, description="Order number; an order earns points only once"
    )


class EarnInput(Idempotent):
    member_id: MemberId
    points: int = Field(ge=1, le=1_000_000, description="Points to add (they count toward the tier)")
    reason: Reason
    campaign_id: CampaignId | None = Field(default=None, description="Campaign to charge the points to (optional)")


class RedeemInput(Idempotent):
    member_id: MemberId
    points: int = Field(ge=1, le=10_000_000, description="Points to take off the balance")
    reason: Reason


class AdjustInput(Idempotent):
    member_id: MemberId
    points: int = Field(ge=-10_000_000, le=10_000_000, description="Signed correction; must not be 0")
    reason: Reason

    @model_validator(mode="after")
    def _not_zero(self) -> Self:
        if self.points == 0:
            raise ValueError("points must not be 0")
        return self


class TransferInput(Idempotent):
    from_member_id: MemberId = Field(description="Member giving the points")
    to_member_id: MemberId = Field(description="Member receiving the points")
    points: int = Field(ge=1, le=10_000_000, description="Points to move")
    reason: Reason


class LedgerInput(MemberRef, Page):
    kind: Kind | None = Field(default=None, description="Only entries of this kind")


class PurchasesInput(MemberRef, Page):
    pass


def active_member(db: Database, member_id: str) -> Row:
    member = require(db, "members", "member", member_id)
    if member["status"] != "active":
        raise StateError(f"member {member_id} is inactive; reactivate them first (member_reactivate)")
    return member


def post(db: Database, member_id: str, kind: Kind, points: int, reason: str, **refs: str | None) -> JsonObject:
    """Apply a signed change to the member's balance and write its ledger entry."""
    balance = int(db.scalar("SELECT points_balance FROM members WHERE id = ?", (member_id,)))
    if balance + points < 0:
        raise InsufficientPointsError(member_id, balance, -points)
    qualifying = points if kind == "earn" else 0
    db.execute(
        "UPDATE members SET points_balance = ?, lifetime_points = lifetime_points + ? WHERE id = ?",
        (balance + points, qualifying, member_id),
    )
    entry = {
        "id": db.next_id("led", 6),
        "member_id": member_id,
        "kind": kind,
        "points": points,
        "balance_after": balance + points,
        "reason": reason,
        **refs,
        "created_at": db.now_iso(),
    }
    db.insert("ledger", entry)
    return {key: value for key, value in entry.items() if value is not None}


def _balance(db: Database, member_id: str) -> JsonObject:
    row = db.row("SELECT id, points_balance, lifetime_points, tier FROM members WHERE id = ?", (member_id,))
    assert row is not None
    return {
        "member_id": row["id"],
        "balance": row["points_balance"],
        "lifetime_points": row["lifetime_points"],
        "tier": row["tier"],
    }


@tool(RecordPurchaseInput)
def member_record_purchase(db: Database, p: RecordPurchaseInput) -> JsonObject:
    """Record a member's purchase: every matching active rule awards points, then the tier is re-evaluated."""
    member = active_member(db, p.member_id)
    if p.order_ref and (seen := db.scalar("SELECT id FROM purchases WHERE order_ref = ?", (p.order_ref,))):
        raise ConflictError(f"order {p.order_ref} was already recorded as {seen}; an order earns points once")
    at = aware(p.occurred_at) if p.occurred_at else db.now()
    result = evaluate(db, member_facts(db, member, p, at))
    purchase_id = db.next_id("pur", 6)
    db.insert(
        "purchases",
        {
            "id": purchase_id,
            "member_id": p.member_id,
            "order_ref": p.order_ref,
            "amount_vnd": p.amount_vnd,
            "channel": p.channel,
            "items": dumps([item.model_dump() for item in p.items]),
            "occurred_at": iso(at),
            "points_awarded": result.total,
        },
    )
    for award in result.awards:
        reason = f"{award.rule_name}: {award.explanation}"
        post(
            db,
            p.member_id,
            "earn",
            award.points,
            reason,
            rule_id=award.rule_id,
            campaign_id=award.campaign_id,
            purchase_id=purchase_id,
        )
    last = max(member["last_purchase_at"] or "", iso(at))
    db.execute(
        "UPDATE members SET lifetime_spend_vnd = lifetime_spend_vnd + ?, last_purchase_at = ? WHERE id = ?",
        (p.amount_vnd, last, p.member_id),
    )
    tier = apply_tier(db, p.member_id, f"purchase {purchase_id}")
    return {
        "purchase_id": purchase_id,
        "points_awarded": result.total,
        "awards": [award.as_json() for award in result.awards],
        "skipped_rules": result.skipped,
        **_balance(db, p.member_id),
        "tier_change": {"from": tier["from_tier"], "to": tier["to_tier"]} if tier["changed"] else None,
    }


@tool(EarnInput)
def member_earn_points(db: Database, p: EarnInput) -> JsonObject:
    """Give a member points by hand (counts toward their tier), with a reason kept on the ledger."""
    active_member(db, p.member_id)
    if p.campaign_id:
        require(db, "campaigns", "campaign", p.campaign_id)
    entry = post(db, p.member_id, "earn", p.points, p.reason, campaign_id=p.campaign_id)
    tier = apply_tier(db, p.member_id, f"manual earn {entry['id']}")
    return {"entry": entry, **_balance(db, p.member_id), "tier_changed": tier["changed"]}


@tool(RedeemInput)
def member_redeem_points(db: Database, p: RedeemInput) -> JsonObject:
    """Take points off a member's balance for something given in return; fails if the balance is too low."""
    active_member(db, p.member_id)
    entry = post(db, p.member_id, "redeem", -p.points, p.reason)
    return {"entry": entry, **_balance(db, p.member_id)}


@tool(AdjustInput)
def member_adjust_points(db: Database, p: AdjustInput) -> JsonObject:
    """Correct a member's balance up or down with a reason (does not count toward the tier; never below 0)."""
    require(db, "members", "member", p.member_id)
    entry = post(db, p.member_id, "adjust", p.points, p.reason)
    return {"entry": entry, **_balance(db, p.member_id)}


@tool(TransferInput)
def member_transfer_points(db: Database, p: TransferInput) -> JsonObject:
    """Move points from one active member to another (e.g. family pooling), one ledger entry on each side."""
    if p.from_member_id == p.to_member_id:
        raise StateError("from_member_id and to_member_id are the same member")
    active_member(db, p.from_member_id)
    active_member(db, p.to_member_id)
    out = post(db, p.from_member_id, "adjust", -p.points, f"transfer to {p.to_member_id}: {p.reason}")
    into = post(db, p.to_member_id, "adjust", p.points, f"transfer from {p.from_member_id}: {p.reason}")
    return {"from": _balance(db, p.from_member_id), "to": _balance(db, p.to_member_id), "entries": [out, into]}


@tool(MemberRef, read_only=True)
def member_get_balance(db: Database, p: MemberRef) -> JsonObject:
    """Read a member's points balance, lifetime points and tier."""
    require(db, "members", "member", p.member_id)
    return _balance(db, p.member_id)


@tool(LedgerInput, read_only=True)
def member_get_ledger(db: Database, p: LedgerInput) -> JsonObject:
    """List a member's point ledger (earn, redeem, adjust, refund), newest first."""
    require(db, "members", "member", p.member_id)
    clause, params = where([("member_id = ?", p.member_id), ("kind = ?", p.kind)])
    columns = "id, kind, points, balance_after, reason, rule_id, purchase_id, redemption_id, created_at"
    sql = f"SELECT {columns} FROM ledger{clause}"
    return {"member_id": p.member_id, **paged(db, sql, params, p, "created_at DESC, id DESC")}


@tool(PurchasesInput, read_only=True)
def member_list_purchases(db: Database, p: PurchasesInput) -> JsonObject:
    """List a member's recorded purchases with the points each earned, newest first."""
    require(db, "members", "member", p.member_id)
    sql = "SELECT id, order_ref, amount_vnd, channel, occurred_at, points_awarded FROM purchases WHERE member_id = ?"
    return {"member_id": p.member_id, **paged(db, sql, [p.member_id], p, "occurred_at DESC, id DESC")}
