"""The bounded generation loop (invariant 2: the only exit is the terminal ``reply`` tool).

Bounds: a step ceiling, a stop on ``reply``, one targeted retry per failure kind. Recovery:
prose instead of ``reply`` gets one hint, then its text is salvaged; an invalid ``reply`` payload
gets one hint with the validation errors, then near-JSON salvage. A call to a tool outside the
turn's tools is answered with an error and never executed. Anything else ends in a safe fallback.
Routing, ledgers and the claims gate (issue 3) slot in around ``_run_tools`` and ``_accept``.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import ValidationError
from pydantic_ai import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolReturnPart,
)
from pydantic_ai.messages import RetryFeedbackPart, RetryInfo, ToolRetryCause
from pydantic_ai.models import ModelRequestParameters

from frontdesk.capabilities.tools import Tool, ToolContext
from frontdesk.errors import ModelAPIError
from frontdesk.output.blocks import Block, ReplyPayload, text_blocks
from frontdesk.platform.models.gateway import ModelClient
from frontdesk.reasoning.salvage import salvage_reply

REPLY_TOOL = "reply"
FALLBACK_TEXT = (
    "Thanks for your message! I can't answer that properly right now, "
    "so a member of our team will get back to you shortly."
)
MISSING_REPLY_HINT = (
    "Your last answer was plain text, which the customer never sees. "
    "Call the `reply` tool exactly once with your whole answer as blocks."
)


class Outcome(StrEnum):
    REPLIED = "replied"
    SALVAGED = "salvaged"
    FALLBACK = "fallback"


@dataclass(frozen=True)
class LoopLimits:
    max_steps: int = 8


@dataclass
class GenerationResult:
    outcome: Outcome
    blocks: list[Block]
    steps: int = 0
    retries: int = 0
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: list[dict[str, Any]] = field(default_factory=list)
    detail: str | None = None


_REPLY_SCHEMA = ReplyPayload.model_json_schema()


def reply_tool_definition() -> ToolDefinition:
    return ToolDefinition(
        name=REPLY_TOOL,
        description="Send the final answer to the customer. Call exactly once, last.",
        parameters_json_schema=copy.deepcopy(_REPLY_SCHEMA),
    )


async def run_generation(
    model: ModelClient,
    messages: Sequence[ModelMessage],
    tools: Sequence[Tool],
    context: ToolContext,
    limits: LoopLimits = LoopLimits(),
) -> GenerationResult:
    by_name = {t.name: t for t in tools}
    params = ModelRequestParameters(
        function_tools=[*(t.definition() for t in tools), reply_tool_definition()], allow_text_output=True
    )
    history = list(messages)
    result = GenerationResult(outcome=Outcome.FALLBACK, blocks=[])
    prose_hinted = False
    first_prose = ""
    bad_reply_args: str | None = None

    for step in range(1, limits.max_steps + 1):
        result.steps = step
        started = time.perf_counter()
        try:
            response = await model.request(history, params)
        except ModelAPIError as exc:
            return _fallback(result, f"model error: {exc.message}")
        result.usage.append(_usage(response, step, time.perf_counter() - started))
        history.append(response)
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]

        if not calls:
            prose = "".join(p.content for p in response.parts if isinstance(p, TextPart))
            if not prose_hinted:
                prose_hinted = True
                first_prose = prose
                result.retries += 1
                hint = RetryFeedbackPart(content=MISSING_REPLY_HINT, retry=RetryInfo(cause="model_retry"))
                history.append(ModelRequest(parts=[hint]))
                continue
            salvaged = salvage_reply(prose) or salvage_reply(first_prose)
            if salvaged:
                return _finish(result, Outcome.SALVAGED, salvaged, "prose salvaged after a missing-reply hint")
            return _fallback(result, "model answered in prose twice and nothing could be salvaged")

        returns: list[ToolReturnPart] = []
        accepted: list[Block] | None = None
        for call in calls:
            if call.tool_name == REPLY_TOOL:
                parsed = _parse_reply(call)
                if isinstance(parsed, list):
                    accepted = parsed
                    continue
                if bad_reply_args is not None:
                    salvaged = salvage_reply(_raw_args(call)) or salvage_reply(bad_reply_args)
                    if salvaged:
                        return _finish(result, Outcome.SALVAGED, salvaged, "reply salvaged from invalid arguments")
                    return _fallback(result, "reply arguments invalid twice")
                bad_reply_args = _raw_args(call)
                result.retries += 1
                returns.append(_retry(call, parsed, "validation_error"))
            else:
                returns.append(await _run_tool(call, by_name, context, result))
        if accepted is not None:
            return _finish(result, Outcome.REPLIED, accepted, None)
        history.append(ModelRequest(parts=returns))

    return _fallback(result, f"no reply within {limits.max_steps} steps")


def _parse_reply(call: ToolCallPart) -> list[Block] | str:
    """The reply's blocks, or the validation message to send back to the model."""
    try:
        return list(ReplyPayload.model_validate(_arguments(call)).blocks)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return f"The reply was not valid ({problems}). Call `reply` again with valid blocks."
    except ValueError as exc:
        return f"The reply arguments were not usable ({exc}). Call `reply` again with a JSON object."


def _arguments(call: ToolCallPart) -> dict[str, Any]:
    """The call's arguments as an object. Raises ValueError for anything else. A JSON object
    encoded twice (a string holding JSON) is a common slip of small local models: decoded once more."""
    if isinstance(call.args, str):
        try:
            decoded: Any = json.loads(call.args)
            if isinstance(decoded, str):
                decoded = json.loads(decoded)
        except ValueError as exc:
            raise ValueError("arguments are not valid JSON") from exc
    else:
        decoded = call.args or {}
    if not isinstance(decoded, dict):
        raise ValueError(f"arguments must be a JSON object, not {type(decoded).__name__}")
    return decoded


def _raw_args(call: ToolCallPart) -> str:
    return call.args if isinstance(call.args, str) else json.dumps(call.args, ensure_ascii=False)


def _retry(call: ToolCallPart, message: str, cause: ToolRetryCause) -> ToolReturnPart:
    """Answer a tool call with a request to try again (the model sees ``message``)."""
    return ToolReturnPart(
        call.tool_name, message, tool_call_id=call.tool_call_id, outcome="retried", retry=RetryInfo(cause=cause)
    )


async def _run_tool(
    call: ToolCallPart, by_name: dict[str, Tool], context: ToolContext, result: GenerationResult
) -> ToolReturnPart:
    record: dict[str, Any] = {"name": call.tool_name, "args": _raw_args(call)[:2000], "ok": False}
    result.tool_calls.append(record)
    tool = by_name.get(call.tool_name)
    if tool is None:
        record["error"] = "not offered this turn"
        available = ", ".join([*by_name, REPLY_TOOL])
        return _retry(
            call, f"Tool {call.tool_name!r} is not available. Available tools: {available}.", "unavailable_tool"
        )
    try:
        arguments = tool.input_model.model_validate(_arguments(call))
    except (ValidationError, ValueError) as exc:
        record["error"] = f"invalid arguments: {exc}"[:500]
        return _retry(call, f"Invalid arguments: {exc}", "validation_error")
    started = time.perf_counter()
    try:
        output = await tool.handler(arguments, context)
    except Exception as exc:  # a failing tool is reported to the model, not fatal to the turn
        record["error"] = f"{type(exc).__name__}: {exc}"[:500]
        return ToolReturnPart(tool.name, {"error": "the tool failed"}, tool_call_id=call.tool_call_id)
    finally:
        record["ms"] = round((time.perf_counter() - started) * 1000, 2)
    record["ok"] = True
    return ToolReturnPart(tool.name, output, tool_call_id=call.tool_call_id)


def _usage(response: ModelResponse, step: int, seconds: float) -> dict[str, Any]:
    return {
        "step": step,
        "model": response.model_name,
        "input_tokens": response.usage.input_tokens,
        "output_tokens": response.usage.output_tokens,
        "ms": round(seconds * 1000, 2),
    }


def _finish(result: GenerationResult, outcome: Outcome, blocks: list[Block], detail: str | None) -> GenerationResult:
    result.outcome = outcome
    result.blocks = blocks
    result.detail = detail
    return result


def _fallback(result: GenerationResult, reason: str) -> GenerationResult:
    return _finish(result, Outcome.FALLBACK, text_blocks(FALLBACK_TEXT), reason)
