"""The staged rule flow: each step's tool only in its phase, a formula type's fields offered only
once it is chosen, a durable draft that survives a restart, one rule per submit."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from frontdesk.capabilities.mcp import McpToolSource
from frontdesk.capabilities.policy import RoutingDecision, ToolPolicyCatalog
from frontdesk.capabilities.tools import ToolContext, ToolFailure
from frontdesk.packs.loyalty.flow import FORMULA_TYPES, RuleFlow, flow_policies
from frontdesk.packs.loyalty.server import build_server
from frontdesk.platform.clock import SystemClock
from frontdesk.workflows import WorkflowStore
from harness import make_runtime, message


@pytest.fixture
async def service(tmp_path):
    source = McpToolSource("loyalty", build_server(tmp_path / "loyalty.db"))
    await source.connect()
    yield source
    await source.close()


async def conversation(db) -> ToolContext:
    runtime, accounts = await make_runtime(db, {"name": "x", "default": [{"reply": "ok"}]})
    ingested = await runtime.ingestor.ingest(message(accounts.webchat_id, "hi"))
    return ToolContext(tenant_id="demo", conversation_id=ingested.conversation_id, turn_key="run-1")


async def open_campaign(service) -> str:
    listed = await service.call("campaign_list", {})
    return next(c["id"] for c in listed["items"] if c["status"] in ("draft", "active", "paused"))


def flow_tools(flow: RuleFlow):
    return {t.name: t for t in flow.tools()}


async def run(tools, name, arguments, context):
    tool = tools[name]
    return await tool.handler(tool.input_model.model_validate(arguments), context)


def offered(phase: str) -> list[str]:
    flow = RuleFlow(WorkflowStore.__new__(WorkflowStore), lambda *_: None)  # only the tools' shapes
    catalog = ToolPolicyCatalog(flow.tools(), flow_policies(), discovery_domains=set())
    return catalog.bundle(RoutingDecision("continue", frozenset({"rule"}), 0.8, phase)).tool_names


def test_a_formula_types_setter_is_offered_only_once_that_type_is_chosen():
    assert not [
        n for n in offered("formula_type") if n.startswith("rule_draft_set_") and n != "rule_draft_set_criteria"
    ]
    assert [n for n in offered("formula:tiered_spend") if n.startswith("rule_draft_set_")] == [
        "rule_draft_set_tiered_spend"
    ]
    assert "rule_draft_submit" not in offered("criteria")  # and at review only with a confirmation
    assert len(FORMULA_TYPES) == 8


async def test_a_rule_is_created_step_by_step_once_even_if_submitted_twice(db, service):
    context = await conversation(db)
    tools = flow_tools(RuleFlow(WorkflowStore(db, SystemClock()), service.call))
    campaign = await open_campaign(service)
    before = len((await service.call("rule_list", {"campaign_id": campaign}))["items"])

    started = await run(tools, "rule_draft_start", {"campaign_id": campaign, "name": "Double points Friday"}, context)
    assert started.output["phase"] == "formula_type"
    chosen = await run(tools, "rule_draft_choose_formula", {"type": "points_per_amount"}, context)
    assert chosen.output["phase"] == "formula:points_per_amount"
    with pytest.raises(ToolFailure, match="not fixed_points"):
        await run(tools, "rule_draft_set_fixed_points", {"points": 5}, context)
    await run(tools, "rule_draft_set_points_per_amount", {"points": 2, "per_amount_vnd": 10000}, context)
    reviewed = await run(tools, "rule_draft_set_criteria", {"channels": ["app"], "days_of_week": ["fri"]}, context)
    assert reviewed.output["phase"] == "review"

    # Two submits at once (the model's parallel calls), then one more in the same run: one rule, the
    # same answer each time, however the calls interleave with the first one's work.
    created, again = await asyncio.gather(
        run(tools, "rule_draft_submit", {}, context), run(tools, "rule_draft_submit", {}, context)
    )
    once_more = await run(tools, "rule_draft_submit", {}, context)
    with pytest.raises(ToolFailure, match="no rule is being created"):  # a later turn: the flow is over
        await run(tools, "rule_draft_submit", {}, replace(context, turn_key="run-2"))

    assert created.output["status"] == "created"
    assert created.evidence.events[0][0] == "rule_created"
    assert again.output == once_more.output == created.output
    after = (await service.call("rule_list", {"campaign_id": campaign}))["items"]
    assert len(after) == before + 1
    assert any(r["name"] == "Double points Friday" for r in after)


async def test_a_restart_in_the_middle_of_the_flow_continues_where_it_was(db, service):
    context = await conversation(db)
    campaign = await open_campaign(service)
    first = flow_tools(RuleFlow(WorkflowStore(db, SystemClock()), service.call))
    await run(first, "rule_draft_start", {"campaign_id": campaign, "name": "Birthday gift"}, context)
    await run(first, "rule_draft_choose_formula", {"type": "birthday_bonus"}, context)

    restarted = flow_tools(RuleFlow(WorkflowStore(db, SystemClock()), service.call))  # a new process
    await run(restarted, "rule_draft_set_birthday_bonus", {"points": 500}, context)
    review = await run(restarted, "rule_draft_set_criteria", {}, context)

    assert review.output["phase"] == "review"
    shown = await run(restarted, "rule_draft_review", {}, context)
    assert shown.output["rule"]["formula"]["type"] == "birthday_bonus"
    assert shown.output["rule"]["name"] == "Birthday gift"


async def test_a_missing_required_field_is_refused_not_invented(db, service):
    tools = flow_tools(RuleFlow(WorkflowStore(db, SystemClock()), service.call))

    with pytest.raises(ValueError, match="points"):
        tools["rule_draft_set_fixed_points"].input_model.model_validate({})


async def test_an_existing_rule_is_changed_through_the_same_steps_and_replaced_once(db, service):
    context = await conversation(db)
    tools = flow_tools(RuleFlow(WorkflowStore(db, SystemClock()), service.call))
    campaign = await open_campaign(service)
    rule = (await service.call("rule_list", {"campaign_id": campaign}))["items"][0]
    count = len((await service.call("rule_list", {"campaign_id": campaign}))["items"])

    opened = await run(tools, "rule_draft_edit", {"rule_id": rule["id"]}, context)
    assert opened.output["phase"] == "review"
    assert opened.output["rule"]["name"] == rule["name"]
    await run(tools, "rule_draft_details", {"priority": 321}, context)
    await run(tools, "rule_draft_choose_formula", {"type": "fixed_points"}, context)
    await run(tools, "rule_draft_set_fixed_points", {"points": 7}, context)
    await run(tools, "rule_draft_set_criteria", {}, context)
    saved = await run(tools, "rule_draft_submit", {}, context)

    assert saved.output["status"] == "updated"
    assert saved.evidence.events == (("rule_updated", rule["id"]),)
    stored = (await service.call("rule_get", {"rule_id": rule["id"]}))["rule"]
    assert (stored["name"], stored["priority"], stored["formula"]["type"]) == (rule["name"], 321, "fixed_points")
    assert len((await service.call("rule_list", {"campaign_id": campaign}))["items"]) == count  # no new rule


async def test_a_details_change_must_name_a_field(db, service):
    context = await conversation(db)
    tools = flow_tools(RuleFlow(WorkflowStore(db, SystemClock()), service.call))
    campaign = await open_campaign(service)
    rule = (await service.call("rule_list", {"campaign_id": campaign}))["items"][0]
    await run(tools, "rule_draft_edit", {"rule_id": rule["id"]}, context)

    with pytest.raises(ToolFailure, match="at least one field"):
        await run(tools, "rule_draft_details", {}, context)
