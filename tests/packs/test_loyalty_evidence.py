"""What loyalty results prove: their VND amounts may be quoted, invented ones may not; a reply
saying it changed something needs a change that really happened."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from frontdesk.capabilities.tools import ToolEvidence, ToolResult
from frontdesk.context.ledgers import WorkingState
from frontdesk.packs.loyalty.evidence import loyalty_evidence
from frontdesk.verification import ReplyContent, verify

NOW = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
CAMPAIGN = {
    "id": "cmp_0003",
    "name": "Morning Coffee",
    "rules": [{"id": "rul_0007", "criteria": {"min_spend_vnd": 200000}, "formula": {"per_amount_vnd": 10000}}],
    "budget": {"spent": 12, "points_cost": 5000},
}


def failures(text: str, *calls: tuple[str, ToolResult]) -> list[str]:
    state = WorkingState(now=NOW)
    for name, result in calls:
        state.record(name, result)
    return [f.rule for f in verify(ReplyContent(text), [], state).failures]


def campaign_read() -> tuple[str, ToolResult]:
    return "campaign_get", ToolResult(CAMPAIGN, loyalty_evidence("campaign_get", {}, CAMPAIGN))


def test_ids_and_vnd_amounts_at_any_depth_are_evidence():
    evidence = loyalty_evidence("campaign_get", {}, CAMPAIGN)

    assert {"cmp_0003", "rul_0007"} <= evidence.references
    assert set(evidence.prices) == {"200000 VND", "10000 VND"}  # points_cost is points, not money


@pytest.mark.parametrize("text", ["Rule rul_0007 needs a spend of 200.000đ.", "Spend 200,000 VND to qualify."])
def test_an_amount_the_service_returned_may_be_quoted(text):
    assert failures(text, campaign_read()) == []


def test_an_invented_amount_is_refused():
    assert failures("Spend 250.000đ to qualify.", campaign_read()) == ["price"]


def test_saying_a_campaign_was_paused_needs_the_pause_to_have_happened():
    paused = ToolResult({"id": "cmp_0003"}, ToolEvidence(events=(("campaign_pause", "cmp_0003"),)))

    assert failures("I've updated cmp_0003: it is paused now.", campaign_read()) != []
    assert failures("I've updated cmp_0003: it is paused now.", campaign_read(), ("campaign_pause", paused)) == []


def test_an_amount_written_in_returned_text_may_be_quoted_too():
    rule = {"id": "rul_0001", "name": "Base: 1 điểm / 10.000đ"}
    read = ("rule_get", ToolResult(rule, loyalty_evidence("rule_get", {}, rule)))

    quoted = failures("rul_0001 gives 1 điểm / 10.000đ.", read)

    assert quoted == []


def test_a_reply_that_declares_a_rule_may_quote_only_that_rules_amounts():
    from frontdesk.verification.claims import ServicePresented

    rules = {
        "rules": [
            {"id": "rul_0001", "criteria": {"min_spend_vnd": 100000}},
            {"id": "rul_0002", "criteria": {"min_spend_vnd": 500000}},
        ]
    }
    state = WorkingState(now=NOW)
    state.record("campaign_list_rules", ToolResult(rules, loyalty_evidence("", {}, rules)))
    declared = [ServicePresented(service_id="rul_0001")]

    own = verify(ReplyContent("rul_0001 needs 100.000đ."), declared, state)
    other = verify(ReplyContent("rul_0001 needs 500.000đ."), declared, state)

    assert own.accepted
    assert [f.rule for f in other.failures] == ["price"]
