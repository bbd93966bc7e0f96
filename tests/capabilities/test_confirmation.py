"""The confirmation step on its own: a proposal records and never runs; the confirmation runs the
recorded call once; one question at a time; a late yes answers nothing. Real database."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from frontdesk.capabilities.confirmation import PENDING_WORKFLOW, PROPOSAL_TTL_S, NoArguments, PendingActions
from frontdesk.capabilities.policy import ToolPolicy
from frontdesk.capabilities.tools import Tool, ToolContext, ToolFailure, ToolResult
from frontdesk.platform.ids import ConversationId
from frontdesk.workflows import WorkflowStore
from workflows.test_drafts import ManualClock, add_conversation


class Adjust(BaseModel):
    member_id: str
    points: int
    idempotency_key: str | None = None


class Recorder:
    def __init__(self) -> None:
        self.calls: list[Adjust] = []

    async def __call__(self, arguments: Adjust, context: ToolContext) -> ToolResult:
        self.calls.append(arguments)
        return ToolResult({"balance": 1500})


POLICY = ToolPolicy(frozenset({"member"}), "update", "high", frozenset({"idle"}), requires_confirmation=True)


@pytest.fixture
async def setup(db) -> tuple[PendingActions, Recorder, Tool, ManualClock, str]:
    clock = ManualClock()
    recorder = Recorder()
    schema = {"type": "object", "properties": {"member_id": {}, "points": {}, "idempotency_key": {}}}
    tool = Tool("member_adjust_points", "Correct a balance.", Adjust, recorder, "action", json_schema=schema)
    pending = PendingActions(WorkflowStore(db, clock), {tool.name: tool}.get)
    return pending, recorder, tool, clock, await add_conversation(db)


def turn(conversation: str, key: str) -> ToolContext:
    return ToolContext(tenant_id="t1", conversation_id=conversation, turn_key=key)


async def test_a_proposal_records_the_call_and_runs_nothing(setup):
    pending, recorder, tool, _, conversation = setup
    proposal = pending.proposal(tool, POLICY)

    result = await proposal.handler(Adjust(member_id="mem_0012", points=500), turn(conversation, "t-1"))

    assert recorder.calls == []
    assert result.output["status"] == "awaiting confirmation"
    assert not result.evidence.events  # nothing happened, so nothing can be claimed
    assert proposal.definition().parameters_json_schema == tool.definition().parameters_json_schema
    assert await pending.state(conversation) == ("confirm", frozenset({"confirmation", "member"}))


async def test_the_confirmation_runs_the_recorded_call_once(setup):
    pending, recorder, tool, _, conversation = setup
    await pending.proposal(tool, POLICY).handler(Adjust(member_id="mem_0012", points=500), turn(conversation, "t-1"))

    result = await pending.confirm(NoArguments(), turn(conversation, "t-2"))

    assert [(c.member_id, c.points) for c in recorder.calls] == [("mem_0012", 500)]
    assert recorder.calls[0].idempotency_key  # the service can dedupe a retry too
    assert result.output == {"balance": 1500}
    assert await pending.state(conversation) is None
    with pytest.raises(ToolFailure, match="nothing is waiting"):
        await pending.confirm(NoArguments(), turn(conversation, "t-3"))
    assert len(recorder.calls) == 1


async def test_a_confirmation_repeated_in_the_same_run_runs_once_and_answers_the_same(setup):
    pending, recorder, tool, _, conversation = setup
    await pending.proposal(tool, POLICY).handler(Adjust(member_id="mem_0012", points=500), turn(conversation, "t-1"))

    # The model calls it twice at once, then once more after the answer: one adjustment, one answer.
    first, second = await asyncio.gather(
        pending.confirm(NoArguments(), turn(conversation, "t-2")),
        pending.confirm(NoArguments(), turn(conversation, "t-2")),
    )
    third = await pending.confirm(NoArguments(), turn(conversation, "t-2"))

    assert len(recorder.calls) == 1
    assert first.output == second.output == third.output == {"balance": 1500}
    with pytest.raises(ToolFailure, match="nothing is waiting"):
        await pending.confirm(NoArguments(), turn(conversation, "t-3"))


async def test_one_question_per_turn_and_a_new_turn_replaces_the_old_one(setup):
    pending, recorder, tool, _, conversation = setup
    proposal = pending.proposal(tool, POLICY)
    await proposal.handler(Adjust(member_id="mem_0012", points=500), turn(conversation, "t-1"))

    with pytest.raises(ToolFailure, match="already waiting"):
        await proposal.handler(Adjust(member_id="mem_0013", points=100), turn(conversation, "t-1"))
    await proposal.handler(Adjust(member_id="mem_0013", points=100), turn(conversation, "t-2"))
    await pending.confirm(NoArguments(), turn(conversation, "t-3"))

    assert [(c.member_id, c.points) for c in recorder.calls] == [("mem_0013", 100)]


async def test_a_yes_after_the_proposal_expired_runs_nothing(setup):
    pending, recorder, tool, clock, conversation = setup
    await pending.proposal(tool, POLICY).handler(Adjust(member_id="mem_0012", points=500), turn(conversation, "t-1"))

    clock.advance(PROPOSAL_TTL_S + 1)

    assert await pending.state(conversation) is None
    with pytest.raises(ToolFailure, match="expired"):
        await pending.confirm(NoArguments(), turn(conversation, "t-2"))
    assert recorder.calls == []


async def test_a_cancel_closes_the_proposal(setup, db):
    pending, recorder, tool, clock, conversation = setup
    await pending.proposal(tool, POLICY).handler(Adjust(member_id="mem_0012", points=500), turn(conversation, "t-1"))

    result = await pending.cancel(NoArguments(), turn(conversation, "t-2"))

    assert result.output["status"] == "cancelled"
    assert await WorkflowStore(db, clock).current(ConversationId(conversation), PENDING_WORKFLOW) is None
    assert recorder.calls == []
