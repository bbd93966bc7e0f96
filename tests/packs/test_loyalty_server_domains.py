"""Every loyalty tool answers a realistic call, and the domain behaviours the tour does not reach:
segments, manual tiers, cancelled redemptions, accent-free search."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loyalty_client import call, fail
from mcp import Client
from mcp.server.mcpserver import MCPServer

from frontdesk.packs.loyalty.server import TOOL_NAMES

Results = dict[str, dict[str, Any]]
Args = dict[str, Any] | Callable[[Results], dict[str, Any]]


def _campaign(r: Results) -> str:
    return str(r["campaign_create"]["campaign"]["id"])


def _rule(r: Results) -> str:
    return str(r["rule_create"]["rule"]["id"])


def _member(r: Results) -> str:
    return str(r["member_create"]["member"]["id"])


def _reward(r: Results) -> str:
    return str(r["reward_create"]["reward"]["id"])


def _segment(r: Results) -> str:
    return str(r["segment_create"]["segment"]["id"])


PURCHASE = {"amount_vnd": 450_000, "channel": "store", "items": [{"category": "coffee", "amount_vnd": 450_000}]}
# (tool, arguments or a function of the earlier results); in an order that makes every call valid.
STEPS: list[tuple[str, Args]] = [
    ("campaign_list", {"status": "active"}),
    ("campaign_search", {"query": "sinh nhat"}),
    ("campaign_get", {"campaign_id": "cmp_0001"}),
    ("campaign_create", {"name": "Smoke test", "start_date": "2026-11-01", "budget_points": 50_000}),
    ("campaign_update", lambda r: {"campaign_id": _campaign(r), "description": "Chạy thử"}),
    ("campaign_list_rules", {"campaign_id": "cmp_0001"}),
    ("campaign_list_rewards", {"campaign_id": "cmp_0002"}),
    ("campaign_clone", {"campaign_id": "cmp_0003", "name": "Weekend copy"}),
    ("campaign_delete", lambda r: {"campaign_id": r["campaign_clone"]["campaign"]["id"]}),
    ("rule_list", {"formula_type": "category_bonus"}),
    ("rule_search", {"query": "ca phe"}),
    ("rule_get", {"rule_id": "rul_0001"}),
    ("rule_create", lambda r: {"campaign_id": _campaign(r), "name": "Smoke +5", "formula": {"type": "fixed_points",
                                                                                            "points": 5}}),
    ("rule_update", lambda r: {"rule_id": _rule(r), "name": "Smoke per 20k", "formula": {
        "type": "points_per_amount", "per_amount_vnd": 20_000}, "criteria": {"channels": ["store"]}}),
    ("rule_set_priority", lambda r: {"rule_id": _rule(r), "priority": 150}),
    ("rule_clone", lambda r: {"rule_id": _rule(r)}),
    ("rule_deactivate", lambda r: {"rule_id": r["rule_clone"]["rule"]["id"]}),
    ("rule_activate", lambda r: {"rule_id": r["rule_clone"]["rule"]["id"]}),
    ("rule_delete", lambda r: {"rule_id": r["rule_clone"]["rule"]["id"]}),
    ("rule_list_formula_types", {}),
    ("rule_get_formula_schema", {"type": "tiered_spend"}),
    ("rule_validate_formula", {"type": "multiplier", "fields": {"factor": 2}}),
    ("rule_validate_criteria", {"criteria": {"tiers": ["gold"], "days_of_week": ["sat"]}}),
    ("rule_preview_points", {"type": "multiplier", "fields": {"factor": 2}, "purchase": PURCHASE}),
    ("campaign_activate", lambda r: {"campaign_id": _campaign(r)}),
    ("rule_simulate_purchase", {"member_id": "mem_0001", "purchase": PURCHASE}),
    ("member_list", {"tier": "gold", "limit": 5}),
    ("member_search", {"query": "tran"}),
    ("member_get", {"member_id": "mem_0001"}),
    ("member_get_by_phone", lambda r: {"phone": r["member_get"]["member"]["phone"]}),
    ("member_create", {"name": "Lê Văn Smoke", "phone": "0987 000 111", "city": "Đà Nẵng"}),
    ("member_update", lambda r: {"member_id": _member(r), "email": "smoke@example.vn"}),
    ("member_record_purchase", lambda r: {"member_id": _member(r), **PURCHASE}),
    ("member_earn_points", lambda r: {"member_id": _member(r), "points": 2_000, "reason": "Welcome gift"}),
    ("member_redeem_points", lambda r: {"member_id": _member(r), "points": 10, "reason": "Bottle of water"}),
    ("member_adjust_points", lambda r: {"member_id": _member(r), "points": -5, "reason": "Correction"}),
    ("member_transfer_points", lambda r: {"from_member_id": _member(r), "to_member_id": "mem_0001", "points": 5,
                                          "reason": "Family pooling"}),
    ("member_get_balance", lambda r: {"member_id": _member(r)}),
    ("member_get_ledger", lambda r: {"member_id": _member(r)}),
    ("member_list_purchases", lambda r: {"member_id": _member(r)}),
    ("member_list_vouchers", {"member_id": "mem_0001"}),
    ("member_list_segments", {"member_id": "mem_0001"}),
    ("member_list_redemptions", {"member_id": "mem_0002"}),
    ("member_deactivate", lambda r: {"member_id": _member(r), "reason": "Asked to pause"}),
    ("member_reactivate", lambda r: {"member_id": _member(r)}),
    ("campaign_pause", lambda r: {"campaign_id": _campaign(r)}),
    ("campaign_end", lambda r: {"campaign_id": _campaign(r)}),
    ("tier_list", {}),
    ("tier_get", {"tier_code": "gold"}),
    ("tier_update", {"tier_code": "silver", "benefits": ["+10% điểm", "Free shipping"]}),
    ("tier_preview_member", lambda r: {"member_id": _member(r)}),
    ("tier_evaluate_member", lambda r: {"member_id": _member(r)}),
    ("tier_evaluate_all", {"dry_run": True, "allow_downgrade": True}),
    ("tier_set_member", lambda r: {"member_id": _member(r), "tier_code": "gold", "reason": "VIP goodwill"}),
    ("tier_unlock_member", lambda r: {"member_id": _member(r)}),
    ("tier_list_members", {"tier_code": "platinum"}),
    ("tier_get_history", lambda r: {"member_id": _member(r)}),
    ("reward_list", {"max_points": 1_000}),
    ("reward_search", {"query": "phim"}),
    ("reward_get", {"reward_id": "rwd_0001"}),
    ("reward_create", {"name": "Bình giữ nhiệt", "kind": "physical", "points_cost": 700, "value_vnd": 120_000,
                       "stock": 2}),
    ("reward_update", lambda r: {"reward_id": _reward(r), "points_cost": 650}),
    ("reward_restock", lambda r: {"reward_id": _reward(r), "quantity": 3}),
    ("reward_deactivate", lambda r: {"reward_id": _reward(r)}),
    ("reward_activate", lambda r: {"reward_id": _reward(r)}),
    ("reward_redeem", lambda r: {"reward_id": _reward(r), "member_id": _member(r)}),
    ("reward_list_redemptions", lambda r: {"reward_id": _reward(r)}),
    ("reward_cancel_redemption", lambda r: {"redemption_id": r["reward_redeem"]["redemption_id"],
                                            "reason": "Out of colour"}),
    ("reward_delete", {"reward_id": "rwd_0008"}),
    ("voucher_list", {"status": "issued", "limit": 3}),
    ("voucher_get", {"voucher_id": "vch_0001"}),
    ("voucher_get_by_code", lambda r: {"code": r["voucher_get"]["voucher"]["code"].lower()}),
    ("voucher_issue", lambda r: {"member_id": _member(r), "discount_type": "percent", "discount_value": 15,
                                 "max_discount_vnd": 60_000, "code": "SMOKE-15"}),
    ("voucher_validate", lambda r: {"code": "SMOKE-15", "amount_vnd": 500_000, "member_id": _member(r)}),
    ("voucher_redeem", lambda r: {"code": "SMOKE-15", "amount_vnd": 500_000, "member_id": _member(r),
                                  "order_ref": "POS-SMOKE"}),
    ("voucher_issue_to_segment", {"segment_id": "seg_0005", "discount_type": "amount", "discount_value": 30_000}),
    ("voucher_revoke", {"voucher_id": "vch_0002", "reason": "Customer complaint resolved otherwise"}),
    ("voucher_extend", {"voucher_id": "vch_0019", "days": 10}),
    ("voucher_expire_overdue", {}),
    ("segment_list", {}),
    ("segment_get", {"segment_id": "seg_0001"}),
    ("segment_create", {"name": "Smoke testers", "kind": "static"}),
    ("segment_update", lambda r: {"segment_id": _segment(r), "description": "QA team"}),
    ("segment_add_members", lambda r: {"segment_id": _segment(r), "member_ids": [_member(r), "mem_0001"]}),
    ("segment_remove_members", lambda r: {"segment_id": _segment(r), "member_ids": ["mem_0001"]}),
    ("segment_list_members", lambda r: {"segment_id": _segment(r)}),
    ("segment_check_member", lambda r: {"segment_id": _segment(r), "member_id": _member(r)}),
    ("segment_preview", {"criteria": {"tiers": ["platinum"], "cities": ["ha noi"]}}),
    ("segment_refresh", {"segment_id": "seg_0004"}),
    ("segment_delete", lambda r: {"segment_id": _segment(r)}),
    ("report_campaign_performance", {"from_date": "2026-01-01"}),
    ("report_points_liability", {"point_value_vnd": 50}),
    ("report_tier_distribution", {}),
    ("report_redemption_summary", {}),
    ("report_voucher_usage", {"campaign_id": "cmp_0001"}),
    ("report_top_members", {"metric": "lifetime_spend_vnd", "limit": 3}),
    ("report_points_flow", {"granularity": "month", "from_date": "2026-06-01", "to_date": "2026-11-30"}),
    ("report_segment_overview", {}),
    ("report_rule_effectiveness", {"campaign_id": "cmp_0001"}),
    ("report_member_activity", {"days": 90}),
]  # fmt: skip


async def test_every_tool_answers_a_realistic_call(loyalty_server: MCPServer) -> None:
    results: Results = {}
    async with Client(loyalty_server) as client:
        for tool, args in STEPS:
            results[tool] = await call(client, tool, **(args(results) if callable(args) else args))
    assert sorted(results) == sorted(TOOL_NAMES)
    assert results["voucher_redeem"]["discount_vnd"] == 60_000
    assert results["reward_cancel_redemption"]["refunded_points"] == 650
    assert results["tier_set_member"]["tier_locked"] is True
    assert results["voucher_extend"]["voucher"]["status"] == "issued"
    assert results["voucher_expire_overdue"]["expired"] == 1  # vch_0020; vch_0019 was just extended
    assert results["report_top_members"]["members"][0]["value"] >= results["report_top_members"]["members"][1]["value"]


async def test_cancelling_a_voucher_reward_refunds_points_and_revokes_its_unused_voucher(
    loyalty_server: MCPServer,
) -> None:
    async with Client(loyalty_server) as client:
        before = await call(client, "member_get_balance", member_id="mem_0001")
        redeemed = await call(client, "reward_redeem", member_id="mem_0001", reward_id="rwd_0005")
        cancelled = await call(
            client, "reward_cancel_redemption", redemption_id=redeemed["redemption_id"], reason="typo"
        )
        voucher = await call(client, "voucher_get_by_code", code=redeemed["voucher"]["code"])
        again = await fail(client, "reward_cancel_redemption", redemption_id=redeemed["redemption_id"], reason="twice")
    assert redeemed["balance"] == before["balance"] - 250
    assert cancelled["balance"] == before["balance"]
    assert (voucher["voucher"]["status"], voucher["voucher"]["revoke_reason"]) == (
        "revoked",
        "redemption cancelled: typo",
    )
    assert "already cancelled" in again


async def test_a_manual_tier_stays_locked_against_evaluation_until_unlocked(loyalty_server: MCPServer) -> None:
    async with Client(loyalty_server) as client:
        member = (await call(client, "member_create", name="Phạm Gia Bảo", phone="0977123456"))["member"]["id"]
        await call(client, "tier_set_member", member_id=member, tier_code="platinum", reason="Celebrity guest")
        locked = await call(client, "tier_evaluate_member", member_id=member, allow_downgrade=True)
        await call(client, "tier_unlock_member", member_id=member)
        evaluated = await call(client, "tier_evaluate_member", member_id=member, allow_downgrade=True)
        history = await call(client, "tier_get_history", member_id=member)
    assert (locked["changed"], locked["current_tier"], locked["tier_locked"]) == (False, "platinum", True)
    assert (evaluated["changed"], evaluated["to_tier"]) == (True, "bronze")
    assert [(h["from_tier"], h["to_tier"]) for h in history["history"]] == [
        ("platinum", "bronze"),
        ("bronze", "platinum"),
        (None, "bronze"),
    ]


async def test_segments_static_membership_and_a_segment_in_use_cannot_be_deleted(loyalty_server: MCPServer) -> None:
    async with Client(loyalty_server) as client:
        segment = (await call(client, "segment_create", name="Beta testers", kind="static"))["segment"]["id"]
        added = await call(client, "segment_add_members", segment_id=segment, member_ids=["mem_0003", "mem_0003"])
        formula = {"type": "fixed_points", "points": 10}
        await call(
            client,
            "rule_create",
            campaign_id="cmp_0002",
            name="Beta",
            criteria={"segment_ids": [segment]},
            formula=formula,
        )
        in_use = await fail(client, "segment_delete", segment_id=segment)
        criteria = await fail(client, "segment_create", name="No criteria", kind="dynamic")
        check = await call(client, "segment_check_member", segment_id=segment, member_id="mem_0003")
    assert (added["added"], added["members"]) == (["mem_0003"], 1)
    assert "is used by rules" in in_use
    assert "dynamic segments need criteria" in criteria
    assert check["is_member"] is True


async def test_search_ignores_vietnamese_accents_and_case(loyalty_server: MCPServer) -> None:
    async with Client(loyalty_server) as client:
        plain = await call(client, "campaign_search", query="LOC XUAN")
        accented = await call(client, "campaign_search", query="Lộc Xuân")
        reward = await call(client, "reward_search", query="ly giu nhiet")
    assert [item["id"] for item in plain["items"]] == [item["id"] for item in accented["items"]] == ["cmp_0002"]
    assert [item["id"] for item in reward["items"]] == ["rwd_0004"]
