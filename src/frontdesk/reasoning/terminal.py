"""The terminal tool's payload: the reply blocks the customer sees, and the claims they make."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import ToolDefinition

from frontdesk.capabilities.tools import compact_schema
from frontdesk.output.blocks import MAX_BLOCKS, Block
from frontdesk.platform.models.contract import FIRST_STEP, GATE_SCHEMA, REPLY_TOOL, TOOL_FIRST
from frontdesk.verification.claims import Claim

__all__ = ["REPLY_TOOL", "TerminalPayload", "reply_tool_definition"]

MAX_CLAIMS = 20


class TerminalPayload(BaseModel):
    """Arguments of ``reply``: the whole answer, and one claim per evidence-bearing assertion."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    blocks: list[Block] = Field(min_length=1, max_length=MAX_BLOCKS)
    claims: list[Claim] = Field(default_factory=list, max_length=MAX_CLAIMS)


_SCHEMA = compact_schema(TerminalPayload.model_json_schema())


def _without(schema: dict[str, Any], field: str, definition: str) -> dict[str, Any]:
    """``schema`` with one member (``$defs`` name) taken out of a list field's tagged union."""
    items = schema["properties"][field]["items"]
    ref = f"#/$defs/{definition}"
    items["oneOf"] = [option for option in items["oneOf"] if option.get("$ref") != ref]
    items["discriminator"]["mapping"] = {k: v for k, v in items["discriminator"]["mapping"].items() if v != ref}
    schema["$defs"].pop(definition)
    return schema


# Before a tool returned a photo this turn, an image block or an ``images_shown`` claim can only be
# refused by the gate: a small model that writes one (it did, unasked, on a greeting) gets the
# hold message instead of its answer.
_TEXT_ONLY_SCHEMA = _without(_without(copy.deepcopy(_SCHEMA), "blocks", "ImageGroupBlock"), "claims", "ImagesShown")


def reply_tool_definition(
    *, tool_first: bool = False, first_step: Sequence[str] = (), photos_fetched: bool = True
) -> ToolDefinition:
    """``tool_first`` and ``first_step``: the bundle's; ``photos_fetched``: whether a tool returned
    a photo this turn (else the narrower schema leaves images out). All are told to clients that
    can enforce them (``metadata``); the schema itself is the same for every step."""
    metadata: dict[str, Any] = {}
    if tool_first:
        metadata[TOOL_FIRST] = True
    if first_step:
        metadata[FIRST_STEP] = list(first_step)
    if not photos_fetched:
        metadata[GATE_SCHEMA] = copy.deepcopy(_TEXT_ONLY_SCHEMA)
    return ToolDefinition(
        name=REPLY_TOOL,
        description=(
            "Send the final answer to the customer. Call exactly once, last. List in `claims` every "
            "evidence-bearing assertion the blocks make (prices, services, photos, actions done)."
        ),
        parameters_json_schema=copy.deepcopy(_SCHEMA),
        metadata=metadata or None,
    )
