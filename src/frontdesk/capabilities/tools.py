"""The tool contract: a pydantic input model, a handler, a contract kind.

Policies, bundles and evidence hooks arrive with the capability system (issue 3); the loop
already treats a tool as this typed object, never as a bare function.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_ai import ToolDefinition

ToolKind = Literal["retrieval", "action", "handoff"]


@dataclass(frozen=True)
class ToolContext:
    """What a handler may know about the turn it runs in."""

    tenant_id: str
    conversation_id: str


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_model: type[BaseModel]
    handler: Callable[[Any, ToolContext], Awaitable[Any]]
    kind: ToolKind = "retrieval"

    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            name=self.name,
            description=self.description,
            parameters_json_schema=self.input_model.model_json_schema(),
        )
