"""The ``script`` provider: a model that replays a file of outputs (docs/script-models.md).

Two modes, which may be combined:
- ``steps``: responses consumed in order, one per model request, across the process (tests).
- ``rules``: the latest customer message picks a rule by regex; the n-th request of that turn
  gets the rule's n-th response (the last one repeats). Stateless, so demos behave the same on
  any instance.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from importlib import resources
from itertools import count
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_ai import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from frontdesk.errors import ConfigError
from frontdesk.platform.tokens import count_tokens

USER_TEXT = "{user_text}"
# {match:<group>}: a named group of the rule's regex; {result:<tool>.<path>}: a value from the
# latest result of that tool this turn, else from its tool-ledger line in the prompt (dotted
# path, list indexes as numbers).
_PLACEHOLDER = re.compile(r"\{(match|result):([A-Za-z0-9_.-]+)\}")


class ScriptCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    tool: str
    args: dict[str, Any] | None = None
    raw_args: str | None = None


class ScriptResponse(BaseModel):
    """One model output. Exactly one of reply / tool / tools / text / error."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    reply: str | dict[str, Any] | None = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    raw_args: str | None = None
    tools: list[ScriptCall] | None = None
    text: str | None = None
    error: str | None = None
    status: int = Field(default=503, ge=400, le=599)
    delay_ms: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _exactly_one(self) -> ScriptResponse:
        chosen = [k for k in ("reply", "tool", "tools", "text", "error") if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError(f"a response needs exactly one of reply/tool/tools/text/error, got {chosen or 'none'}")
        return self


class ScriptRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    match: str
    responses: list[ScriptResponse] = Field(min_length=1)

    @model_validator(mode="after")
    def _compiles(self) -> ScriptRule:
        try:
            re.compile(self.match)
        except re.error as exc:
            raise ValueError(f"bad regex {self.match!r}: {exc}") from exc
        return self


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = "script"
    steps: list[ScriptResponse] = Field(default_factory=list)
    rules: list[ScriptRule] = Field(default_factory=list)
    default: list[ScriptResponse] = Field(default_factory=list)

    @model_validator(mode="after")
    def _has_something(self) -> Script:
        if not (self.steps or self.rules or self.default):
            raise ValueError("a script needs steps, rules or default responses")
        return self


class ScriptExhausted(UnexpectedModelBehavior):
    """The script has no response for this request; the gateway reports it as a model failure."""


def _latest_user_text(messages: Sequence[ModelMessage]) -> tuple[str, int]:
    """The last customer text, and how many model responses this turn already produced."""
    responses = 0
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            responses += 1
            continue
        prompts = [p.content for p in message.parts if isinstance(p, UserPromptPart) and not _is_feedback(p.content)]
        if prompts:
            content = prompts[-1]
            return (content if isinstance(content, str) else " ".join(map(str, content))), responses
    return "", responses


def _is_feedback(content: object) -> bool:
    """pydantic-ai renders the loop's retry hints as fenced user-voice text; they are not the customer."""
    return isinstance(content, str) and ("<pyai:retry_feedback>" in content or "<pyai:validation_errors>" in content)


def _part_text(part: object) -> str:
    if isinstance(part, ToolCallPart):
        return part.args_as_json_str()
    if isinstance(part, ToolReturnPart):
        return part.model_response_str()
    content = getattr(part, "content", "")
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return " ".join(item for item in content if isinstance(item, str))
    return str(content)


class ScriptPlayer:
    def __init__(self, script: Script) -> None:
        self.script = script
        self._cursor = count()
        self._rules = [(re.compile(r.match), r.responses) for r in script.rules]

    def pick(self, messages: Sequence[ModelMessage]) -> tuple[ScriptResponse, str, dict[str, str]]:
        user_text, turn_step = _latest_user_text(messages)
        for pattern, responses in self._rules:
            found = pattern.search(user_text)
            if found:
                groups = {k: v for k, v in found.groupdict().items() if v is not None}
                return responses[min(turn_step, len(responses) - 1)], user_text, groups
        if self.script.steps:
            index = next(self._cursor)
            if index < len(self.script.steps):
                return self.script.steps[index], user_text, {}
            if not self.script.default:
                raise ScriptExhausted(f"script {self.script.name!r} has no step {index + 1}")
        if self.script.default:
            return self.script.default[min(turn_step, len(self.script.default) - 1)], user_text, {}
        raise ScriptExhausted(f"script {self.script.name!r}: no rule matched {user_text[:80]!r}")

    async def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step, user_text, groups = self.pick(messages)
        fill = _Filler(user_text, groups, messages)
        if step.delay_ms:
            await asyncio.sleep(step.delay_ms / 1000)
        if step.error is not None:
            raise ModelHTTPError(step.status, self.script.name, body={"error": step.error})
        parts: list[TextPart | ToolCallPart] = []
        if step.text is not None:
            parts.append(TextPart(fill(step.text)))
        elif step.reply is not None:
            payload = {"blocks": [{"type": "text", "text": step.reply}]} if isinstance(step.reply, str) else step.reply
            parts.append(ToolCallPart("reply", fill(payload)))
        else:
            calls = step.tools or [ScriptCall(tool=step.tool or "", args=step.args, raw_args=step.raw_args)]
            for call in calls:
                args: str | dict[str, Any] = call.raw_args if call.raw_args is not None else (call.args or {})
                parts.append(ToolCallPart(call.tool, fill(args)))
        # Real token counts of what a provider would read (tool schemas not included), so traces
        # and benchmarks of scripted runs are comparable with a real model's.
        usage = RequestUsage(
            input_tokens=sum(count_tokens(_part_text(p)) for m in messages for p in m.parts),
            output_tokens=sum(count_tokens(_part_text(p)) for p in parts),
        )
        return ModelResponse(parts=parts, usage=usage, model_name=f"script:{self.script.name}")


class _Filler:
    """Fills placeholders in every string of a JSON-like value: ``{user_text}``, ``{match:g}``
    and ``{result:tool.path}``. A placeholder that cannot be resolved is left as written, so a
    broken script shows itself in the reply instead of guessing."""

    def __init__(self, user_text: str, groups: dict[str, str], messages: Sequence[ModelMessage]) -> None:
        self._user_text = user_text
        self._groups = groups
        self._messages = messages

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            # Placeholders first: a customer who types "{result:...}" gets it back verbatim.
            return USER_TEXT.join(_PLACEHOLDER.sub(self._resolve, piece) for piece in value.split(USER_TEXT)).replace(
                USER_TEXT, self._user_text
            )
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        return value

    def _resolve(self, found: re.Match[str]) -> str:
        kind, reference = found.group(1), found.group(2)
        if kind == "match":
            return self._groups.get(reference, found.group(0))
        tool, _, path = reference.partition(".")
        value = _latest_result(self._messages, tool)
        if value is None:
            return found.group(0)
        for key in path.split(".") if path else []:
            if isinstance(value, dict) and key in value:
                value = value[key]
            elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
                value = value[int(key)]
            else:
                return found.group(0)
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return "; ".join(value)  # lines (the week's hours) as a sentence would list them
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _latest_result(messages: Sequence[ModelMessage], tool: str) -> Any:
    """This turn's latest result of ``tool``; else its line in the tool ledger the prompt shows
    (``<tool>: {compact summary}``), which is how a model sees results of earlier turns."""
    called_this_turn = False
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            if any(isinstance(p, UserPromptPart) and not _is_feedback(p.content) for p in message.parts):
                break  # the customer's message: everything before it is earlier turns
            for part in reversed(message.parts):
                if isinstance(part, ToolReturnPart) and part.tool_name == tool:
                    if part.outcome != "retried":
                        return part.content
                    called_this_turn = True
    if called_this_turn:
        return None  # refused or failed this turn: an earlier turn's result would be a lie
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    found = _ledger_line(part.content, tool)
                    if found is not None:
                        return found
    return None


def _ledger_line(text: str, tool: str) -> Any:
    found = None
    for line in text.splitlines():
        if line.startswith(f"{tool}: {{"):
            try:
                found = json.loads(line[len(tool) + 2 :])
            except ValueError:
                continue
    return found


def parse_script(text: str, origin: str) -> Script:
    try:
        return Script.model_validate_json(text)
    except ValidationError as exc:
        raise ConfigError(f"script {origin} is not a valid script model: {exc}") from exc


def read_script(reference: str) -> Script:
    """``reference`` is a file path, or the name of a script shipped with frontdesk (``demo``)."""
    path = Path(reference)
    if path.is_file():
        return parse_script(path.read_text(encoding="utf-8"), str(path))
    packaged = resources.files("frontdesk.platform.models") / "scripts" / f"{reference}.json"
    if not path.is_absolute() and "/" not in reference and packaged.is_file():
        return parse_script(packaged.read_text(encoding="utf-8"), f"builtin:{reference}")
    raise ConfigError(f"script model file not found: {reference!r}")


def script_model(script: Script) -> FunctionModel:
    return FunctionModel(ScriptPlayer(script).respond, model_name=f"script:{script.name}")


def load_script_model(reference: str) -> FunctionModel:
    return script_model(read_script(reference))


def dump_script(data: dict[str, Any]) -> str:
    """Serialise a script (tests write files with this)."""
    return json.dumps(data, indent=2, ensure_ascii=False)
