"""The bounded generation loop (invariant 2: the only exit is the terminal ``reply`` tool).

Bounds: a step ceiling, a stop on ``reply``, one targeted retry per failure kind. Recovery:
prose instead of ``reply`` gets one hint, then its text is salvaged; an invalid ``reply`` payload
gets one hint with the validation errors, then near-JSON salvage. A call to a tool outside the
turn's bundle is answered with an error and never executed. After every tool step the working
state (ledgers, this turn's evidence) is updated, and the result is shrunk by its structure to what
is left of the turn's tool-result reserve before the model reads it; a ``reply`` is audited by the verification gate
(invariant 3): one rejection gets a retry whose hint names each failed claim, a second ships the
safe fallback. Salvaged prose passes the same companion rules (prices, images) or is not sent.

A model failure ends the turn with the fallback, except a transient one (timeout, 429, 5xx) on the
first request: nothing has been done or said yet, so the error is raised and the turn's job runs
it again later, with backoff (``turns/assembler.py`` decides how often).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
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

from frontdesk.capabilities.policy import Bundle
from frontdesk.capabilities.tools import Tool, ToolContext, ToolFailure, ToolResult, output_texts
from frontdesk.context.identity import REPLY_OPENINGS
from frontdesk.context.ledgers import WorkingState
from frontdesk.context.truncation import ResultAllowance, result_text
from frontdesk.errors import ModelAPIError
from frontdesk.output.blocks import Block, text_blocks
from frontdesk.platform import observability as obs
from frontdesk.platform.models.contract import GATE_SCHEMA
from frontdesk.platform.models.gateway import ModelClient
from frontdesk.platform.observability.tracing import MODEL_REQUEST, TOOL_CALL, VERIFY
from frontdesk.reasoning.binding import Bindings, narrowed, unknown_contacts
from frontdesk.reasoning.courtesy import courtesy_reply
from frontdesk.reasoning.salvage import salvage_reply
from frontdesk.reasoning.terminal import REPLY_TOOL, TerminalPayload, reply_tool_definition
from frontdesk.verification import ImageGroup, ReplyContent, Verdict, companion_failures, verify
from frontdesk.verification.claims import Claim

# Tools ``find_tools`` may add to one turn, over all its searches (two searches' worth).
MAX_FOUND_PER_TURN = 8
NOT_OFFERED = "(not offered)"  # the metrics/span name of a tool call the bundle did not resolve
TRACE_RESULT_CHARS = 2000  # of each tool result kept in the turn's trace
FALLBACK_TEXT = (
    "Thanks for your message! I can't answer that properly right now, "
    "so a member of our team will get back to you shortly."
)
MISSING_REPLY_HINT = (
    "Your last answer was plain text, which the customer never sees. "
    "Call the `reply` tool exactly once with your whole answer as blocks."
)

__all__ = ["FALLBACK_TEXT", "REPLY_TOOL", "GenerationResult", "LoopLimits", "Outcome", "run_generation"]


class Outcome(StrEnum):
    REPLIED = "replied"
    SALVAGED = "salvaged"
    FALLBACK = "fallback"
    # Written, but not sent: a person took the thread over while the model was working.
    SUPPRESSED = "suppressed"
    # The model's reply was refused, and words written by the tools went out instead: the pack's
    # courtesy reply for an action (the hand-over or the saved request already tells the team),
    # or a tool's own answer from its result (``ToolResult.answer``: the prices it looked up).
    TEMPLATED = "templated"


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
    claims: list[dict[str, Any]] = field(default_factory=list)
    rejections: list[dict[str, Any]] = field(default_factory=list)
    # The customer was told a person will reply: the turn opens a "needs a reply" task for it.
    hold: bool = False


def reply_content(blocks: Sequence[Block]) -> ReplyContent:
    texts = [b.text if b.type == "text" else (b.caption or "") for b in blocks]
    urls = tuple(str(u) for b in blocks if b.type == "image_group" for u in b.urls)
    groups: list[ImageGroup] = []
    before = ""
    for block in blocks:
        if block.type == "text":
            before = block.text
            continue
        groups.append(ImageGroup(tuple(str(u) for u in block.urls), block.caption or "", before))
        before = ""
    return ReplyContent("\n".join(t for t in texts if t), urls, tuple(groups))


async def run_generation(
    model: ModelClient,
    messages: Sequence[ModelMessage],
    tools: Sequence[Tool] | Bundle,
    context: ToolContext,
    limits: LoopLimits = LoopLimits(),
    *,
    state: WorkingState | None = None,
    fallback_text: str = FALLBACK_TEXT,
    results: ResultAllowance | None = None,
    outcome_texts: Mapping[str, str] | None = None,
    courtesy_texts: Mapping[str, str] | None = None,
    bindings: Bindings | None = None,
    slot: str = "chat",
) -> GenerationResult:
    """``results``: the turn's tool-result reserve (None: results go to the model as they are).
    ``courtesy_texts``: event -> the pack's reply after it, a template over what the tool
    returned (sent instead of the hold message when the model's own reply about it is refused).
    ``bindings``: what fields bound to the conversation may hold (None: nothing is bound).
    ``slot``: the gateway slot ``model`` came from (a metrics label)."""
    bundle = tools if isinstance(tools, Bundle) else Bundle(tuple(tools), {t.name: t for t in tools})
    state = state if state is not None else WorkingState(now=datetime.now(UTC))
    run = _Run(bundle, context, state, fallback_text, results, outcome_texts or {}, courtesy_texts or {}, bindings)
    variants: dict[tuple[bool, int], ModelRequestParameters] = {}

    def parameters() -> ModelRequestParameters:
        """The request's tools; the reply's metadata changes once a tool returned a photo, the
        tools once ``find_tools`` found more."""
        photos_fetched = any(evidence.photos for evidence in state.turn_evidence)
        key = (photos_fetched, len(run.bundle.tools))
        if key not in variants:
            reply = reply_tool_definition(
                tool_first=bundle.tool_first,
                first_step=bundle.first_step,
                photos_fetched=photos_fetched,
                opening=REPLY_OPENINGS.get(context.customer_language, ""),
            )
            variants[key] = ModelRequestParameters(
                function_tools=[*(run.definition(t) for t in run.bundle.tools), reply], allow_text_output=True
            )
        return variants[key]

    history = list(messages)
    prose_hinted = False
    first_prose = ""
    bad_reply_args: str | None = None

    for step in range(1, limits.max_steps + 1):
        run.result.steps = step
        started = time.perf_counter()
        with obs.stage(
            MODEL_REQUEST, {"frontdesk.slot": slot, "gen_ai.request.model": model.name, "frontdesk.step": step}
        ) as span:
            try:
                response = await model.request(history, parameters())
            except ModelAPIError as exc:
                obs.model_failed(slot, model.name, time.perf_counter() - started)
                obs.failed(span, f"model error (status {exc.status})" if exc.status else "model error")
                if exc.transient and step == 1:
                    raise  # no tool has run: the whole turn can be asked again later
                return run.fallback(f"model error: {exc.message}")
            usage = _usage(response, step, time.perf_counter() - started)
            span.set_attributes(
                {
                    "gen_ai.usage.input_tokens": usage["input_tokens"],
                    "gen_ai.usage.output_tokens": usage["output_tokens"],
                }
            )
        obs.model_called(
            slot,
            model.name,
            usage["ms"] / 1000,
            input_tokens=usage["input_tokens"],
            output_tokens=usage["output_tokens"],
        )
        run.result.usage.append(usage)
        history.append(response)
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]

        if not calls:
            prose = "".join(p.content for p in response.parts if isinstance(p, TextPart))
            if not prose_hinted:
                prose_hinted = True
                first_prose = prose
                run.result.retries += 1
                hint = RetryFeedbackPart(content=MISSING_REPLY_HINT, retry=RetryInfo(cause="model_retry"))
                history.append(ModelRequest(parts=[hint]))
                continue
            salvaged = salvage_reply(prose) or salvage_reply(first_prose)
            if salvaged:
                return run.salvaged(salvaged, "prose salvaged after a missing-reply hint")
            return run.fallback("model answered in prose twice and nothing could be salvaged")

        returns: list[ToolReturnPart] = []
        for call in calls:
            if call.tool_name != REPLY_TOOL:
                if results is not None:
                    results.spend(_raw_args(call))  # the call stays in the messages with its result
                returns.append(await run.tool(call))
        for call in calls:
            if call.tool_name != REPLY_TOOL:
                continue
            parsed = _parse_reply(call)
            if isinstance(parsed, TerminalPayload):
                verdict = verify(reply_content(parsed.blocks), parsed.claims, state)
                obs.reply_verified(accepted=verdict.accepted)
                if verdict.accepted:
                    return run.finish(Outcome.REPLIED, list(parsed.blocks), None, parsed.claims)
                run.reject(list(parsed.blocks), parsed.claims, verdict)
                if len(run.result.rejections) > 1:
                    return run.fallback("verification failed twice: " + _reasons(verdict))
                run.result.retries += 1
                returns.append(_retry(call, verdict.hint(), "model_retry"))
                continue
            if bad_reply_args is not None:
                salvaged = salvage_reply(_raw_args(call)) or salvage_reply(bad_reply_args)
                if salvaged:
                    return run.salvaged(salvaged, "reply salvaged from invalid arguments")
                return run.fallback("reply arguments invalid twice")
            bad_reply_args = _raw_args(call)
            run.result.retries += 1
            returns.append(_retry(call, parsed, "validation_error"))
        history.append(ModelRequest(parts=returns))

    return run.fallback(f"no reply within {limits.max_steps} steps")


@dataclass
class _Run:
    """One generation's running state: the bundle, the ledgers, the result being built."""

    bundle: Bundle
    context: ToolContext
    state: WorkingState
    fallback_text: str
    results: ResultAllowance | None = None
    outcome_texts: Mapping[str, str] = field(default_factory=dict)  # event -> what it did, in words
    courtesy_texts: Mapping[str, str] = field(default_factory=dict)  # event -> a template over its result
    bindings: Bindings | None = None
    done: dict[str, dict[str, Any]] = field(default_factory=dict)  # event -> what its tool returned
    answers: list[str] = field(default_factory=list)  # the tools' own answers this turn, in call order
    result: GenerationResult = field(default_factory=lambda: GenerationResult(Outcome.FALLBACK, []))
    offered_at_start: int = field(init=False)  # the bundle's size before any search added to it

    def __post_init__(self) -> None:
        self.offered_at_start = len(self.bundle.tools)

    def definition(self, tool: Tool) -> ToolDefinition:
        """``tool``'s definition; with its bound fields held to this turn's values in the schema a
        constraining client generates under (the one models read is unchanged)."""
        definition = tool.definition()
        if tool.binds and self.bindings is not None:
            schema = narrowed(definition.parameters_json_schema, tool.binds, self.bindings)
            definition = replace(definition, metadata={**(definition.metadata or {}), GATE_SCHEMA: schema})
        return definition

    async def tool(self, call: ToolCallPart) -> ToolReturnPart:
        tool = self.bundle.resolve(call.tool_name)
        # The span names only a tool the catalog knows: a name the model made up is not an attribute.
        with obs.stage(TOOL_CALL, {"gen_ai.tool.name": tool.name if tool else NOT_OFFERED}) as span:
            returned = await self._tool(call, tool)
            record = self.result.tool_calls[-1]
            # "ms" is set once the handler ran: a failure before that is a refusal (not offered, bad arguments).
            result: obs.ToolOutcome = "ok" if record["ok"] else ("error" if "ms" in record else "refused")
            span.set_attribute("frontdesk.tool_result", result)
            if result != "ok":
                obs.failed(span, f"tool {result}")
            obs.tool_called(tool.name if tool else NOT_OFFERED, result)
            return returned

    async def _tool(self, call: ToolCallPart, tool: Tool | None) -> ToolReturnPart:
        record: dict[str, Any] = {"name": call.tool_name, "args": _raw_args(call)[:2000], "ok": False}
        self.result.tool_calls.append(record)
        if tool is None:
            record["error"] = "not offered this turn"
            available = ", ".join([*self.bundle.tool_names, REPLY_TOOL])
            message = f"Tool {call.tool_name!r} is not available in this turn; it was not run. Available: {available}."
            return _retry(call, message, "unavailable_tool")
        if tool.name != call.tool_name:
            record["resolved"] = tool.name
        try:
            arguments = tool.input_model.model_validate(_arguments(call))
        except (ValidationError, ValueError) as exc:
            record["error"] = f"invalid arguments: {exc}"[:500]
            return _retry(call, f"Invalid arguments: {exc}", "validation_error")
        invented = unknown_contacts(_arguments(call), tool.binds, self.bindings) if self.bindings else []
        if invented:
            record["error"] = "contact not given by the customer: " + ", ".join(invented)
            given = [*self.bindings.phones, *self.bindings.emails] if self.bindings else []
            message = f"Not run: {', '.join(invented)} is not what the customer gave. Use only their own " + (
                f"details ({', '.join(given)})." if given else "details; none were given, so ask for them."
            )
            return _retry(call, message, "validation_error")
        started = time.perf_counter()
        try:
            output = await tool.handler(arguments, self.context)
        except ToolFailure as exc:
            record["error"] = str(exc)[:500]
            return ToolReturnPart(call.tool_name, {"error": str(exc)}, tool_call_id=call.tool_call_id)
        except Exception as exc:  # a failing tool is reported to the model, not fatal to the turn
            record["error"] = f"{type(exc).__name__}: {exc}"[:500]
            return ToolReturnPart(call.tool_name, {"error": "the tool failed"}, tool_call_id=call.tool_call_id)
        finally:
            record["ms"] = round((time.perf_counter() - started) * 1000, 2)
        result = output if isinstance(output, ToolResult) else ToolResult(output)
        result = replace(result, evidence=replace(result.evidence, texts=output_texts(result.output)))
        record["ok"] = True
        if result.offers:
            # Callable from then on, the gate knowing them as offered this turn; at most
            # ``MAX_FOUND_PER_TURN`` in all, so searching cannot grow the schemas without bound.
            room = MAX_FOUND_PER_TURN - (len(self.bundle.tools) - self.offered_at_start)
            added = [t for t in result.offers if t.name not in self.bundle.names][: max(0, room)]
            self.bundle = self.bundle.with_tools(added)
            self.state.tool_names |= {t.name for t in added}
            record["found"] = [t.name for t in added]
        content = result.output
        if self.results is not None:
            shrunk = self.results.fit(content)
            content = shrunk.value
            record["result_tokens"] = shrunk.tokens
            if shrunk.truncated:
                record["truncated_from_tokens"] = shrunk.original_tokens
                # The gate must not accept a citation of a row the model never saw.
                result = replace(result, evidence=result.evidence.visible_in(result_text(content)))
        # What the model was shown, kept with the call: the console's trace shows it as the
        # reply's evidence (capped: a trace row is read on every thread page).
        record["result"] = result_text(content)[:TRACE_RESULT_CHARS]
        self.state.record(tool.name, result)  # the ledger is current after every step
        if result.answer and result.answer not in self.answers:
            self.answers.append(result.answer)
        for event, _reference in result.evidence.events:
            returned = result.output if isinstance(result.output, dict) else {}
            self.done[event] = {**_arguments(call), **returned}  # what was asked, then what was done
        return ToolReturnPart(call.tool_name, content, tool_call_id=call.tool_call_id)

    def reject(self, blocks: list[Block], claims: Sequence[Claim], verdict: Verdict) -> None:
        for failure in verdict.failures:
            obs.claim_rejected(failure.rule, kind="claim" if failure.claim is not None else "companion")
        self.result.rejections.append(
            {
                "attempt": len(self.result.rejections) + 1,
                "claims": [c.model_dump() for c in claims],
                "failures": [f.as_json() for f in verdict.failures],
                "reply_text": reply_content(blocks).text[:4000],
            }
        )

    def salvaged(self, blocks: list[Block], detail: str) -> GenerationResult:
        with obs.stage(VERIFY, {"frontdesk.salvaged": True}) as span:
            failures = companion_failures(reply_content(blocks), self.state)
            span.set_attributes({"frontdesk.accepted": not failures, "frontdesk.failures": len(failures)})
        obs.reply_verified(accepted=not failures)
        if failures:
            self.reject(blocks, [], Verdict(tuple(failures)))
            return self.fallback(f"{detail}, but it failed verification: {_reasons(Verdict(tuple(failures)))}")
        return self.finish(Outcome.SALVAGED, blocks, detail, [])

    def finish(
        self, outcome: Outcome, blocks: list[Block], detail: str | None, claims: Sequence[Claim]
    ) -> GenerationResult:
        self.result.outcome = outcome
        self.result.blocks = blocks
        _mark_searches(self.result.tool_calls)
        self.result.detail = detail
        self.result.claims = [c.model_dump() for c in claims]
        return self.result

    def fallback(self, reason: str) -> GenerationResult:
        """The hold message, after what this turn really did ("your request is saved"): a reply
        refused for its wording must not hide a change that was made. When what was done has the
        pack's courtesy reply (a request saved, a hand-over), that reply goes out instead, filled
        with what the tool returned: the customer hears what happens next, not a generic hold.
        Else, when a tool wrote its own answer from what it looked up (a price, the hours of the
        day asked), that answer goes out."""
        courtesy = courtesy_reply(self.courtesy_texts, self.done)
        if courtesy:
            return self.finish(
                Outcome.TEMPLATED, text_blocks(courtesy), f"{reason}; the pack's courtesy reply sent", []
            )
        events = {event for event, _ in self.state.turn_events()}
        if "follow_up_cancelled" in events:
            events.discard("follow_up_updated")
        done = [text for event, text in self.outcome_texts.items() if event in events]
        if self.answers:
            # What the tools looked up, in their own words, rather than "a person will reply":
            # held to the gate like any reply (a bug in a tool's answer ships nothing).
            blocks = text_blocks(" ".join([*done, *self.answers]))
            if verify(reply_content(blocks), [], self.state).accepted:
                return self.finish(Outcome.TEMPLATED, blocks, f"{reason}; the tools' own answer sent", [])
        self.result.hold = True
        return self.finish(Outcome.FALLBACK, text_blocks(" ".join([*done, self.fallback_text])), reason, [])


def _mark_searches(calls: list[dict[str, Any]]) -> None:
    """Each ``find_tools`` call's record says whether a tool it found was then called (the trace's
    measure of whether searching helped)."""
    for at, record in enumerate(calls):
        if "found" in record:
            found = set(record["found"])
            record["led_to_call"] = any(later.get("resolved", later["name"]) in found for later in calls[at + 1 :])


def _reasons(verdict: Verdict) -> str:
    return "; ".join(f"{f.rule}: {f.reason}" for f in verdict.failures)[:1500]


def _parse_reply(call: ToolCallPart) -> TerminalPayload | str:
    """The reply's payload, or the validation message to send back to the model."""
    try:
        return TerminalPayload.model_validate(_arguments(call))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return f"The reply was not valid ({problems}). Call `reply` again with valid blocks and claims."
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


def _usage(response: ModelResponse, step: int, seconds: float) -> dict[str, Any]:
    return {
        "step": step,
        "model": response.model_name,
        "input_tokens": response.usage.input_tokens,
        "output_tokens": response.usage.output_tokens,
        # Of the input, what the provider read from its prompt cache (llama.cpp: reused, not evaluated).
        "cache_read_tokens": response.usage.cache_read_tokens,
        "ms": round(seconds * 1000, 2),
    }
