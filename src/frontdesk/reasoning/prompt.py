"""Prompt assembly: the static prefix first (cacheable, hash-tracked), then the history, then the
dynamic tail with the new customer messages.

The prefix is identity & policy plus the playbooks (``context.identity.static_prefix``); it holds
nothing that changes per turn, so its hash stays the same until an operator edits policy. The
tail carries the clock in the business's time zone, the contact profile, open tasks, the
episodic snapshot, the tool ledger and the route hint. Dynamic content never goes above static
content: that would invalidate the provider's prompt cache every turn.
"""

from __future__ import annotations

import json
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
from frontdesk.context.conversation import ConversationContext
from frontdesk.context.identity import LANGUAGE_NAMES
from frontdesk.reasoning.turn import Turn

CHARS_PER_TOKEN = 4  # an estimate; issue 5 brings a real tokenizer


@dataclass(frozen=True)
class Prompt:
    messages: list[ModelMessage]
    prefix_hash: str
    size: dict[str, int]


def dynamic_tail(
    now_local: datetime, context: ConversationContext, decision: RoutingDecision, tool_names: Sequence[str]
) -> str:
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
    language = LANGUAGE_NAMES.get(decision.language, decision.language)
    domains = ", ".join(sorted(decision.domains)) or "none"
    route = [
        f"This turn looks like: {decision.intent} (domains: {domains}; phase: {decision.phase}).",
        f"Reply in {language}.",
        f"Tools you can use now: {', '.join([*tool_names, 'reply'])}.",
    ]
    if decision.side_query:
        route.append("A side question during an open request: answer it; the request stays open.")
    sections.append(("Route", route))
    return "\n\n".join(f"# {title}\n" + "\n".join(lines) for title, lines in sections if lines)


def build_prompt(
    turn: Turn,
    prefix: str,
    prefix_hash: str,
    tail: str,
    tool_definitions: Sequence[ToolDefinition],
    images: Sequence[BinaryContent] = (),
) -> Prompt:
    """The static prefix, the stored history, then the dynamic tail and the batch as one customer
    message. The tail goes last so that the prefix *and* the history before it stay byte-identical
    from one turn to the next, which is what a provider's prompt cache reuses."""
    messages: list[ModelMessage] = [ModelRequest(parts=[SystemPromptPart(prefix)])]
    history_chars = 0
    for message in turn.history:
        history_chars += len(message.text)
        if message.role == "assistant":
            messages.append(ModelResponse(parts=[TextPart(message.text)]))
        else:
            messages.append(ModelRequest(parts=[UserPromptPart(message.text)]))
    batch = "\n".join(m.text for m in turn.batch)
    # Customer images ride with the batch as inline bytes (no public URL needed for a vision model).
    content: str | list[str | BinaryContent] = [batch, *images] if images else batch
    messages.append(ModelRequest(parts=[SystemPromptPart(tail), UserPromptPart(content)]))
    tools_chars = len(json.dumps([t.parameters_json_schema for t in tool_definitions], ensure_ascii=False))
    tools_chars += sum(len(t.name) + len(t.description or "") for t in tool_definitions)
    size = {
        "static_prefix_chars": len(prefix),
        "dynamic_tail_chars": len(tail),
        "tool_schema_chars": tools_chars,
        "history_chars": history_chars,
        "batch_chars": len(batch),
        "history_messages": len(turn.history),
        "images": len(images),
    }
    size["estimated_tokens"] = sum(v for k, v in size.items() if k.endswith("_chars")) // CHARS_PER_TOKEN
    return Prompt(messages, prefix_hash, size)
