"""``find_tools``: the model asks for a tool the turn was not offered, inside the loop.

The router offers a turn the few tools it reads the turn as needing; when that reading is wrong
("shelve the Summer Splash" read as a question about a campaign), the model would otherwise have
to answer without the tool. In a catalog with many tools, every turn is also offered this one
read-only tool: ``find_tools(need)`` ranks the catalog's tool cards (``capabilities/tool_index``)
against what the model says it needs, and the generation loop offers what it finds from its
next step (``ToolResult.offers``). Only what the catalog admits for the turn is found: reads as
they are, writes only as proposals the user must confirm on a later turn, never a tool without a
policy or outside its phases (``ToolPolicyCatalog.discovered``). The turn's trace records each
search, what it found and whether a found tool was then called.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from frontdesk.capabilities.tools import Tool, ToolContext, ToolFailure, ToolResult

FIND_TOOLS = "find_tools"
FIND_TOOLS_DOMAIN = "tools"
FIND_TOOLS_FROM = 30  # a catalog with at least this many tools offers find_tools on every turn
FOUND_PER_SEARCH = 4  # each found tool's schema joins every later request of the turn

# (need, the turn's context) -> the tools the catalog admits for it, best first
Search = Callable[[str, ToolContext], Sequence[Tool]]


class FindToolsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    need: str = Field(
        min_length=2,
        max_length=300,
        description="What you need to do or look up, in a few words ('pause a campaign', 'a member's points history')",
    )


def find_tools_tool(search: Search) -> Tool:
    async def find(arguments: FindToolsInput, context: ToolContext) -> ToolResult:
        found = list(search(arguments.need, context))[:FOUND_PER_SEARCH]
        if not found:
            raise ToolFailure("no other tool matches that need: answer with the tools you have, or say you cannot")
        listed: list[dict[str, Any]] = [{"name": t.name, "description": t.description} for t in found]
        output = {"found": listed, "note": "These tools can be called from your next step."}
        return ToolResult(output, summary={"found": [t.name for t in found]}, offers=tuple(found))

    return Tool(
        FIND_TOOLS,
        "Search this business's other tools when none of the tools you have fits the request. "
        "The tools found can be called from your next step.",
        FindToolsInput,
        find,
    )
