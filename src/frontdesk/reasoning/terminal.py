"""The terminal tool's payload: the reply blocks the customer sees, and the claims they make."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import ToolDefinition

from frontdesk.capabilities.lean_schema import lean_schema
from frontdesk.capabilities.tools import compact_schema
from frontdesk.output.blocks import MAX_BLOCKS, Block
from frontdesk.platform.models.contract import FIRST_STEP, GATE_SCHEMA, REPLY_OPENING, REPLY_TOOL, TOOL_FIRST
from frontdesk.verification.claims import Claim

__all__ = ["REPLY_TOOL", "TerminalPayload", "reply_tool_definition"]

MAX_CLAIMS = 20


class TerminalPayload(BaseModel):
    """Arguments of ``reply``: the whole answer, and one claim per evidence-bearing assertion."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    blocks: list[Block] = Field(min_length=1, max_length=MAX_BLOCKS)
    claims: list[Claim] = Field(default_factory=list, max_length=MAX_CLAIMS)


def _tags_required(schema: dict[str, Any]) -> dict[str, Any]:
    """Pydantic leaves a tagged member's ``type`` optional (it has a default) but refuses a member
    without it: say so in the schema, so that a grammar built from it writes the tag."""
    for member in schema.get("$defs", {}).values():
        if "const" in member.get("properties", {}).get("type", {}) and "type" not in member.get("required", []):
            member["required"] = ["type", *member.get("required", [])]
    return schema


_SCHEMA = _tags_required(compact_schema(TerminalPayload.model_json_schema()))


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
# What hosted models read on every request (and cache): the same rules in a third of the tokens
# (``lean_schema``); what each claim means is in the playbook, once.
_MODEL_SCHEMA = lean_schema(_SCHEMA)
# Each definition gets schemas of its own (a client may adapt them in place); parsing these is
# four times cheaper than deep-copying the dicts, on every step of every turn.
_SCHEMA_JSON = json.dumps(_SCHEMA)
_TEXT_ONLY_SCHEMA_JSON = json.dumps(_TEXT_ONLY_SCHEMA)
_MODEL_SCHEMA_JSON = json.dumps(_MODEL_SCHEMA)
REPLY_DESCRIPTION = "The final answer to the customer: call it once, last."


def reply_tool_definition(
    *, tool_first: bool = False, first_step: Sequence[str] = (), photos_fetched: bool = True, opening: str = ""
) -> ToolDefinition:
    """``tool_first`` and ``first_step``: the bundle's; ``photos_fetched``: whether a tool returned
    a photo this turn (else the gate's schema leaves images out). All are told to clients that
    can enforce them (``metadata``): the gate's schema is pydantic's, every rule written out, for a
    grammar; the schema hosted models read is the lean one, the same for every step and turn."""
    metadata: dict[str, Any] = {}
    if tool_first:
        metadata[TOOL_FIRST] = True
    if first_step:
        metadata[FIRST_STEP] = list(first_step)
    if opening:
        metadata[REPLY_OPENING] = opening
    metadata[GATE_SCHEMA] = json.loads(_SCHEMA_JSON if photos_fetched else _TEXT_ONLY_SCHEMA_JSON)
    return ToolDefinition(
        name=REPLY_TOOL,
        description=REPLY_DESCRIPTION,
        parameters_json_schema=json.loads(_MODEL_SCHEMA_JSON),
        metadata=metadata,
    )
