"""The memory budget of a model slot (ARCHITECTURE.md §4).

    history budget = min(history cap, window - static prefix - selected tool schemas
                         - (dynamic tail + new messages) - response reserve - tool-result reserve)

Counts are real tokens (``platform.tokens``). The window comes from the slot's setting or, unset,
from ``KNOWN_MODELS`` by the model string. Providers whose tokenizer we do not ship (Claude,
Gemini, local models) get a margin: their window is divided by ``token_margin``, because the same
text can cost them a quarter more tokens than o200k (more for non-Latin scripts).

Eviction keeps whole turns: a customer message (with the customer's messages right after it) and
every message it caused, dropped together from the oldest, so the model never reads an answer
without its question or a tool call without its result. The history stays contiguous: once a turn
does not fit, every older turn goes too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from pydantic_ai import ToolDefinition

from frontdesk.platform.models.local_prompt import tool_line
from frontdesk.platform.tokens import EncodingName, count_tokens

M = TypeVar("M")

# What a provider wraps around each message (role, separators): OpenAI documents 3-4 tokens.
MESSAGE_OVERHEAD_TOKENS = 4
# An inline customer image: OpenAI bills a 1024 px image at high detail ~765 tokens, Anthropic a
# 1.15-megapixel one ~1,600; the larger figure, since the budget must hold for either.
IMAGE_TOKENS = 1_600


@dataclass(frozen=True)
class ModelFamily:
    provider: str
    model_prefix: str  # "" matches every model of the provider
    context_window: int
    encoding: EncodingName = "o200k_base"
    token_margin: float = 1.0
    # A small model does better on a short prompt (``context.identity``'s compact playbook, no
    # reference notes, tools as one line each): the embedded models get it by default.
    compact_prompt: bool = False


PromptStyle = Literal["auto", "full", "compact"]

# Most specific first. Windows are the vendors' published input limits (tokens).
KNOWN_MODELS: tuple[ModelFamily, ...] = (
    ModelFamily("openai", "gpt-4.1", 1_047_576),
    ModelFamily("openai", "gpt-5", 272_000),  # 400k in total, of which 128k are output
    ModelFamily("openai", "gpt-4o", 128_000),
    ModelFamily("openai", "o1", 200_000),
    ModelFamily("openai", "o3", 200_000),
    ModelFamily("openai", "o4", 200_000),
    ModelFamily("openai", "gpt-4-turbo", 128_000, "cl100k_base"),
    ModelFamily("openai", "gpt-4", 8_192, "cl100k_base"),
    ModelFamily("openai", "gpt-3.5", 16_385, "cl100k_base"),
    ModelFamily("openai", "", 128_000),
    ModelFamily("anthropic", "", 200_000, token_margin=1.25),
    ModelFamily("google", "", 1_048_576, token_margin=1.25),
    # Local servers often run a small context (Ollama's num_ctx defaults to a few thousand):
    # set ``chat_context_window`` to what the server really allows.
    ModelFamily("openai-compatible", "", 16_384, token_margin=1.25),
    ModelFamily("script", "", 128_000),
    # An embedded model's window is the context it is loaded with (``local_model_context``).
    ModelFamily("local", "", 8_192, token_margin=1.25, compact_prompt=True),
)
UNKNOWN_MODEL = ModelFamily("", "", 32_768, token_margin=1.25)


def model_family(model_name: str) -> ModelFamily:
    """The family of a slot string (``openai:gpt-4o-mini``, ``openai-compatible:<url>#llama3.2``)."""
    provider, _, model = model_name.partition(":")
    if provider == "openai-compatible":
        model = model.rpartition("#")[2]
    for family in KNOWN_MODELS:
        if family.provider == provider and model.startswith(family.model_prefix):
            return family
    return UNKNOWN_MODEL


@dataclass(frozen=True)
class ContextBudget:
    """One slot's budget for one model, in tokens of ``encoding``."""

    window: int  # already divided by the family's token margin
    response_reserve: int
    tool_result_reserve: int
    tool_schema_budget: int
    history_max: int
    encoding: EncodingName = "o200k_base"
    compact: bool = False  # the short prompt for small models (see ``ModelFamily.compact_prompt``)
    # The model reads tools as one line each (an embedded model: its grammar holds the schemas),
    # whatever the prompt style; a hosted model is sent the JSON schemas even with a compact prompt.
    tools_as_lines: bool = False

    def count(self, text: str) -> int:
        return count_tokens(text, self.encoding)

    def history_budget(self, fixed_tokens: int) -> int:
        """What is left for the history once ``fixed_tokens`` (prefix, schemas, tail, new
        messages) and both reserves are taken; never more than the history cap."""
        left = self.window - fixed_tokens - self.response_reserve - self.tool_result_reserve
        return max(0, min(self.history_max, left))

    def schema_tokens(self, definitions: Sequence[ToolDefinition]) -> int:
        """What the tools cost in the prompt: their JSON schemas, or, for a compact-prompt model
        (an embedded one, whose grammar enforces the schemas), the one line each that it reads."""
        if self.tools_as_lines:
            return sum(self.count(tool_line(d)) for d in definitions)
        return sum(self.count(schema_text(d)) for d in definitions)


@dataclass(frozen=True)
class BudgetConfig:
    """A slot's settings (``chat_context_window`` and friends); ``for_model`` resolves them."""

    context_window: int | None = None
    history_max_tokens: int = 8_000
    response_reserve_tokens: int = 2_048
    tool_result_reserve_tokens: int = 4_096
    tool_schema_budget_tokens: int = 3_000
    prompt_style: PromptStyle = "auto"  # auto: compact for the families marked so

    def for_model(self, model_name: str) -> ContextBudget:
        family = model_family(model_name)
        window = int((self.context_window or family.context_window) / family.token_margin)
        # On a small window the fixed reserves would leave nothing for the conversation: they
        # shrink to fixed shares of it instead.
        return ContextBudget(
            window=window,
            response_reserve=min(self.response_reserve_tokens, window // 8),
            tool_result_reserve=min(self.tool_result_reserve_tokens, window // 4),
            tool_schema_budget=min(self.tool_schema_budget_tokens, window // 4),
            history_max=self.history_max_tokens,
            encoding=family.encoding,
            compact=self.prompt_style == "compact" or (self.prompt_style == "auto" and family.compact_prompt),
            tools_as_lines=family.compact_prompt,
        )


def schema_text(definition: ToolDefinition) -> str:
    """A tool definition as providers receive it, near enough: name, description, JSON schema."""
    payload = {
        "name": definition.name,
        "description": definition.description or "",
        "parameters": definition.parameters_json_schema,
    }
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def group_turns(messages: Sequence[M], is_customer: Callable[[M], bool]) -> list[list[M]]:
    """Split a transcript into whole turns. A turn opens at a customer message that follows
    something else; consecutive customer messages (a burst) stay in one turn. Messages before the
    first customer message (an operator's opener) form a turn of their own."""
    turns: list[list[M]] = []
    previous_was_customer = False
    for message in messages:
        customer = is_customer(message)
        if not turns or (customer and not previous_was_customer):
            turns.append([])
        turns[-1].append(message)
        previous_was_customer = customer
    return turns


def drop_partial_first_turn(messages: Sequence[M], is_customer: Callable[[M], bool]) -> list[M]:
    """For a window cut out of a longer transcript: its first turn may have lost its start (an
    answer without its question, half of a burst), so it goes entirely."""
    return [m for turn in group_turns(messages, is_customer)[1:] for m in turn]


@dataclass(frozen=True)
class FittedHistory(Generic[M]):
    messages: list[M]
    tokens: int
    turns: int
    dropped_turns: int
    dropped_messages: int


def fit_history(
    messages: Sequence[M], budget_tokens: int, count: Callable[[M], int], is_customer: Callable[[M], bool]
) -> FittedHistory[M]:
    """The newest whole turns that fit in ``budget_tokens``, in their original order. Counted from
    the newest, so a long transcript costs only about a budget's worth of counting."""
    turns = group_turns(messages, is_customer)
    kept: list[list[M]] = []
    total = 0
    for turn in reversed(turns):
        size = sum(count(m) for m in turn)
        if total + size > budget_tokens:
            break
        kept.append(turn)
        total += size
    kept.reverse()
    flat = [m for turn in kept for m in turn]
    return FittedHistory(flat, total, len(kept), len(turns) - len(kept), len(messages) - len(flat))
