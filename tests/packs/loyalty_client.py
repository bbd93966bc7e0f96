"""Calling the loyalty MCP server's tools in tests: results as JSON, errors as messages. The
server itself is the ``loyalty_server`` fixture (``tests/conftest.py``)."""

from __future__ import annotations

import json
from typing import Any

from mcp import Client


async def call(client: Client, tool: str, /, **args: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its JSON result."""
    result = await client.call_tool(tool, args)
    text = result.content[0].text
    assert not result.is_error, f"{tool} failed: {text}"
    return json.loads(text)


async def fail(client: Client, tool: str, /, **args: Any) -> str:
    """Call a tool that must fail with a tool error; its message."""
    result = await client.call_tool(tool, args)
    text: str = result.content[0].text
    assert result.is_error, f"{tool} should have failed but returned {text}"
    return text
