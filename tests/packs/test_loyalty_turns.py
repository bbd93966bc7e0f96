"""The loyalty pack through the real pipeline: its MCP server connected at start, a staff
message routed by the action router, the staged rule flow's phase deciding each turn's tools."""

from __future__ import annotations

from loyalty_client import loyalty_runtime

from frontdesk.packs.loyalty.server import build_server
from frontdesk.platform.ids import ConversationId
from frontdesk.workflows import WorkflowStore
from harness import message, traces


def script(campaign: str) -> dict:
    return {
        "name": "loyalty-staff",
        "rules": [
            {
                "match": "(?i)create a new rule",
                "responses": [
                    {"tool": "rule_draft_start", "args": {"campaign_id": campaign, "name": "Friday double points"}},
                    {"reply": "Started. Which formula type should it use?"},
                ],
            },
            {
                "match": "(?i)points per amount",
                "responses": [
                    {"tool": "rule_draft_choose_formula", "args": {"type": "points_per_amount"}},
                    {"reply": "How many points per how many VND?"},
                ],
            },
            {"match": ".", "responses": [{"reply": "Noted."}]},
        ],
    }


async def test_a_rule_flow_turn_by_turn_sees_only_its_steps_tools(db, tmp_path):
    server = build_server(tmp_path / "loyalty.db")
    from frontdesk.capabilities.mcp import McpToolSource

    probe = McpToolSource("probe", server)
    await probe.connect()
    campaigns = (await probe.call("campaign_list", {}))["items"]
    await probe.close()
    campaign = next(c["id"] for c in campaigns if c["status"] in ("draft", "active", "paused"))

    runtime = await loyalty_runtime(db, script(campaign), server)
    try:
        first = await runtime.ingestor.ingest(message("acme-chat", "Create a new rule for the coffee campaign"))
        await runtime.runner.run_until_idle()
        await runtime.ingestor.ingest(message("acme-chat", "Use points per amount"))
        await runtime.runner.run_until_idle()
        await runtime.ingestor.ingest(message("acme-chat", "2 points for every 10,000 VND"))
        await runtime.runner.run_until_idle()
    finally:
        await runtime.close()

    start, choose, fields = await traces(db)
    assert start.route["intent"] == "create"
    assert "rule_draft_start" in start.tools_offered
    assert not {"rule_create", "rule_update"} & set(start.tools_offered)
    assert (choose.route["phase"], choose.route["intent"]) == ("formula_type", "continue")
    assert "rule_draft_choose_formula" in choose.tools_offered
    assert not [t for t in choose.tools_offered if t.startswith("rule_draft_set_") and t != "rule_draft_set_criteria"]
    assert fields.route["phase"] == "formula:points_per_amount"
    setters = [t for t in fields.tools_offered if t.startswith("rule_draft_set_")]
    assert setters == ["rule_draft_set_points_per_amount"]
    draft = await WorkflowStore(db, runtime.clock).current(ConversationId(first.conversation_id), "loyalty.create_rule")
    assert draft is not None
    assert draft.phase == "formula:points_per_amount"
    assert draft.data["campaign_id"] == campaign
