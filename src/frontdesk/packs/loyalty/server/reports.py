"""Report tools: read-only aggregates over campaigns, the ledger, tiers, rewards, vouchers and segments."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Literal, Self

from pydantic import Field, model_validator

from frontdesk.packs.loyalty.server._tool import JsonObject, Registrar, require, where
from frontdesk.packs.loyalty.server.db import Database, iso
from frontdesk.packs.loyalty.server.models import CampaignId, Input, TierCode

tool = Registrar()
TOOLS = tool.tools


class Period(Input):
    from_date: date | None = Field(default=None, description="First day included; none = from the start")
    to_date: date | None = Field(default=None, description="Last day included; none = up to today")

    @model_validator(mode="after")
    def _order(self) -> Self:
        if self.from_date and self.to_date and self.to_date < self.from_date:
            raise ValueError("to_date is before from_date")
        return self

    def bounds(self, column: str) -> list[tuple[str, object]]:
        end = self.to_date and (self.to_date + timedelta(days=1)).isoformat()
        return [(f"{column} >= ?", self.from_date and self.from_date.isoformat()), (f"{column} < ?", end)]


class CampaignPerformanceInput(Period):
    campaign_id: CampaignId | None = Field(default=None, description="One campaign; none = all")


class LiabilityInput(Input):
    point_value_vnd: int = Field(default=100, ge=1, le=100_000, description="What one point is worth in VND")


class NoInput(Input):
    pass


class CampaignFilter(Input):
    campaign_id: CampaignId | None = Field(default=None, description="One campaign; none = all")


class TopMembersInput(Input):
    metric: Literal["points_balance", "lifetime_points", "lifetime_spend_vnd"] = Field(
        default="lifetime_points", description="What to rank by"
    )
    tier: TierCode | None = Field(default=None, description="Only this tier")
    limit: int = Field(default=10, ge=1, le=100, description="How many members")


class FlowInput(Period):
    granularity: Literal["day", "month"] = Field(default="month", description="Group by day or by month")


class ActivityInput(Input):
    days: int = Field(default=30, ge=1, le=3650, description="Look-back window in days")


def _pct(part: float, whole: float) -> float:
    return round(100 * part / whole, 1) if whole else 0.0


@tool(CampaignPerformanceInput, read_only=True)
def report_campaign_performance(db: Database, p: CampaignPerformanceInput) -> JsonObject:
    """Per campaign: points awarded, awards, members reached, budget use and vouchers issued/redeemed."""
    if p.campaign_id:
        require(db, "campaigns", "campaign", p.campaign_id)
    ledger_clause, ledger_params = where(p.bounds("created_at"), "kind = 'earn'", "campaign_id = ?")
    rows = []
    for campaign in db.rows(*_campaigns(p.campaign_id)):
        stats = db.row(
            "SELECT COUNT(*) AS awards, COALESCE(SUM(points), 0) AS points_awarded, "
            f"COUNT(DISTINCT member_id) AS members_reached FROM ledger{ledger_clause}",
            [campaign["id"], *ledger_params],
        )
        assert stats is not None
        vouchers = db.row(
            "SELECT COUNT(*) AS issued, COALESCE(SUM(status = 'redeemed'), 0) AS redeemed FROM vouchers "
            "WHERE campaign_id = ?",
            (campaign["id"],),
        )
        budget = campaign["budget_points"]
        rows.append(
            {
                **campaign,
                **stats,
                "budget_used_pct": _pct(stats["points_awarded"], budget) if budget else None,
                "vouchers": vouchers,
            }
        )
    return {"from_date": p.from_date, "to_date": p.to_date, "campaigns": rows}


def _campaigns(campaign_id: str | None) -> tuple[str, list[object]]:
    clause, params = where([("id = ?", campaign_id)])
    return f"SELECT id, name, status, budget_points FROM campaigns{clause} ORDER BY id", params


@tool(LiabilityInput, read_only=True)
def report_points_liability(db: Database, p: LiabilityInput) -> JsonObject:
    """Outstanding points (members' balances) and their VND value, in total and per tier."""
    by_tier = db.rows(
        "SELECT tier, COUNT(*) AS members, SUM(points_balance) AS points FROM members GROUP BY tier ORDER BY "
        "(SELECT rank FROM tiers WHERE code = tier)"
    )
    for row in by_tier:
        row["value_vnd"] = row["points"] * p.point_value_vnd
    total = sum(row["points"] for row in by_tier)
    return {
        "outstanding_points": total,
        "value_vnd": total * p.point_value_vnd,
        "point_value_vnd": p.point_value_vnd,
        "by_tier": by_tier,
        "as_of": db.now_iso(),
    }


@tool(NoInput, read_only=True)
def report_tier_distribution(db: Database, p: NoInput) -> JsonObject:
    """How members spread over the tiers: counts, shares, average balance and spend."""
    rows = db.rows(
        "SELECT t.code AS tier, COUNT(m.id) AS members, "
        "CAST(COALESCE(AVG(m.points_balance), 0) AS INTEGER) AS avg_balance, "
        "CAST(COALESCE(AVG(m.lifetime_spend_vnd), 0) AS INTEGER) AS avg_spend_vnd FROM tiers t "
        "LEFT JOIN members m ON m.tier = t.code AND m.status = 'active' GROUP BY t.code ORDER BY t.rank"
    )
    total = sum(row["members"] for row in rows)
    return {"active_members": total, "tiers": [{**row, "share_pct": _pct(row["members"], total)} for row in rows]}


@tool(Period, read_only=True)
def report_redemption_summary(db: Database, p: Period) -> JsonObject:
    """Redemptions per reward in a period: count and points, plus cancellations."""
    clause, params = where(p.bounds("d.created_at"))
    rows = db.rows(
        "SELECT r.id AS reward_id, r.name, COALESCE(SUM(d.status = 'completed'), 0) AS redemptions, "
        "COALESCE(SUM(CASE WHEN d.status = 'completed' THEN d.points END), 0) AS points, "
        "COALESCE(SUM(d.status = 'cancelled'), 0) AS cancelled "
        f"FROM redemptions d JOIN rewards r ON r.id = d.reward_id{clause} GROUP BY r.id ORDER BY points DESC",
        params,
    )
    return {
        "from_date": p.from_date,
        "to_date": p.to_date,
        "redemptions": sum(row["redemptions"] for row in rows),
        "points": sum(row["points"] for row in rows),
        "by_reward": rows,
    }


@tool(CampaignFilter, read_only=True)
def report_voucher_usage(db: Database, p: CampaignFilter) -> JsonObject:
    """Vouchers by status (issued, redeemed, revoked, expired), redemption rate and total discount given."""
    clause, params = where([("campaign_id = ?", p.campaign_id)])
    rows = db.rows(
        "SELECT CASE WHEN status = 'issued' AND expires_at < ? THEN 'expired' ELSE status END AS state, "
        f"COUNT(*) AS n, COALESCE(SUM(discount_applied_vnd), 0) AS discount FROM vouchers{clause} GROUP BY state",
        [db.now_iso(), *params],
    )
    counts = {state: 0 for state in ("issued", "redeemed", "revoked", "expired")}
    counts.update({row["state"]: row["n"] for row in rows})
    total = sum(counts.values())
    return {
        "campaign_id": p.campaign_id,
        "total": total,
        "by_status": counts,
        "redemption_rate_pct": _pct(counts["redeemed"], total),
        "discount_given_vnd": sum(row["discount"] for row in rows),
    }


@tool(TopMembersInput, read_only=True)
def report_top_members(db: Database, p: TopMembersInput) -> JsonObject:
    """The top members by balance, lifetime points or lifetime spend."""
    clause, params = where([("tier = ?", p.tier)])
    rows = db.rows(
        f"SELECT id, name, tier, {p.metric} AS value FROM members{clause} ORDER BY {p.metric} DESC, id LIMIT ?",
        [*params, p.limit],
    )
    return {"metric": p.metric, "members": rows}


@tool(FlowInput, read_only=True)
def report_points_flow(db: Database, p: FlowInput) -> JsonObject:
    """Points earned, redeemed, adjusted and refunded per day or month, with the net change."""
    width = 10 if p.granularity == "day" else 7
    clause, params = where(p.bounds("created_at"))
    rows = db.rows(
        f"SELECT substr(created_at, 1, {width}) AS period, "
        "SUM(CASE WHEN kind = 'earn' THEN points ELSE 0 END) AS earned, "
        "-SUM(CASE WHEN kind = 'redeem' THEN points ELSE 0 END) AS redeemed, "
        "SUM(CASE WHEN kind = 'adjust' THEN points ELSE 0 END) AS adjusted, "
        "SUM(CASE WHEN kind = 'refund' THEN points ELSE 0 END) AS refunded, SUM(points) AS net "
        f"FROM ledger{clause} GROUP BY period ORDER BY period",
        params,
    )
    return {"granularity": p.granularity, "periods": rows, "net": sum(row["net"] for row in rows)}


@tool(NoInput, read_only=True)
def report_segment_overview(db: Database, p: NoInput) -> JsonObject:
    """Every segment with its size, average balance and tier mix."""
    segments = db.rows("SELECT id, name, kind FROM segments ORDER BY id")
    for segment in segments:
        stats = db.rows(
            "SELECT m.tier, COUNT(*) AS n, SUM(m.points_balance) AS points FROM members m "
            "JOIN segment_members s ON s.member_id = m.id WHERE s.segment_id = ? GROUP BY m.tier",
            (segment["id"],),
        )
        size = sum(row["n"] for row in stats)
        segment["members"] = size
        segment["avg_balance"] = round(sum(row["points"] for row in stats) / size) if size else 0
        segment["tiers"] = {row["tier"]: row["n"] for row in stats}
    return {"segments": segments}


@tool(CampaignFilter, read_only=True)
def report_rule_effectiveness(db: Database, p: CampaignFilter) -> JsonObject:
    """Per rule: awards given, points awarded, members reached and average points per award."""
    clause, params = where([("r.campaign_id = ?", p.campaign_id)])
    rows = db.rows(
        "SELECT r.id AS rule_id, r.campaign_id, r.name, r.formula_type, r.status, COUNT(l.id) AS awards, "
        "COALESCE(SUM(l.points), 0) AS points, COUNT(DISTINCT l.member_id) AS members "
        f"FROM rules r LEFT JOIN ledger l ON l.rule_id = r.id AND l.kind = 'earn'{clause} "
        "GROUP BY r.id ORDER BY points DESC, r.id",
        params,
    )
    for row in rows:
        row["avg_points_per_award"] = round(row["points"] / row["awards"], 1) if row["awards"] else 0
    return {"campaign_id": p.campaign_id, "rules": rows}


@tool(ActivityInput, read_only=True)
def report_member_activity(db: Database, p: ActivityInput) -> JsonObject:
    """Activity in the last N days: buying members, purchases, revenue, average basket, new members, points earned."""
    since = iso(db.now() - timedelta(days=p.days))
    purchases = db.row(
        "SELECT COUNT(*) AS purchases, COUNT(DISTINCT member_id) AS buying_members, "
        "COALESCE(SUM(amount_vnd), 0) AS revenue_vnd FROM purchases WHERE occurred_at >= ?",
        (since,),
    )
    assert purchases is not None
    return {
        "days": p.days,
        "since": since,
        **purchases,
        "avg_basket_vnd": round(purchases["revenue_vnd"] / purchases["purchases"]) if purchases["purchases"] else 0,
        "new_members": db.scalar("SELECT COUNT(*) FROM members WHERE joined_at >= ?", (since,)),
        "points_earned": db.scalar(
            "SELECT COALESCE(SUM(points), 0) FROM ledger WHERE kind = 'earn' AND created_at >= ?", (since,)
        ),
    }
