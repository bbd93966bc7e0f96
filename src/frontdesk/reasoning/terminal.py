"""The terminal tool's payload: the reply blocks the customer sees, and the claims they make."""

from __future__ import annotations

import copy

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import ToolDefinition

from frontdesk.capabilities.tools import compact_schema
from frontdesk.output.blocks import MAX_BLOCKS, Block
from frontdesk.platform.models.contract import REPLY_TOOL, TOOL_FIRST
from frontdesk.verification.claims import Claim

__all__ = ["REPLY_TOOL", "TerminalPayload", "reply_tool_definition"]

MAX_CLAIMS = 20


class TerminalPayload(BaseModel):
    """Arguments of ``reply``: the whole answer, and one claim per evidence-bearing assertion."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    blocks: list[Block] = Field(min_length=1, max_length=MAX_BLOCKS)
    claims: list[Claim] = Field(default_factory=list, max_length=MAX_CLAIMS)


_SCHEMA = compact_schema(TerminalPayload.model_json_schema())


def reply_tool_definition(*, tool_first: bool = False) -> ToolDefinition:
    """``tool_first``: the bundle's ``tool_first``, told to clients that can enforce it."""
    return ToolDefinition(
        name=REPLY_TOOL,
        description=(
            "Send the final answer to the customer. Call exactly once, last. List in `claims` every "
            "evidence-bearing assertion the blocks make (prices, services, photos, actions done)."
        ),
        parameters_json_schema=copy.deepcopy(_SCHEMA),
        metadata={TOOL_FIRST: True} if tool_first else None,
    )
