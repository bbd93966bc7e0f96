"""The loyalty pack's contract with its MCP server: every tool the server lists has a declared
policy (the test names any that does not), and routing through the catalog keeps unknown or
unsure turns away from every write tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontdesk.capabilities.mcp import McpToolSource
from frontdesk.capabilities.policy import ToolPolicyCatalog
from frontdesk.packs.loyalty.policies import DISCOVERY_DOMAINS, POLICIES
from frontdesk.packs.loyalty.server import build_server
from frontdesk.reasoning.action_router import ActionLexicon, ActionRouter
from frontdesk.reasoning.router import RouterState

LEXICON = Path(__file__).parents[2] / "src/frontdesk/packs/loyalty/data/lexicon.json"


@pytest.fixture(scope="module")
def router() -> ActionRouter:
    return ActionRouter(ActionLexicon(**json.loads(LEXICON.read_text(encoding="utf-8"))))


async def catalog(tmp_path) -> ToolPolicyCatalog:
    source = McpToolSource("loyalty", build_server(tmp_path / "loyalty.db"))
    await source.connect()
    try:
        return ToolPolicyCatalog(source.tools(), POLICIES, discovery_domains=DISCOVERY_DOMAINS)
    finally:
        await source.close()


async def test_every_server_tool_has_a_policy_and_every_policy_a_tool(tmp_path):
    tools = await catalog(tmp_path)

    assert tools.unpoliced() == [], f"server tools without a policy: {tools.unpoliced()}"
    assert sorted(set(POLICIES) - {t.name for t in tools.tools}) == []
    assert len(tools.tools) >= 80


UNSURE = [
    "create",
    "tạo",
    "tạo cái mới đi",
    "please delete everything",
    "xóa hết",
    "can you update it?",
    "hello",
    "do the thing we talked about",
    "add 500",
]


@pytest.mark.parametrize("text", UNSURE)
async def test_an_unknown_or_unsure_turn_never_sees_a_write_tool(tmp_path, router, text):
    tools = await catalog(tmp_path)
    decision = router.route(text, RouterState())
    bundle = tools.bundle(decision)

    writes = [t for t in bundle.tool_names if POLICIES[t].writes]
    assert writes == [], f"{text!r} routed to {decision.intent} exposed {writes}"


async def test_the_whole_rule_model_is_never_offered_to_the_model(tmp_path, router):
    tools = await catalog(tmp_path)
    for text in ("create a new rule for campaign cmp_0001", "tạo quy tắc mới", "update rule rul_0003"):
        assert not {"rule_create", "rule_update"} & set(tools.bundle(router.route(text, RouterState())).tool_names)


async def test_a_multi_domain_question_sees_the_tools_of_both_domains(tmp_path, router):
    tools = await catalog(tmp_path)
    names = set(tools.bundle(router.route("Which rules does campaign cmp_0002 have?", RouterState())).tool_names)

    assert {"campaign_list_rules", "rule_get", "campaign_get"} <= names
    assert not {n for n in names if POLICIES[n].writes}
    assert not {n for n in names if "voucher" in POLICIES[n].domains and "campaign" not in POLICIES[n].domains}


async def test_an_action_gets_only_writes_of_its_kind(tmp_path, router):
    tools = await catalog(tmp_path)
    names = set(tools.bundle(router.route("Pause campaign Back to School", RouterState())).tool_names)

    assert "campaign_pause" in names
    assert not {"campaign_create", "campaign_clone", "campaign_delete"} & names


def test_every_write_outside_the_staged_flow_names_the_actions_that_ask_for_it():
    from frontdesk.packs.loyalty.flow import flow_policies

    policies = {**POLICIES, **flow_policies()}
    idle_writes = [name for name, p in policies.items() if p.writes and "idle" in p.phases]
    undeclared = [name for name in idle_writes if not policies[name].actions]

    assert len(idle_writes) > 40
    assert undeclared == [], f"writes a router action cannot narrow to: {undeclared}"
    no_family = [name for name in idle_writes if policies[name].family is None]
    assert no_family == [], f"writes without an operation family: {no_family}"


async def test_a_specific_action_is_offered_its_own_write_and_no_other(tmp_path):
    from frontdesk.capabilities.policy import RoutingDecision

    tools = await catalog(tmp_path)

    bundle = tools.bundle(RoutingDecision("pause", frozenset({"campaign"}), 0.85, "idle"))

    writes = [name for name in bundle.tool_names if (p := tools.policy(name)) is not None and p.writes]
    assert writes == ["campaign_pause"]
    assert "campaign_get" in bundle.tool_names
