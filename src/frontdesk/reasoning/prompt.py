"""Prompt assembly: static prefix first (cacheable, hash-tracked), dynamic tail after.

Identity & policy fields and the memory budget arrive in issue 3; the order rule holds already.
"""

from __future__ import annotations

from datetime import datetime

from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, SystemPromptPart, TextPart, UserPromptPart

from frontdesk.reasoning.turn import Turn

PLAYBOOK = """\
You are the customer assistant of {business}, answering customers on a messaging channel.
Rules:
- Answer only by calling the `reply` tool exactly once, with the whole reply as blocks.
  Text outside `reply` is never shown to the customer.
- Never invent prices, availability or facts you did not get from a tool.
- Several customer messages may arrive together; answer them in one reply.
- Keep replies short and friendly, in the customer's language."""


def static_prefix(turn: Turn) -> str:
    return PLAYBOOK.format(business=turn.business_name)


def build_messages(turn: Turn, now: datetime) -> list[ModelMessage]:
    """System parts, then the stored history, then the batch as one customer message."""
    messages: list[ModelMessage] = [
        ModelRequest(
            parts=[SystemPromptPart(static_prefix(turn)), SystemPromptPart(f"Current time (UTC): {now:%Y-%m-%d %H:%M}")]
        )
    ]
    for message in turn.history:
        if message.role == "assistant":
            messages.append(ModelResponse(parts=[TextPart(message.text)]))
        else:
            messages.append(ModelRequest(parts=[UserPromptPart(message.text)]))
    messages.append(ModelRequest(parts=[UserPromptPart("\n".join(m.text for m in turn.batch))]))
    return messages
