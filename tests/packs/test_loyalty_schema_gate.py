"""The schema gate for the loyalty pack (100 MCP tools, the staged flow, the confirmation step):
no decision the action router can make offers tool schemas over the chat slot's budget, and
keeping under it never costs a turn the write or flow step it asked for."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations

from frontdesk.capabilities.confirmation import CONFIRMATION_DOMAIN
from frontdesk.capabilities.mcp import McpToolSource
from frontdesk.capabilities.policy import (
    ACTION_OPERATIONS,
    ASKING_INTENTS,
    CONFIRMED_SIGNAL,
    IDLE_PHASE,
    PENDING_CONFIRMATION_PHASE,
    RoutingDecision,
    ToolPolicyCatalog,
)
from frontdesk.context.budget import BudgetConfig
from frontdesk.packs.loyalty import loyalty_pack
from frontdesk.packs.loyalty.flow import FLOW_PHASES
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.engine import Database
from frontdesk.reasoning.terminal import reply_tool_definition
from frontdesk.runtime import mcp_agent_pack, schema_fit
from frontdesk.workflows import WorkflowStore

BUDGET = BudgetConfig().for_model("script:demo")
DOMAINS = ("campaign", "rule", "reward", "member", "tier", "voucher", "segment", "report")


def router_decisions() -> Iterator[RoutingDecision]:
    """What the action router can conclude: outside a flow, any action on up to two domains (or
    unknown); in the rule flow, continuing it, a side question about up to two more domains, the
    confirmed submit and a cancel; with a proposal pending, its yes or no."""
    pairs = [frozenset(c) for size in (0, 1, 2) for c in combinations(DOMAINS, size)]
    for domains in pairs:
        yield RoutingDecision("unknown", domains, 0.2, IDLE_PHASE)
        for intent in (*ASKING_INTENTS, *ACTION_OPERATIONS):
            yield RoutingDecision(intent, domains, 0.85, IDLE_PHASE)
    flow = frozenset({"rule"})
    for phase in sorted(FLOW_PHASES):
        yield RoutingDecision("submit", flow, 0.9, phase, signals=(CONFIRMED_SIGNAL,))
        yield RoutingDecision("cancel", flow, 0.9, phase)
        for domains in pairs:
            yield RoutingDecision("continue", flow | domains, 0.8, phase)
            yield RoutingDecision("detail", flow | domains, 0.8, phase, side_query=True)
    for domains in pairs:
        pending = frozenset({CONFIRMATION_DOMAIN}) | domains
        yield RoutingDecision("submit", pending, 0.9, PENDING_CONFIRMATION_PHASE, signals=(CONFIRMED_SIGNAL,))
        yield RoutingDecision("cancel", pending, 0.9, PENDING_CONFIRMATION_PHASE)


async def loyalty_catalogs(server) -> tuple[ToolPolicyCatalog, ToolPolicyCatalog]:
    """The pack's catalog as the runtime builds it (fitted to the budget), and without the fit."""
    source = McpToolSource("loyalty", server)
    await source.connect()
    try:
        workflows = WorkflowStore(Database.from_url("sqlite+aiosqlite:///:memory:"), SystemClock())
        fitted = mcp_agent_pack(loyalty_pack(), source, workflows, schema_fit(BUDGET)).catalog
        return fitted, mcp_agent_pack(loyalty_pack(), source, workflows).catalog
    finally:
        await source.close()


def schema_tokens(catalog: ToolPolicyCatalog, decision: RoutingDecision) -> int:
    bundle = catalog.bundle(decision)
    return BUDGET.schema_tokens([*(t.definition() for t in bundle.tools), reply_tool_definition()])


async def test_no_router_decision_offers_schemas_over_the_chat_slot_budget(loyalty_server):
    catalog, _ = await loyalty_catalogs(loyalty_server)
    offenders: list[str] = []
    checked = 0
    for decision in router_decisions():
        tokens = schema_tokens(catalog, decision)
        checked += 1
        if tokens > BUDGET.tool_schema_budget:
            domains = ",".join(sorted(decision.domains))
            offenders.append(f"{decision.intent} [{domains}] in {decision.phase}: {tokens} tokens")

    assert checked > 1000
    assert offenders == [], f"over the {BUDGET.tool_schema_budget}-token schema budget: {offenders[:20]}"


async def test_fitting_the_budget_drops_reads_never_the_writes_a_turn_asked_for(loyalty_server):
    catalog, unfitted = await loyalty_catalogs(loyalty_server)
    trimmed_turns = 0
    for decision in router_decisions():
        fitted, full = catalog.bundle(decision), unfitted.bundle(decision)
        writes = {name for name in full.tool_names if (p := catalog.policy(name)) is not None and p.writes}
        assert writes <= set(fitted.tool_names), f"{decision.intent} {sorted(decision.domains)} lost a write"
        assert set(fitted.trimmed) == set(full.tool_names) - set(fitted.tool_names)
        trimmed_turns += bool(fitted.trimmed)
    assert trimmed_turns > 0  # the budget really bites on some two-domain turns


async def test_an_unsure_turn_sees_a_few_list_and_search_reads_and_no_write(loyalty_server):
    catalog, _ = await loyalty_catalogs(loyalty_server)

    bundle = catalog.bundle(RoutingDecision("unknown", frozenset(), 0.2, IDLE_PHASE))

    policies = [catalog.policy(name) for name in bundle.tool_names]
    assert all(p is not None and not p.writes for p in policies)
    assert 5 <= len(bundle.tools) <= 15
    assert {"campaign_list", "member_search"} <= set(bundle.tool_names)
    assert not bundle.trimmed
