"""MCP tools enter through the policy catalog: listed and wrapped, but offered only with a policy;
arguments checked against the server's schema before the call; server errors told to the model."""

from __future__ import annotations

import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from frontdesk.capabilities.mcp import McpToolSource, parse_target
from frontdesk.capabilities.policy import RoutingDecision, ToolPolicy, ToolPolicyCatalog
from frontdesk.capabilities.tools import ToolContext, ToolFailure
from frontdesk.errors import ConfigError

CONTEXT = ToolContext(tenant_id="t", conversation_id="c")


def orders_server() -> MCPServer:
    server = MCPServer("orders", log_level="WARNING")
    orders = {"A-17": "shipped"}

    @server.tool()
    def order_get(order_id: str) -> dict:
        """Look up one order."""
        if order_id not in orders:
            raise ToolError(f"no order {order_id}")
        return {"order_id": order_id, "status": orders[order_id]}

    @server.tool()
    def order_cancel(order_id: str, reason: str) -> dict:
        """Cancel an order."""
        orders[order_id] = "cancelled"
        return {"order_id": order_id, "status": "cancelled"}

    @server.tool()
    def refund_everything(confirm: bool) -> dict:
        """A tool nobody wrote a policy for."""
        return {"refunded": True}

    return server


POLICIES = {
    "order_get": ToolPolicy(frozenset({"orders"}), "read"),
    "order_cancel": ToolPolicy(frozenset({"orders"}), "update", risk="high", requires_confirmation=True),
}


@pytest.fixture
async def source():
    mcp = McpToolSource("orders", orders_server())
    await mcp.connect()
    yield mcp
    await mcp.close()


async def test_listed_tools_keep_the_servers_schema_and_description(source):
    tools = {t.name: t for t in source.tools()}

    assert sorted(tools) == ["order_cancel", "order_get", "refund_everything"]
    definition = tools["order_get"].definition()
    assert definition.description == "Look up one order."
    assert definition.parameters_json_schema["properties"] == {"order_id": {"type": "string"}}
    assert definition.parameters_json_schema["required"] == ["order_id"]


async def test_a_server_tool_without_a_policy_is_named_and_never_offered(source):
    catalog = ToolPolicyCatalog(source.tools(), POLICIES, discovery_domains={"orders"})
    everything = RoutingDecision("browse", frozenset({"orders"}), 1.0, "any", signals=("confirmed",))

    assert catalog.unpoliced() == ["refund_everything"]
    assert "refund_everything" not in catalog.bundle(everything).tool_names
    assert catalog.bundle(everything).tool_names == ["order_get", "order_cancel"]


async def test_a_call_returns_the_servers_json_and_an_action_proves_its_event(source):
    tools = {t.name: t for t in source.tools(kinds={"order_cancel": "action"})}

    got = await tools["order_get"].handler(tools["order_get"].input_model.model_validate({"order_id": "A-17"}), CONTEXT)
    cancelled = await tools["order_cancel"].handler(
        tools["order_cancel"].input_model.model_validate({"order_id": "A-17", "reason": "asked"}), CONTEXT
    )

    assert got.output == {"order_id": "A-17", "status": "shipped"}
    assert got.evidence.references == frozenset({"A-17"})
    assert got.evidence.events == ()
    assert cancelled.evidence.events == (("order_cancel", "A-17"),)


async def test_arguments_that_do_not_match_the_schema_never_reach_the_server(source):
    tool = next(t for t in source.tools() if t.name == "order_cancel")

    with pytest.raises(ValueError, match="'reason' is a required property"):
        tool.input_model.model_validate({"order_id": "A-17"})
    with pytest.raises(ValueError, match="order_id: 17 is not of type 'string'"):
        tool.input_model.model_validate({"order_id": 17, "reason": "x"})


async def test_a_server_side_error_is_a_tool_failure_the_model_can_read(source):
    tool = next(t for t in source.tools() if t.name == "order_get")

    with pytest.raises(ToolFailure, match="no order B-1"):
        await tool.handler(tool.input_model.model_validate({"order_id": "B-1"}), CONTEXT)


@pytest.mark.parametrize("target", ["", "stdio:", "ftp://x", "python server.py"])
def test_a_target_must_be_stdio_or_http(target):
    with pytest.raises(ConfigError):
        parse_target(target)


def test_stdio_and_http_targets_parse():
    stdio = parse_target("stdio:python -m frontdesk.packs.loyalty.server --db '/tmp/a b.db'")
    assert (stdio.command, stdio.args) == ("python", ["-m", "frontdesk.packs.loyalty.server", "--db", "/tmp/a b.db"])
    assert parse_target("http://127.0.0.1:9000/mcp") == "http://127.0.0.1:9000/mcp"


SERVER_SCRIPT = """
from mcp.server.mcpserver import MCPServer
server = MCPServer("echo", log_level="WARNING")

@server.tool()
def echo(text: str) -> dict:
    '''Say it back.'''
    return {"text": text}

server.run()
"""


async def test_a_server_over_stdio_is_listed_called_and_closed(tmp_path):
    import sys

    script = tmp_path / "echo_server.py"
    script.write_text(SERVER_SCRIPT)
    source = McpToolSource("echo", parse_target(f"stdio:{sys.executable} {script}"))
    listed = await source.connect()
    try:
        (tool,) = source.tools()
        result = await tool.handler(tool.input_model.model_validate({"text": "hi"}), CONTEXT)
    finally:
        await source.close()

    assert [t.name for t in listed] == ["echo"]
    assert result.output == {"text": "hi"}


async def test_a_server_that_cannot_start_is_a_config_error(tmp_path):
    source = McpToolSource("missing", parse_target(f"stdio:{tmp_path}/no-such-binary"))

    with pytest.raises(ConfigError, match="cannot connect to MCP server 'missing'"):
        await source.connect()
