"""``find_tools`` inside the generation loop: what it finds is callable from the next step, under
the catalog's rules (a write only as a proposal), and the trace says whether searching led to a
call. The model is the ``script`` provider; the tools are in-process."""

from __future__ import annotations

from pydantic import BaseModel
from pydantic_ai import ModelRequest, UserPromptPart

from frontdesk.capabilities.discovery import FIND_TOOLS, FIND_TOOLS_FROM
from frontdesk.capabilities.policy import RoutingDecision, ToolPolicy, ToolPolicyCatalog
from frontdesk.capabilities.tool_index import ToolIndex, tool_cards
from frontdesk.capabilities.tools import Tool, ToolContext
from frontdesk.reasoning.loop import Outcome, run_generation
from harness import script_client

REPLY = {"reply": {"blocks": [{"type": "text", "text": "I can pause it once you confirm."}]}}
PHRASES = {
    "campaign_get": {"en": ["show a campaign", "campaign details"]},
    "campaign_pause": {"en": ["pause the campaign", "put the promotion on hold", "freeze the promo"]},
    "campaign_delete": {"en": ["delete the campaign", "scrap the promotion"]},
}


class Empty(BaseModel):
    pass


def staff_catalog(ran: list[str]) -> ToolPolicyCatalog:
    """A campaign read, a pause and a delete (confirmation-gated), and enough other reads for
    the catalog to offer find_tools. Running a tool, or its proposal, is logged in ``ran``."""

    def tool(name: str) -> Tool:
        async def handler(_args: Empty, _ctx: ToolContext) -> dict[str, str]:
            ran.append(name)
            return {"ok": name}

        return Tool(name, name.replace("_", " "), Empty, handler)

    def proposal(real: Tool, _policy: ToolPolicy) -> Tool:
        async def propose(_args: Empty, _ctx: ToolContext) -> dict[str, str]:
            ran.append(f"proposed {real.name}")
            return {"proposed": real.name}

        return Tool(real.name, real.description + " (Needs the user's confirmation.)", Empty, propose)

    idle = frozenset({"idle"})
    policies = {
        "campaign_get": ToolPolicy(frozenset({"campaign"}), "read", home="campaign"),
        "campaign_pause": ToolPolicy(frozenset({"campaign"}), "update", phases=idle, actions=frozenset({"pause"})),
        "campaign_delete": ToolPolicy(
            frozenset({"campaign"}), "delete", "high", idle, requires_confirmation=True, actions=frozenset({"delete"})
        ),
        **{f"other_{i}": ToolPolicy(frozenset({"other"}), "read") for i in range(FIND_TOOLS_FROM)},
    }
    tools = [tool(name) for name in policies]
    cards = tool_cards(tools, {n: p.domains for n, p in policies.items()}, PHRASES)
    return ToolPolicyCatalog(tools, policies, discovery_domains=(), proposals=proposal, index=ToolIndex(cards))


# "Freeze the Summer Splash promo": a verb the router does not know, so it read a question about a campaign.
MISREAD = RoutingDecision("detail", frozenset({"campaign"}), 0.85, "idle")


def ask(text: str) -> list[ModelRequest]:
    return [ModelRequest(parts=[UserPromptPart(text)])]


async def test_a_tool_found_by_find_tools_is_callable_next_step_as_a_proposal_and_the_trace_says_so():
    ran: list[str] = []
    catalog = staff_catalog(ran)
    bundle = catalog.bundle(MISREAD)
    assert "campaign_pause" not in bundle.tool_names
    assert FIND_TOOLS in bundle.tool_names
    model = script_client(
        {
            "steps": [
                {"tool": FIND_TOOLS, "args": {"need": "put a campaign on hold"}},
                {"tool": "campaign_pause", "args": {}},
                REPLY,
            ]
        }
    )

    result = await run_generation(
        model, ask("Freeze the Summer Splash promo"), bundle, ToolContext("t", "c", decision=MISREAD)
    )

    assert result.outcome == Outcome.REPLIED
    assert ran == ["proposed campaign_pause"]  # recorded for the user's yes, not run
    search = result.tool_calls[0]
    assert "campaign_pause" in search["found"]
    assert search["led_to_call"] is True


async def test_a_search_that_led_to_no_call_says_so_and_an_unfound_tool_stays_refused():
    ran: list[str] = []
    bundle = staff_catalog(ran).bundle(MISREAD)
    model = script_client(
        {
            "steps": [
                {"tool": FIND_TOOLS, "args": {"need": "campaign details"}},
                {"tool": "campaign_delete", "args": {}},
                REPLY,
            ]
        }
    )

    result = await run_generation(model, ask("Summer Splash?"), bundle, ToolContext("t", "c", decision=MISREAD))

    assert "campaign_delete" not in result.tool_calls[0]["found"]
    assert result.tool_calls[0]["led_to_call"] is False
    assert result.tool_calls[1]["error"] == "not offered this turn"
    assert ran == []
