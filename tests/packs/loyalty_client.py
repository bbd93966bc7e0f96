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


LOYALTY_ACCOUNT = "acme-chat"


async def loyalty_runtime(db: Any, script: Any, server: Any) -> Any:
    """A runtime whose ``acme`` tenant runs the loyalty pack against ``server`` (connected over
    MCP), staff writing on the web-chat account ``LOYALTY_ACCOUNT``. Workers are not started."""
    from frontdesk.platform.store.schema import ChannelAccount, Tenant
    from harness import make_runtime

    runtime, _ = await make_runtime(db, script)
    await runtime.start(mcp_targets={"loyalty": server})
    now = runtime.clock.now()
    async with db.transaction() as session:
        session.add(Tenant(id="acme", name="Acme Rewards", pack="loyalty", policy={}, created_at=now))
        await session.flush()
        session.add(
            ChannelAccount(id=LOYALTY_ACCOUNT, tenant_id="acme", channel="webchat", name="x", config={}, created_at=now)
        )
    return runtime
