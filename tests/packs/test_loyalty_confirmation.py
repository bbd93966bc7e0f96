"""A confirmation-gated single call (member_adjust_points) through the real pipeline: proposed on
the turn that asks, run on the "yes", exactly once and exactly as proposed."""

from __future__ import annotations

from typing import Any

from loyalty_client import loyalty_runtime

from frontdesk.capabilities.confirmation import CANCEL_TOOL, CONFIRM_TOOL, PENDING_WORKFLOW
from frontdesk.capabilities.mcp import McpToolSource
from frontdesk.platform.ids import ConversationId
from frontdesk.workflows import WorkflowStore
from harness import message, traces

MEMBER = "mem_0012"


def script(points: int) -> dict[str, Any]:
    return {
        "name": "loyalty-staff",
        "rules": [
            {
                "match": "(?i)adjust",
                "responses": [
                    {
                        "tool": "member_adjust_points",
                        "args": {"member_id": MEMBER, "points": points, "reason": "goodwill for a late delivery"},
                    },
                    {"reply": f"I will add {points} points to {MEMBER}. Shall I go ahead?"},
                ],
            },
            {
                "match": "(?i)^(yes|yes please)$",
                "responses": [{"tool": CONFIRM_TOOL, "args": {}}, {"reply": "Done."}],
            },
            {"match": "(?i)^no", "responses": [{"tool": CANCEL_TOOL, "args": {}}, {"reply": "Cancelled."}]},
            {"match": ".", "responses": [{"reply": "Noted."}]},
        ],
    }


async def balance(server: Any) -> int:
    probe = McpToolSource("probe", server)
    await probe.connect()
    try:
        result = await probe.call("member_get_balance", {"member_id": MEMBER})
    finally:
        await probe.close()
    return int(result["balance"])


async def converse(db: Any, server: Any, *texts: str) -> tuple[Any, str]:
    runtime = await loyalty_runtime(db, script(500), server)
    conversation = ""
    try:
        for number, text in enumerate(texts):
            ingested = await runtime.ingestor.ingest(message("acme-chat", text, msg_id=f"m{number}"))
            conversation = ingested.conversation_id
            await runtime.runner.run_until_idle()
    finally:
        await runtime.close()
    return runtime, conversation


async def test_the_adjustment_runs_only_after_the_yes_and_only_once(db, loyalty_server):
    before = await balance(loyalty_server)

    await converse(db, loyalty_server, "adjust mem_0012's points by +500 please", "yes", "yes")

    ask, confirm, again = await traces(db)
    # The asking turn offers the tool, but calling it only records the request.
    assert "member_adjust_points" in ask.tools_offered
    assert CONFIRM_TOOL not in ask.tools_offered
    assert [(c["name"], c["ok"]) for c in ask.tool_calls[:1]] == [("member_adjust_points", True)]
    # The yes is a confirmation of that proposal, and the only write it unlocks is running it.
    assert confirm.route["phase"] == "confirm"
    assert "confirmed" in confirm.route["signals"]
    assert CONFIRM_TOOL in confirm.tools_offered
    assert "member_adjust_points" not in confirm.tools_offered
    assert [(c["name"], c["ok"]) for c in confirm.tool_calls[:1]] == [(CONFIRM_TOOL, True)]
    # A second yes has nothing to confirm.
    assert CONFIRM_TOOL not in again.tools_offered
    assert await balance(loyalty_server) == before + 500


async def test_a_no_cancels_and_nothing_changes(db, loyalty_server):
    before = await balance(loyalty_server)

    runtime, conversation = await converse(db, loyalty_server, "adjust mem_0012's points by +500 please", "no")

    _, decline = await traces(db)
    assert decline.route["intent"] == "cancel"
    assert CANCEL_TOOL in decline.tools_offered
    assert CONFIRM_TOOL not in decline.tools_offered
    assert await WorkflowStore(db, runtime.clock).current(ConversationId(conversation), PENDING_WORKFLOW) is None
    assert await balance(loyalty_server) == before


async def test_another_request_is_not_blocked_by_a_pending_proposal(db, loyalty_server):
    before = await balance(loyalty_server)

    await converse(db, loyalty_server, "adjust mem_0012's points by +500 please", "list the campaigns")

    _, other = await traces(db)
    assert other.route["phase"] == "idle"
    assert "campaign_list" in other.tools_offered
    assert CONFIRM_TOOL not in other.tools_offered
    assert await balance(loyalty_server) == before
