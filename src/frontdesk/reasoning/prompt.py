"""Prompt assembly: the static prefix first (cacheable, hash-tracked), then the history, then the
dynamic tail with the new customer messages.

The prefix is identity & policy plus the playbooks (``context.identity.static_prefix``); it holds
nothing that changes per turn, so its hash stays the same until an operator edits policy. The
tail carries the clock in the business's time zone, the contact profile, open tasks, the
episodic snapshot, the tool ledger, the reference notes the knowledge registry selected for this
route, and the route hint. Dynamic content never goes above static content: that would
invalidate the provider's prompt cache every turn.

Sizes are real token counts. The history gets what the slot's budget leaves once the prefix, the
routed tool schemas, the tail, the new messages and both reserves are taken
(``context.budget``); older turns are dropped whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic_ai import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolDefinition,
    UserPromptPart,
)

from frontdesk.capabilities.policy import RoutingDecision
from frontdesk.context.budget import IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, BudgetConfig, ContextBudget, fit_history
from frontdesk.context.conversation import ConversationContext
from frontdesk.context.identity import LANGUAGE_NAMES, REPLY_IN
from frontdesk.context.knowledge import Snippet
from frontdesk.reasoning.turn import Turn, TurnMessage

DEFAULT_BUDGET = BudgetConfig().for_model("")
NOTES_TITLE = "Reference notes (reviewed; use only when relevant)"
# The gate checks a reply's ids, prices and dates against tool results only: a number quoted from a
# note would be rejected, so the model is told to fetch it.
SIDE_QUERY_LINE = "A side question during an open request: answer it; the request stays open."
NOTES_CAVEAT = "They explain how things work here; ids, numbers and dates you state still come from tools."


@dataclass(frozen=True)
class Prompt:
    messages: list[ModelMessage]
    prefix_hash: str
    size: dict[str, int]


def dynamic_tail(
    now_local: datetime,
    context: ConversationContext,
    decision: RoutingDecision,
    tool_names: Sequence[str],
    notes: Sequence[Snippet] = (),
    *,
    compact: bool = False,
) -> str:
    """The per-turn part of the prompt. ``notes`` (the knowledge registry's pick for this route)
    live here, not in the prefix: they change with the route, and the prefix must not.
    ``compact`` (a small model): only what this turn has (no empty sections) and the reply's
    language; the embedded model's own tool section lists the tools."""
    if compact:
        return _compact_tail(now_local, context, decision)
    sections: list[tuple[str, list[str]]] = [
        ("Now", [f"Local time at the business: {now_local:%A %Y-%m-%d %H:%M} ({now_local.tzinfo})"]),
        ("The customer (saved details)", context.contact.lines() or ["Nothing saved yet."]),
        ("Open tasks for this customer", [t.line() for t in context.open_tasks] or ["None."]),
    ]
    if context.episodic is not None:
        sections.append(("Conversation memory", context.episodic.lines()))
    sections.append(
        (
            "Tool ledger (facts fetched earlier; fetch again anything not listed)",
            context.ledgers.lines() or ["Empty."],
        )
    )
    if notes:
        sections.append((NOTES_TITLE, [NOTES_CAVEAT, *(note.line() for note in notes)]))
    language = LANGUAGE_NAMES.get(decision.language, decision.language)
    domains = ", ".join(sorted(decision.domains)) or "none"
    route = [
        f"This turn looks like: {decision.intent} (domains: {domains}; phase: {decision.phase}).",
        f"Reply in {language}.",
        f"Tools you can use now: {', '.join([*tool_names, 'reply'])}.",
    ]
    if decision.side_query:
        route.append(SIDE_QUERY_LINE)
    sections.append(("Route", route))
    return _render(sections)


def _compact_tail(now_local: datetime, context: ConversationContext, decision: RoutingDecision) -> str:
    sections: list[tuple[str, list[str]]] = [
        ("Now", [f"{now_local:%A %Y-%m-%d %H:%M} at the business"]),
        ("The customer (saved details)", context.contact.lines()),
        ("Open tasks for this customer", [t.line() for t in context.open_tasks]),
        ("Conversation memory", context.episodic.lines() if context.episodic is not None else []),
        ("Facts fetched earlier", context.ledgers.lines()),
    ]
    language = LANGUAGE_NAMES.get(decision.language, decision.language)
    native = REPLY_IN.get(decision.language)
    reply_in = [f"Reply in {language}.", *([native] if native and decision.language != "en" else [])]
    route = [*reply_in, *([SIDE_QUERY_LINE] if decision.side_query else [])]
    sections.append(("This turn", route))
    return _render(sections)


def _render(sections: Sequence[tuple[str, Sequence[str]]]) -> str:
    """Titled sections, the empty ones left out."""
    return "\n\n".join(f"# {title}\n" + "\n".join(lines) for title, lines in sections if lines)


def build_prompt(
    turn: Turn,
    prefix: str,
    prefix_hash: str,
    tail: str,
    tool_definitions: Sequence[ToolDefinition],
    images: Sequence[BinaryContent] = (),
    budget: ContextBudget = DEFAULT_BUDGET,
) -> Prompt:
    """The static prefix, the stored history, then the dynamic tail and the batch as one customer
    message. The tail goes last so that the prefix *and* the history before it stay byte-identical
    from one turn to the next, which is what a provider's prompt cache reuses."""
    batch = "\n".join(m.text for m in turn.batch)
    size = {
        "static_prefix_tokens": budget.count(prefix) + MESSAGE_OVERHEAD_TOKENS,
        "tool_schema_tokens": budget.schema_tokens(tool_definitions),
        "tail_tokens": budget.count(tail),
        "batch_tokens": budget.count(batch) + MESSAGE_OVERHEAD_TOKENS,
        "image_tokens": IMAGE_TOKENS * len(images),
    }
    history_budget = budget.history_budget(sum(size.values()))

    def message_tokens(message: TurnMessage) -> int:
        return budget.count(message.text) + MESSAGE_OVERHEAD_TOKENS

    history = fit_history(turn.history, history_budget, message_tokens, lambda m: m.role == "user")
    messages: list[ModelMessage] = [ModelRequest(parts=[SystemPromptPart(prefix)])]
    for message in history.messages:
        if message.role == "assistant":
            messages.append(ModelResponse(parts=[TextPart(message.text)]))
        else:
            messages.append(ModelRequest(parts=[UserPromptPart(message.text)]))
    # Customer images ride with the batch as inline bytes (no public URL needed for a vision model).
    content: str | list[str | BinaryContent] = [batch, *images] if images else batch
    messages.append(ModelRequest(parts=[SystemPromptPart(tail), UserPromptPart(content)]))
    size["history_tokens"] = history.tokens
    total = sum(size.values())
    size.update(
        total_tokens=total,
        estimated_tokens=total,  # the pre-tokenizer name of total_tokens, for older readers of traces
        history_messages=len(history.messages),
        history_turns=history.turns,
        history_dropped_turns=history.dropped_turns,
        history_dropped_messages=history.dropped_messages,
        images=len(images),
        context_window=budget.window,
        history_budget_tokens=history_budget,
        tool_schema_budget_tokens=budget.tool_schema_budget,
        response_reserve_tokens=budget.response_reserve,
        tool_result_reserve_tokens=budget.tool_result_reserve,
    )
    return Prompt(messages, prefix_hash, size)
