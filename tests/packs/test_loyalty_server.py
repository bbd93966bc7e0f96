"""The loyalty MCP server over an in-process ``Client(loyalty_server)``: the tool list, a tour through every
domain with real calls, caller-fixable errors as MCP tool errors, and idempotency keys."""

from __future__ import annotations

import json
import re

from loyalty_client import call, fail
from mcp import Client
from mcp.server.mcpserver import MCPServer

from frontdesk.packs.loyalty.server import DOMAINS, TOOL_NAMES


async def test_lists_at_least_80_tools_each_described_with_an_object_schema(loyalty_server: MCPServer) -> None:
    async with Client(loyalty_server) as client:
        tools = (await client.list_tools()).tools
        assert len(tools) >= 80
        assert [tool.name for tool in tools] == list(TOOL_NAMES)
        for tool in tools:
            assert re.fullmatch(rf"({'|'.join(DOMAINS)})_[a-z_]+", tool.name), tool.name
            assert tool.description, tool.name
            assert "\n" not in tool.description, tool.name
            assert tool.description.endswith("."), tool.name
            assert tool.input_schema["type"] == "object", tool.name
            assert tool.input_schema.get("additionalProperties") is False, tool.name
            assert tool.annotations is not None, tool.name
            assert tool.annotations.read_only_hint is not None, tool.name
        by_domain = {domain: sum(tool.name.startswith(f"{domain}_") for tool in tools) for domain in DOMAINS}
        assert all(count >= 8 for count in by_domain.values()), by_domain
        schemas = {tool.name: tool.input_schema for tool in tools}
        formula = schemas["rule_create"]["properties"]["formula"]
        assert formula["discriminator"]["propertyName"] == "type"
        assert len(formula["oneOf"]) == 8
        assert schemas["member_adjust_points"]["properties"]["idempotency_key"]["description"]
        assert len(json.dumps(schemas["rule_validate_formula"])) < len(json.dumps(schemas["rule_create"])) / 5


OUR_RULES = [
    ("Flash app +100", {"type": "fixed_points", "points": 100}, {"channels": ["app"]}),
    ("Double per 10k", {"type": "points_per_amount", "points": 2, "per_amount_vnd": 10_000}, {}),
    ("VIP x1.5 big baskets", {"type": "multiplier", "factor": 1.5}, {"min_spend_vnd": 5_000_000}),
    (
        "Black Friday bands",
        {
            "type": "tiered_spend",
            "bands": [{"min_spend_vnd": 100_000, "points": 10}, {"min_spend_vnd": 1_000_000, "points": 50}],
        },
        {},
    ),
    ("First order bonus", {"type": "first_purchase_bonus", "points": 300}, {}),
    ("Birthday on the day", {"type": "birthday_bonus", "points": 250, "window": "day"}, {}),
    ("Coffee x5", {"type": "category_bonus", "categories": ["coffee"], "points": 5}, {}),
    ("Two-week streak", {"type": "streak", "period": "week", "periods": 2, "bonus_points": 70}, {}),
]


async def test_tour_campaign_rules_points_tier_voucher_reward_reports(loyalty_server: MCPServer) -> None:
    async with Client(loyalty_server) as client:
        campaign = (
            await call(
                client,
                "campaign_create",
                name="Black Friday 2026",
                description="Khuyến mãi cuối năm",
                start_date="2026-11-27",
                end_date="2026-12-31",
                budget_points=1_000_000,
                channels=["store", "app", "online"],
            )
        )["campaign"]
        cid = campaign["id"]
        assert (campaign["id"], campaign["status"], campaign["channels"]) == (
            "cmp_0007",
            "draft",
            ["store", "app", "online"],
        )
        assert "no active rule" in await fail(client, "campaign_activate", campaign_id=cid)

        rule_ids = {}
        for name, formula, criteria in OUR_RULES:
            rule = (await call(client, "rule_create", campaign_id=cid, name=name, formula=formula, criteria=criteria))[
                "rule"
            ]
            assert (rule["campaign_id"], rule["formula_type"], rule["status"]) == (cid, formula["type"], "active")
            rule_ids[name] = rule["id"]
        listed = await call(client, "campaign_list_rules", campaign_id=cid)
        assert sorted(rule["formula_type"] for rule in listed["rules"]) == sorted(f["type"] for _, f, _ in OUR_RULES)

        activated = await call(client, "campaign_activate", campaign_id=cid)
        assert (activated["previous_status"], activated["campaign"]["status"]) == ("draft", "active")

        member = await call(
            client, "member_create", name="Trần Thị Hoa", phone="+84 912 345 678", birthday="1990-11-30"
        )
        mid = member["member"]["id"]
        assert (member["member"]["phone"], member["member"]["tier"], member["member"]["points_balance"]) == (
            "0912345678",
            "bronze",
            0,
        )
        purchase = {
            "amount_vnd": 1_200_000,
            "channel": "app",
            "items": [{"category": "coffee", "amount_vnd": 200_000}, {"category": "bakery", "amount_vnd": 1_000_000}],
        }
        earned = await call(client, "member_record_purchase", member_id=mid, order_ref="APP-1001", **purchase)
        assert {award["rule_name"]: award["points"] for award in earned["awards"]} == {
            "Birthday month bonus": 500,
            "Flash app +100": 100,
            "Double per 10k": 240,
            "Black Friday bands": 50,
            "First order bonus": 300,
            "Birthday on the day": 250,
            "Coffee x5": 100,
            "Welcome - đơn hàng đầu tiên": 200,
            "App orders +50": 50,
            "Big basket bands": 120,
            "Base: 1 điểm / 10.000đ": 120,
        }
        skipped = {entry["rule_id"]: entry["reasons"] for entry in earned["skipped_rules"]}
        assert "below min_spend_vnd" in skipped[rule_ids["VIP x1.5 big baskets"]][0]
        assert skipped[rule_ids["Two-week streak"]] == ["streak at 1 of 2 weeks"]
        assert (earned["points_awarded"], earned["balance"], earned["tier_change"]) == (
            2030,
            2030,
            {"from": "bronze", "to": "silver"},
        )
        assert "already recorded" in await fail(
            client, "member_record_purchase", member_id=mid, order_ref="APP-1001", **purchase
        )

        voucher = (
            await call(
                client,
                "voucher_issue",
                member_id=mid,
                discount_type="amount",
                discount_value=100_000,
                min_spend_vnd=500_000,
                campaign_id=cid,
                idempotency_key="bf-voucher-hoa-1",
            )
        )["voucher"]
        assert (voucher["status"], voucher["member_id"], voucher["code"][:3]) == ("issued", mid, "FD-")
        check = await call(client, "voucher_validate", code=voucher["code"], amount_vnd=300_000, member_id=mid)
        assert (check["valid"], check["problems"]) == (False, ["bill 300000 VND is below the minimum 500000 VND"])
        used = await call(
            client, "voucher_redeem", code=voucher["code"], amount_vnd=800_000, member_id=mid, order_ref="A-2"
        )
        assert (used["discount_vnd"], used["amount_due_vnd"], used["voucher"]["status"]) == (
            100_000,
            700_000,
            "redeemed",
        )
        again = await fail(
            client, "voucher_redeem", code=voucher["code"], amount_vnd=800_000, member_id=mid, order_ref="A-3"
        )
        assert "voucher is redeemed" in again

        reward = await call(client, "reward_redeem", member_id=mid, reward_id="rwd_0001")
        assert (reward["points"], reward["balance"], reward["voucher"]["code"][:3]) == (500, 1530, "FD-")
        assert "needs tier gold" in await fail(client, "reward_redeem", member_id=mid, reward_id="rwd_0010")

        performance = await call(client, "report_campaign_performance", campaign_id=cid)
        row = performance["campaigns"][0]
        assert (row["points_awarded"], row["awards"], row["members_reached"], row["budget_used_pct"]) == (
            1040,
            6,
            1,
            0.1,
        )
        assert row["vouchers"] == {"issued": 1, "redeemed": 1}
        tiers = await call(client, "report_tier_distribution")
        assert [tier["tier"] for tier in tiers["tiers"]] == ["bronze", "silver", "gold", "platinum"]
        assert sum(tier["members"] for tier in tiers["tiers"]) == tiers["active_members"]
        redemptions = await call(client, "report_redemption_summary", from_date="2026-11-30")
        assert redemptions["by_reward"] == [
            {"reward_id": "rwd_0001", "name": "Voucher 50.000đ", "redemptions": 1, "points": 500, "cancelled": 0}
        ]

        assert (await call(client, "campaign_pause", campaign_id=cid, reason="budget review"))["campaign"][
            "status"
        ] == "paused"
        assert "it is paused (must be active)" in await fail(client, "campaign_pause", campaign_id=cid)
        assert (await call(client, "campaign_end", campaign_id=cid))["campaign"]["status"] == "ended"
        assert "it is ended (must be draft or paused)" in await fail(client, "campaign_activate", campaign_id=cid)
        assert "has ended" in await fail(client, "rule_deactivate", rule_id=rule_ids["Coffee x5"])


PREVIEWS = [
    ({"type": "fixed_points", "points": 40}, {}, 40),
    ({"type": "points_per_amount", "points": 1, "per_amount_vnd": 20_000, "rounding": "ceil"}, {}, 18),
    ({"type": "multiplier", "factor": 2.5}, {}, 87),
    (
        {
            "type": "tiered_spend",
            "bands": [{"min_spend_vnd": 0, "points": 5}, {"min_spend_vnd": 300_000, "points": 30}],
        },
        {},
        30,
    ),
    (
        {"type": "first_purchase_bonus", "points": 200, "within_days_of_joining": 7},
        {"is_first_purchase": True, "days_since_joining": 3},
        200,
    ),
    ({"type": "birthday_bonus", "points": 150, "window": "week"}, {"birthday": "1988-12-02"}, 150),
    ({"type": "category_bonus", "categories": ["tea"], "points": 3}, {}, 30),
    ({"type": "streak", "period": "month", "periods": 3, "bonus_points": 90}, {"streak_periods": 3}, 90),
]


async def test_each_formula_type_validates_and_previews_points_on_a_sample_purchase(loyalty_server: MCPServer) -> None:
    async with Client(loyalty_server) as client:
        types = await call(client, "rule_list_formula_types")
        assert [t["type"] for t in types["formula_types"]] == [formula["type"] for formula, _, _ in PREVIEWS]
        purchase = {"amount_vnd": 350_000, "items": [{"category": "tea", "amount_vnd": 100_000}]}
        for formula, context, points in PREVIEWS:
            fields = {key: value for key, value in formula.items() if key != "type"}
            schema = await call(client, "rule_get_formula_schema", type=formula["type"])
            assert set(fields) <= set(schema["schema"]["properties"])
            valid = await call(client, "rule_validate_formula", type=formula["type"], fields=fields)
            assert (valid["ok"], valid["errors"]) == (True, [])
            preview = await call(
                client,
                "rule_preview_points",
                type=formula["type"],
                fields=fields,
                purchase=purchase,
                tier="gold",
                **context,
            )
            assert (preview["points"], preview["points_with_tier"]) == (points, int(points * 1.25)), formula
        bad = await call(
            client,
            "rule_validate_formula",
            type="tiered_spend",
            fields={"bands": [{"min_spend_vnd": 500, "points": 5}, {"min_spend_vnd": 100, "points": 9}]},
        )
        assert bad["ok"] is False
        assert "strictly increasing" in bad["errors"][0]["message"]
        missing = await call(client, "rule_validate_formula", type="streak", fields={"period": "week"})
        assert {error["field"] for error in missing["errors"]} == {"streak.periods", "streak.bonus_points"}
        criteria = await call(client, "rule_validate_criteria", criteria={"segment_ids": ["seg_0099"]})
        assert criteria == {
            "ok": False,
            "errors": [{"field": "segment_ids", "message": "segment 'seg_0099' not found"}],
        }


async def test_unknown_ids_bad_transitions_and_overdrafts_are_tool_errors_with_messages(
    loyalty_server: MCPServer,
) -> None:
    async with Client(loyalty_server) as client:
        assert await fail(client, "campaign_get", campaign_id="cmp_9999") == (
            "Error executing tool campaign_get: campaign 'cmp_9999' not found"
        )
        assert "member 'mem_9999' not found" in await fail(client, "member_get_balance", member_id="mem_9999")
        assert "voucher code 'NOPE-0000' not found" in await fail(client, "voucher_get_by_code", code="NOPE-0000")
        assert "String should match pattern" in await fail(client, "rule_get", rule_id="rule-1")
        assert "Extra inputs are not permitted" in await fail(client, "campaign_get", campaign_id="cmp_0001", x=1)
        assert "only drafts can be deleted" in await fail(client, "campaign_delete", campaign_id="cmp_0001")
        assert "cannot activate campaign cmp_0001: it is active" in await fail(
            client, "campaign_activate", campaign_id="cmp_0001"
        )
        assert "ended on 2026-09-15" in await fail(client, "campaign_activate", campaign_id="cmp_0005")
        assert "has ended" in await fail(
            client,
            "rule_create",
            campaign_id="cmp_0005",
            name="Late rule",
            formula={"type": "fixed_points", "points": 5},
        )
        assert "segment 'seg_0042' not found" in await fail(
            client,
            "rule_create",
            campaign_id="cmp_0002",
            name="Ghost segment",
            formula={"type": "fixed_points", "points": 5},
            criteria={"segment_ids": ["seg_0042"]},
        )
        assert "formula.fixed_points.points" in await fail(
            client, "rule_create", campaign_id="cmp_0002", name="Zero", formula={"type": "fixed_points", "points": 0}
        )
        assert "ledger entries; deactivate it" in await fail(client, "rule_delete", rule_id="rul_0001")

        balance = (await call(client, "member_get_balance", member_id="mem_0002"))["balance"]
        overdraft = await fail(client, "member_redeem_points", member_id="mem_0002", points=balance + 1, reason="gift")
        assert f"has {balance} points, {balance + 1} needed" in overdraft
        assert "never go negative" in await fail(
            client, "member_adjust_points", member_id="mem_0002", points=-(balance + 1), reason="fix typo"
        )
        assert (await call(client, "member_get_balance", member_id="mem_0002"))["balance"] == balance
        assert "only unused vouchers" in await fail(client, "voucher_extend", voucher_id="vch_0013", days=5)
        assert "is dynamic" in await fail(client, "segment_add_members", segment_id="seg_0001", member_ids=["mem_0003"])
        assert "is not locked" in await fail(client, "tier_unlock_member", member_id="mem_0003")


async def test_a_repeated_idempotency_key_returns_the_first_result_and_changes_nothing(
    loyalty_server: MCPServer,
) -> None:
    async with Client(loyalty_server) as client:
        first = await call(client, "campaign_create", name="Mid-autumn", idempotency_key="create-mid-autumn-1")
        again = await call(client, "campaign_create", name="Mid-autumn", idempotency_key="create-mid-autumn-1")
        assert again == first
        assert (await call(client, "campaign_list", status="draft"))["total"] == 2  # the seeded Tết draft + this one

        before = (await call(client, "member_get_balance", member_id="mem_0004"))["balance"]
        args = {
            "member_id": "mem_0004",
            "points": 75,
            "reason": "Goodwill: cold coffee",
            "idempotency_key": "adj-0004-cold",
        }
        adjusted = await call(client, "member_adjust_points", **args)
        assert await call(client, "member_adjust_points", **args) == adjusted
        assert (await call(client, "member_get_balance", member_id="mem_0004"))["balance"] == before + 75
        ledger = await call(client, "member_get_ledger", member_id="mem_0004", kind="adjust", limit=100)
        assert [entry["reason"] for entry in ledger["items"]].count("Goodwill: cold coffee") == 1

        reused = await fail(client, "member_adjust_points", **{**args, "points": 80})
        assert "idempotency_key 'adj-0004-cold' was already used for a different member_adjust_points call" in reused
        assert "already used" in await fail(client, "campaign_create", name="Other", idempotency_key="adj-0004-cold")

        owned = (await call(client, "member_list_vouchers", member_id="mem_0004"))["vouchers"]
        voucher = {
            "member_id": "mem_0004",
            "discount_type": "percent",
            "discount_value": 10,
            "idempotency_key": "v-0004-a",
        }
        issued = await call(client, "voucher_issue", **voucher)
        assert await call(client, "voucher_issue", **voucher) == issued
        assert len((await call(client, "member_list_vouchers", member_id="mem_0004"))["vouchers"]) == len(owned) + 1

        rule = {
            "campaign_id": "cmp_0002",
            "name": "Tết tea",
            "formula": {"type": "fixed_points", "points": 8},
            "idempotency_key": "rule-tet-tea",
        }
        created = await call(client, "rule_create", **rule)
        assert await call(client, "rule_create", **rule) == created
        rules = await call(client, "rule_list", campaign_id="cmp_0002")
        assert [item["name"] for item in rules["items"]].count("Tết tea") == 1


async def test_failed_call_with_a_key_changes_nothing_and_can_be_retried(loyalty_server: MCPServer) -> None:
    async with Client(loyalty_server) as client:
        args = {"member_id": "mem_0008", "points": 10, "reason": "Trial redeem", "idempotency_key": "redeem-0008-1"}
        assert "0 points, 10 needed" in await fail(client, "member_redeem_points", **args)
        await call(client, "member_earn_points", member_id="mem_0008", points=50, reason="Welcome gift")
        assert (await call(client, "member_redeem_points", **args))["balance"] == 40
