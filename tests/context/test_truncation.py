"""Tool results too large for the turn's reserve are shrunk by their structure: what the model
reads is always valid JSON, with a marker saying what was left out, and fits the limit. Checked
on its own, on arbitrary JSON, and through the generation loop."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic_ai import ModelRequest, ToolReturnPart

from frontdesk.capabilities.tools import Tool, ToolContext
from frontdesk.context.truncation import MARKER, MIN_RESULT_TOKENS, ResultAllowance, result_text, shrink_result
from frontdesk.platform.tokens import count_tokens
from frontdesk.reasoning.loop import Outcome, run_generation
from harness import reply, script_client

SERVICES = {
    "services": [
        {"id": f"svc-{i}", "name": f"Service {i}", "price": f"${i * 5}", "description": "Full colour, matte. " * 5}
        for i in range(300)
    ],
    "total": 300,
}


def tokens_of(value: Any) -> int:
    return count_tokens(result_text(value))


def test_a_result_that_fits_is_passed_through_untouched():
    small = {"id": "flyers", "price": "$30"}

    shrunk = shrink_result(small, 1_000)

    assert shrunk.value is small
    assert (shrunk.truncated, shrunk.tokens) == (False, tokens_of(small))


def test_a_long_list_keeps_its_first_items_and_says_how_many_were_left_out():
    shrunk = shrink_result(SERVICES, 1_500)

    services = shrunk.value["services"]
    kept = len(services) - 1
    assert shrunk.truncated
    assert shrunk.original_tokens == tokens_of(SERVICES) > 5 * 1_500
    assert shrunk.tokens == tokens_of(shrunk.value) <= 1_500
    assert json.loads(json.dumps(shrunk.value, ensure_ascii=False)) == shrunk.value
    assert [s["id"] for s in services[:kept]] == [f"svc-{i}" for i in range(kept)]
    assert services[-1] == {MARKER: f"{300 - kept} more items truncated"}
    assert shrunk.value["total"] == 300


def test_long_strings_and_wide_objects_are_shortened_with_a_note():
    record = {f"field_{i}": "x" * 3_000 for i in range(40)}

    shrunk = shrink_result(record, 400)

    assert shrunk.tokens <= 400
    assert MARKER in shrunk.value
    assert shrunk.value[MARKER].endswith("more keys truncated")
    first = shrunk.value["field_0"]
    assert first.startswith("x" * 40)
    assert first.endswith("more characters truncated]")


def test_json_text_from_an_mcp_tool_comes_back_as_json_text_that_parses():
    text = json.dumps(SERVICES)

    shrunk = shrink_result(text, 800)

    assert isinstance(shrunk.value, str)
    assert shrunk.tokens <= 800
    parsed = json.loads(shrunk.value)
    assert parsed["services"][-1][MARKER].endswith("more items truncated")


def test_prose_is_cut_with_a_note_and_fits():
    text = "Our shop prints flyers, posters and business cards. " * 400

    shrunk = shrink_result(text, 120)

    assert shrunk.tokens <= 120
    assert shrunk.value.startswith("Our shop prints flyers")
    assert shrunk.value.endswith("more characters truncated]")


def test_a_tiny_reserve_folds_the_result_to_its_outline_and_then_to_a_single_marker():
    outline = shrink_result(SERVICES, 30)
    nothing = shrink_result(SERVICES, 5)

    assert outline.tokens <= 30
    assert outline.value["total"] == 300
    assert outline.value["services"][-1][MARKER].endswith("items truncated")
    assert list(nothing.value) == [MARKER]
    assert nothing.value[MARKER].startswith("result truncated")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=30) | st.dictionaries(st.text(max_size=12), children, max_size=12),
    max_leaves=300,
)


@settings(max_examples=150, deadline=None)
@given(value=json_values, limit=st.integers(min_value=40, max_value=600))
def test_any_json_result_shrinks_to_valid_json_within_the_limit(value: Any, limit: int):
    shrunk = shrink_result(value, limit)

    assert shrunk.tokens <= limit
    text = result_text(shrunk.value)
    assert shrunk.tokens == count_tokens(text)
    if not isinstance(value, str):
        assert json.loads(text) == shrunk.value  # valid JSON that round-trips
    if not shrunk.truncated:
        assert shrunk.value is value


def test_the_allowance_is_shared_by_the_results_of_one_turn():
    allowance = ResultAllowance(2_000)

    first = allowance.fit(SERVICES)
    second = allowance.fit(SERVICES)
    third = allowance.fit(SERVICES)

    assert 1_500 < first.tokens <= 2_000
    assert second.tokens <= max(MIN_RESULT_TOKENS, 2_000 - first.tokens)
    assert third.tokens <= max(MIN_RESULT_TOKENS, 2_000 - first.tokens - second.tokens)
    assert allowance.used == first.tokens + second.tokens + third.tokens <= 2_000 + 2 * MIN_RESULT_TOKENS
    assert allowance.remaining == max(0, 2_000 - allowance.used)


class NoArgs(BaseModel):
    pass


async def test_the_loop_shows_the_model_a_truncated_result_and_traces_both_sizes():
    async def list_everything(_args: NoArgs, _ctx: ToolContext) -> dict[str, Any]:
        return SERVICES

    tool = Tool("list_everything", "Every service.", NoArgs, list_everything)
    script = script_client({"name": "big", "default": [{"tool": "list_everything"}, reply("Here you go.")]})
    seen: list[Any] = []

    class Recording:
        name = "recording"

        async def request(self, messages, params):
            seen.extend(p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts
                        if isinstance(p, ToolReturnPart))  # fmt: skip
            return await script.request(messages, params)

    result = await run_generation(
        Recording(), [ModelRequest.user_text_prompt("everything please")], [tool], ToolContext("t", "c"),
        results=ResultAllowance(1_000),
    )  # fmt: skip

    assert result.outcome is Outcome.REPLIED
    (content,) = seen
    assert tokens_of(content) <= 1_000
    assert content["services"][-1][MARKER].endswith("more items truncated")
    (call,) = result.tool_calls
    assert call["result_tokens"] == tokens_of(content)
    assert call["truncated_from_tokens"] == tokens_of(SERVICES)
