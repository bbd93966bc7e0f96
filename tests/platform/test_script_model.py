"""The ``script`` model provider, driven the way production drives it: gateway slot → generation loop."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, SystemPromptPart, TextPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters

from frontdesk.capabilities.tools import Tool, ToolContext
from frontdesk.context.ledgers import WorkingState
from frontdesk.errors import ConfigError, ModelAPIError
from frontdesk.output.blocks import TextBlock
from frontdesk.platform.models.gateway import ModelClient, ModelGateway
from frontdesk.reasoning.loop import FALLBACK_TEXT, GenerationResult, LoopLimits, Outcome, run_generation
from harness import script_client

CONTEXT = ToolContext(tenant_id="t", conversation_id="c")


# -- helpers -------------------------------------------------------------------------------------


@pytest.fixture
def script_file(tmp_path: Path):
    """Write a script to a file and return the gateway's chat client for it."""
    counter = iter(range(1000))

    def write(data: dict[str, Any]) -> ModelClient:
        path = tmp_path / f"script-{next(counter)}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        return ModelGateway({"chat": f"script:{path}"}).client("chat")

    return write


def user(text: str) -> list[ModelMessage]:
    return [ModelRequest(parts=[UserPromptPart(text)])]


def texts(result: GenerationResult) -> list[str]:
    return [block.text for block in result.blocks if isinstance(block, TextBlock)]


class Recording:
    """A pass-through ModelClient that keeps what the loop sent, to see what the model was told."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner
        self.requests: list[list[ModelMessage]] = []

    @property
    def name(self) -> str:
        return self.inner.name

    async def request(self, messages: Sequence[ModelMessage], params: ModelRequestParameters) -> ModelResponse:
        self.requests.append(list(messages))
        return await self.inner.request(messages, params)


class OrderLookup(BaseModel):
    order_id: str


def order_tool(calls: list[OrderLookup], name: str = "lookup_order") -> Tool:
    async def handler(arguments: OrderLookup, context: ToolContext) -> dict[str, str]:
        calls.append(arguments)
        return {"order_id": arguments.order_id, "status": "shipped"}

    return Tool(name=name, description="Look up an order by id.", input_model=OrderLookup, handler=handler)


# -- steps and rules -----------------------------------------------------------------------------


async def test_steps_replay_in_order_across_turns(script_file) -> None:
    model = script_file({"steps": [{"reply": "first"}, {"reply": "second"}]})

    first = await run_generation(model, user("a"), [], CONTEXT)
    second = await run_generation(model, user("b"), [], CONTEXT)

    assert (first.outcome, texts(first)) == (Outcome.REPLIED, ["first"])
    assert (second.outcome, texts(second)) == (Outcome.REPLIED, ["second"])


async def test_each_gateway_reads_the_script_afresh_and_starts_at_step_one(tmp_path: Path) -> None:
    path = tmp_path / "steps.json"
    path.write_text(json.dumps({"steps": [{"reply": "first"}, {"reply": "second"}]}), encoding="utf-8")

    for _ in range(2):
        model = ModelGateway({"chat": f"script:{path}"}).client("chat")
        result = await run_generation(model, user("a"), [], CONTEXT)
        assert texts(result) == ["first"]


async def test_default_answers_once_steps_are_used_up(script_file) -> None:
    model = script_file({"steps": [{"reply": "scripted"}], "default": [{"reply": "default for {user_text}"}]})

    await run_generation(model, user("one"), [], CONTEXT)
    result = await run_generation(model, user("two"), [], CONTEXT)

    assert texts(result) == ["default for two"]


async def test_rule_is_picked_by_the_latest_customer_message_and_fills_user_text(script_file) -> None:
    model = script_file(
        {
            "rules": [
                {"match": "(?i)hola", "responses": [{"reply": "greeting"}]},
                {"match": "(?i)price", "responses": [{"reply": "You asked: {user_text}"}]},
            ],
            "default": [{"reply": "no rule matched"}],
        }
    )
    history = [
        ModelRequest(parts=[UserPromptPart("Hola!")]),
        ModelResponse(parts=[TextPart("earlier answer")]),
        ModelRequest(parts=[UserPromptPart("What PRICE is the haircut?")]),
    ]

    result = await run_generation(model, history, [], CONTEXT)

    assert result.outcome == Outcome.REPLIED
    assert texts(result) == ["You asked: What PRICE is the haircut?"]


async def test_rules_are_stateless_so_the_same_message_gets_the_same_answer(script_file) -> None:
    model = script_file({"rules": [{"match": "hi", "responses": [{"reply": "hello"}]}]})

    answers = [texts(await run_generation(model, user("hi"), [], CONTEXT)) for _ in range(3)]

    assert answers == [["hello"]] * 3


async def test_default_answers_when_no_rule_matches(script_file) -> None:
    model = script_file(
        {"rules": [{"match": "^hi$", "responses": [{"reply": "hello"}]}], "default": [{"reply": "Re: {user_text}"}]}
    )

    result = await run_generation(model, user("where is my order?"), [], CONTEXT)

    assert texts(result) == ["Re: where is my order?"]


async def test_full_reply_payload_keeps_several_blocks(script_file) -> None:
    payload = {"blocks": [{"type": "text", "text": "one"}, {"type": "text", "text": "two for {user_text}"}]}
    model = script_file({"steps": [{"reply": payload}]})

    result = await run_generation(model, user("you"), [], CONTEXT)

    assert texts(result) == ["one", "two for you"]


# -- tools -----------------------------------------------------------------------------------------


async def test_tool_step_runs_the_tool_then_the_reply_is_returned(script_file) -> None:
    calls: list[OrderLookup] = []
    model = script_file(
        {"steps": [{"tool": "lookup_order", "args": {"order_id": "A-17"}}, {"reply": "Order A-17 has shipped."}]}
    )

    result = await run_generation(model, user("where is A-17?"), [order_tool(calls)], CONTEXT)

    assert result.outcome == Outcome.REPLIED
    assert texts(result) == ["Order A-17 has shipped."]
    assert calls == [OrderLookup(order_id="A-17")]
    assert [(c["name"], c["ok"]) for c in result.tool_calls] == [("lookup_order", True)]
    assert "A-17" in result.tool_calls[0]["args"]
    assert result.steps == 2
    assert result.retries == 0


async def test_rule_gives_its_nth_response_to_the_nth_request_of_the_turn(script_file) -> None:
    calls: list[OrderLookup] = []
    model = script_file(
        {
            "rules": [
                {
                    "match": r"(?i)order (\S+)",
                    "responses": [
                        {"tool": "lookup_order", "args": {"order_id": "{user_text}"}},
                        {"reply": "Looked it up."},
                    ],
                }
            ]
        }
    )

    result = await run_generation(model, user("order B-2"), [order_tool(calls)], CONTEXT)

    assert result.outcome == Outcome.REPLIED
    assert texts(result) == ["Looked it up."]
    assert calls == [OrderLookup(order_id="order B-2")]


async def test_tools_response_makes_several_calls_in_one_step(script_file) -> None:
    calls: list[OrderLookup] = []
    model = script_file(
        {
            "steps": [
                {
                    "tools": [
                        {"tool": "lookup_order", "args": {"order_id": "1"}},
                        {"tool": "lookup_order", "args": {"order_id": "2"}},
                        {"tool": "reply", "args": {"blocks": [{"type": "text", "text": "both shipped"}]}},
                    ]
                }
            ]
        }
    )

    result = await run_generation(model, user("orders 1 and 2?"), [order_tool(calls)], CONTEXT)

    assert result.outcome == Outcome.REPLIED
    assert texts(result) == ["both shipped"]
    assert [c.order_id for c in calls] == ["1", "2"]
    assert result.steps == 1


async def test_tool_not_offered_this_turn_is_never_executed_and_the_model_is_told(script_file) -> None:
    calls: list[OrderLookup] = []
    model = Recording(
        script_file({"steps": [{"tool": "cancel_order", "args": {"order_id": "A-17"}}, {"reply": "Sorry."}]})
    )

    result = await run_generation(model, user("cancel A-17"), [order_tool(calls)], CONTEXT)

    assert calls == []
    assert result.outcome == Outcome.REPLIED
    assert texts(result) == ["Sorry."]
    assert result.tool_calls[0]["name"] == "cancel_order"
    assert result.tool_calls[0]["ok"] is False
    told = [
        part
        for part in model.requests[1][-1].parts
        if getattr(part, "tool_name", None) == "cancel_order" and "not available" in str(part.content)
    ]
    assert len(told) == 1


# -- recovery paths ----------------------------------------------------------------------------------


async def test_prose_twice_is_salvaged_after_exactly_one_retry(script_file) -> None:
    model = script_file({"steps": [{"text": "Happy to help."}, {"text": "Happy to help with your order."}]})

    result = await run_generation(model, user("when do you open?"), [], CONTEXT)

    assert result.outcome == Outcome.SALVAGED
    assert texts(result) == ["Happy to help with your order."]
    assert result.retries == 1
    assert result.steps == 2


async def test_prose_then_reply_is_a_normal_reply_after_the_hint(script_file) -> None:
    model = script_file({"steps": [{"text": "thinking out loud"}, {"reply": "Here you go."}]})

    result = await run_generation(model, user("hi"), [], CONTEXT)

    assert (result.outcome, texts(result), result.retries) == (Outcome.REPLIED, ["Here you go."], 1)


async def test_malformed_reply_arguments_twice_without_readable_text_fall_back(script_file) -> None:
    model = script_file({"steps": [{"tool": "reply", "raw_args": "{oops"}, {"tool": "reply", "raw_args": "{oops"}]})

    result = await run_generation(model, user("hi"), [], CONTEXT)

    assert result.outcome == Outcome.FALLBACK
    assert texts(result) == [FALLBACK_TEXT]
    assert result.retries == 1
    assert result.detail == "reply arguments invalid twice"


async def test_malformed_reply_arguments_twice_are_salvaged_from_their_text_fields(script_file) -> None:
    broken = '{"blocks": [{"type": "text", "text": "Happy to help with that."'
    model = script_file({"steps": [{"tool": "reply", "raw_args": broken}, {"tool": "reply", "raw_args": broken}]})

    result = await run_generation(model, user("hours?"), [], CONTEXT)

    assert result.outcome == Outcome.SALVAGED
    assert texts(result) == ["Happy to help with that."]
    assert result.retries == 1


async def test_malformed_reply_then_valid_reply_is_accepted(script_file) -> None:
    model = script_file({"steps": [{"tool": "reply", "raw_args": "{oops"}, {"reply": "fixed"}]})

    result = await run_generation(model, user("hi"), [], CONTEXT)

    assert (result.outcome, texts(result), result.retries) == (Outcome.REPLIED, ["fixed"], 1)


async def test_a_vendor_fault_on_the_first_request_is_left_to_the_turns_job(script_file) -> None:
    # Nothing was done or said yet: the loop raises, and the turn's job asks again later
    # (tests/reasoning/test_model_outage.py follows it to the customer).
    model = script_file({"steps": [{"error": "overloaded", "status": 529}, {"reply": "never sent"}]})

    with pytest.raises(ModelAPIError) as failure:
        await run_generation(model, user("hi"), [], CONTEXT)

    assert (failure.value.status, failure.value.transient) == (529, True)


async def test_a_refused_request_ends_the_turn_in_fallback_without_retrying(script_file) -> None:
    model = script_file({"steps": [{"error": "bad request", "status": 400}, {"reply": "never sent"}]})

    result = await run_generation(model, user("hi"), [], CONTEXT)

    assert result.outcome == Outcome.FALLBACK
    assert texts(result) == [FALLBACK_TEXT]
    assert result.steps == 1
    assert "HTTP 400" in (result.detail or "")


async def test_step_ceiling_ends_in_fallback(script_file) -> None:
    calls: list[OrderLookup] = []
    model = script_file({"default": [{"tool": "lookup_order", "args": {"order_id": "A-17"}}]})

    result = await run_generation(model, user("hi"), [order_tool(calls)], CONTEXT, LoopLimits(max_steps=3))

    assert result.outcome == Outcome.FALLBACK
    assert texts(result) == [FALLBACK_TEXT]
    assert result.steps == 3
    assert len(calls) == 3
    assert result.detail == "no reply within 3 steps"


async def test_rule_gives_its_second_response_after_a_prose_hint(script_file) -> None:
    model = script_file(
        {
            "rules": [{"match": "^opening hours$", "responses": [{"text": "prose"}, {"reply": "See you soon."}]}],
            "default": [{"reply": "default"}],
        }
    )

    result = await run_generation(model, user("opening hours"), [], CONTEXT)

    assert (result.outcome, texts(result)) == (Outcome.REPLIED, ["See you soon."])


# -- invalid scripts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        pytest.param({"stepz": [{"reply": "x"}]}, "stepz", id="unknown-top-level-key"),
        pytest.param({"steps": [{"reply": "x", "delay": 5}]}, "delay", id="unknown-response-key"),
        pytest.param({"steps": [{"reply": "x", "text": "y"}]}, "exactly one of", id="two-kinds"),
        pytest.param({"steps": [{"delay_ms": 5}]}, "exactly one of", id="no-kind"),
        pytest.param({"rules": [{"match": "(unclosed", "responses": [{"reply": "x"}]}]}, "bad regex", id="bad-regex"),
        pytest.param({"rules": [{"match": "x", "responses": []}]}, "responses", id="rule-without-responses"),
        pytest.param({"name": "empty"}, "needs steps, rules or default", id="nothing-to-say"),
    ],
)
def test_invalid_script_is_a_config_error_naming_the_problem(
    tmp_path: Path, data: dict[str, Any], problem: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")

    with pytest.raises(ConfigError) as caught:
        ModelGateway({"chat": f"script:{path}"}).client("chat")

    assert problem in caught.value.message
    assert str(path) in caught.value.message


def test_script_that_is_not_json_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"steps": [', encoding="utf-8")

    with pytest.raises(ConfigError, match="not a valid script model"):
        ModelGateway({"chat": f"script:{path}"}).client("chat")


def test_missing_script_file_is_a_config_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"

    with pytest.raises(ConfigError, match="not found") as caught:
        ModelGateway({"chat": f"script:{missing}"}).client("chat")

    assert str(missing) in caught.value.message


async def test_a_result_placeholder_never_borrows_an_earlier_turn_after_a_refused_call() -> None:
    """The tool ledger of an earlier turn shows a follow-up id; this turn's call was refused, so the
    placeholder must stay unresolved instead of confirming the earlier request."""
    model = script_client(
        {
            "steps": [
                {"tool": "capture_lead", "args": {"service": "posters"}},
                {"reply": "Saved as {result:capture_lead.follow_up_id}."},
            ]
        }
    )
    ledger = 'capture_lead: {"follow_up_id":"task_earlier","service":"Flyers"}'
    history = [ModelRequest(parts=[SystemPromptPart(f"# Tool ledger\n{ledger}"), UserPromptPart("10 posters please")])]

    result = await run_generation(model, history, [], CONTEXT)

    assert "task_earlier" not in " ".join(b.text for b in result.blocks if isinstance(b, TextBlock))
    # unresolved, and an unfilled placeholder never reaches the customer: the gate holds it
    assert result.rejections[0]["reply_text"] == "Saved as {result:capture_lead.follow_up_id}."
    assert (result.outcome, result.hold) == (Outcome.FALLBACK, True)


async def test_a_result_placeholder_reads_an_earlier_turn_from_the_tool_ledger() -> None:
    model = script_client({"steps": [{"reply": "Your request number: {result:capture_lead.follow_up_id}."}]})
    ledger = 'capture_lead: {"follow_up_id":"task_earlier","service":"Flyers"}'
    history = [ModelRequest(parts=[SystemPromptPart(f"# Tool ledger\n{ledger}"), UserPromptPart("is it saved?")])]

    result = await run_generation(model, history, [], CONTEXT)

    assert result.blocks[0].text == "Your request number: task_earlier."


async def test_a_customer_typing_a_placeholder_gets_it_back_verbatim() -> None:
    model = script_client({"steps": [{"reply": "You wrote: {user_text}"}]})

    typed = "{result:reply.x} {match:y}"
    state = WorkingState(now=datetime.now(UTC), customer_contacts=(typed,))  # as the agent sets it
    result = await run_generation(model, [ModelRequest(parts=[UserPromptPart(typed)])], [], CONTEXT, state=state)

    assert result.blocks[0].text == "You wrote: {result:reply.x} {match:y}"
