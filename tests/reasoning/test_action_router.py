"""The loyalty pack's router: every domain a message needs, read-only when unsure, side questions
that keep a flow, and confirmation only where a flow waits for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontdesk.capabilities.policy import RoutingDecision, ToolPolicy, ToolPolicyCatalog
from frontdesk.capabilities.tools import Tool
from frontdesk.reasoning.action_router import ActionLexicon, ActionRouter
from frontdesk.reasoning.router import RouterState

LEXICON = Path(__file__).parents[2] / "src/frontdesk/packs/loyalty/data/lexicon.json"


@pytest.fixture(scope="module")
def router() -> ActionRouter:
    return ActionRouter(ActionLexicon(**json.loads(LEXICON.read_text(encoding="utf-8"))))


IDLE = RouterState()


def in_flow(phase: str) -> RouterState:
    return RouterState(workflow_phase=phase, workflow_domains=frozenset({"rule"}))


@pytest.mark.parametrize(
    ("text", "intent", "domains", "language"),
    [
        ("Which rules does campaign Tet 2026 have?", "list", {"campaign", "rule"}, "en"),
        ("Chiến dịch Tết có những quy tắc nào?", "list", {"campaign", "rule"}, "vi"),
        ("Create a new rule for the summer campaign", "create", {"campaign", "rule"}, "en"),
        ("Tạo voucher giảm giá cho hạng vàng", "create", {"voucher", "tier"}, "vi"),
        ("Pause campaign Back to School", "pause", {"campaign"}, "en"),
        ("What is member M-0042's point balance?", "detail", {"member"}, "en"),
        ("Báo cáo hiệu quả chiến dịch tháng này", "report", {"report", "campaign"}, "vi"),
    ],
)
def test_a_message_gets_its_action_and_every_domain_it_needs(router, text, intent, domains, language):
    decision = router.route(text, IDLE)

    assert (decision.intent, set(decision.domains), decision.language) == (intent, domains, language)
    assert decision.confidence >= 0.6
    assert not decision.side_query


@pytest.mark.parametrize("text", ["create", "tạo giúp tôi cái mới", "please delete it", "xóa đi", "hello there", "ok"])
def test_unknown_messages_even_with_a_write_verb_stay_below_the_write_threshold(router, text):
    decision = router.route(text, IDLE)

    assert decision.intent == "unknown"
    assert decision.confidence < 0.6
    assert decision.domains == frozenset()


def test_a_question_mid_flow_is_a_side_query_that_keeps_the_flow(router):
    decision = router.route("Wait, which vouchers are active right now?", in_flow("formula"))

    assert decision.side_query
    assert decision.phase == "formula"
    assert set(decision.domains) == {"rule", "voucher"}


def test_confirmation_counts_only_while_the_flow_waits_for_it(router):
    at_review = router.route("yes, go ahead", in_flow("review"))
    mid_flow = router.route("yes", in_flow("formula"))
    idle = router.route("yes", IDLE)

    assert (at_review.intent, "confirmed" in at_review.signals) == ("submit", True)
    assert (mid_flow.intent, "confirmed" in mid_flow.signals) == ("continue", False)
    assert (idle.intent, "confirmed" in idle.signals) == ("unknown", False)
    assert router.route("đồng ý", in_flow("review")).intent == "submit"


def test_cancel_ends_the_flow_in_either_language(router):
    assert router.route("cancel that please", in_flow("criteria")).intent == "cancel"
    assert router.route("thôi hủy đi", in_flow("criteria")).intent == "cancel"


def _tool(name: str) -> Tool:
    from pydantic import BaseModel

    async def handler(arguments, context):
        return {}

    return Tool(name, name, BaseModel, handler)


def test_a_side_query_bundle_adds_read_tools_and_only_the_flows_own_writes():
    policies = {
        "voucher_list": ToolPolicy(frozenset({"voucher"}), "read"),
        "voucher_issue": ToolPolicy(frozenset({"voucher"}), "create", risk="medium"),
        "rule_draft_set_formula": ToolPolicy(frozenset({"rule"}), "update", phases=frozenset({"formula"})),
        "rule_delete": ToolPolicy(frozenset({"rule"}), "delete", risk="high"),
    }
    catalog = ToolPolicyCatalog([_tool(n) for n in policies], policies, discovery_domains={"voucher", "rule"})
    side = RoutingDecision("list", frozenset({"rule", "voucher"}), 0.8, "formula", side_query=True)

    assert catalog.bundle(side).tool_names == ["voucher_list", "rule_draft_set_formula"]
