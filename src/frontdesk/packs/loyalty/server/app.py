"""The MCP face of the service: ``build_server(db_path)`` registers every tool of ``registry.TOOLS`` on an
``MCPServer``, and ``main`` runs it over stdio or Streamable HTTP.

The SDK derives a tool's input schema from a function signature; ours come from pydantic input models,
so each tool is built directly: the published schema is the model's own (field titles dropped), and the
argument model is the input model itself, handed whole to the handler.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Literal, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import ToolAnnotations
from pydantic import BaseModel, create_model

from frontdesk.packs.loyalty.server._tool import ToolSpec
from frontdesk.packs.loyalty.server.db import Clock, Database, dumps, utc_now
from frontdesk.packs.loyalty.server.errors import LoyaltyError
from frontdesk.packs.loyalty.server.models import json_schema
from frontdesk.packs.loyalty.server.registry import TOOLS, run_tool
from frontdesk.packs.loyalty.server.seed import seed

INSTRUCTIONS = (
    "Loyalty programme back office: campaigns and their point rules, rewards, members and their points, "
    "tiers, vouchers, segments and reports. Ids look like cmp_0001, rul_0001, mem_0001. Amounts are VND."
)


class _WholeModel(ArgModelBase):
    """Hands the validated input model to the handler as one argument instead of spreading its fields."""

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"params": self}


@cache
def _arguments(spec: ToolSpec[Any]) -> tuple[type[ArgModelBase], dict[str, Any]]:
    """The SDK-side argument model and the published schema of a tool (built once per process)."""
    model = create_model(f"{spec.input_model.__name__}Arguments", __base__=(spec.input_model, _WholeModel))
    return cast(type[ArgModelBase], model), json_schema(spec.input_model)


def _tool(db: Database, spec: ToolSpec[Any]) -> Tool:
    arguments, schema = _arguments(spec)

    def call(params: BaseModel) -> str:
        try:
            # Compact JSON text: the SDK would otherwise indent a returned dict, and results land in prompts.
            return dumps(run_tool(db, spec, params))
        except LoyaltyError as exc:
            raise ToolError(str(exc)) from exc

    return Tool(
        fn=call,
        name=spec.name,
        title=None,
        description=spec.description,
        parameters=schema,
        fn_metadata=FuncMetadata(arg_model=arguments),
        is_async=False,
        context_kwarg=None,
        annotations=ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=None if spec.read_only else spec.destructive,
            open_world_hint=False,
        ),
    )


def open_database(path: str | Path, clock: Clock = utc_now) -> Database:
    """Open the SQLite file, creating the schema and the demo data on first start."""
    db = Database(path, clock)
    db.create_schema()
    with db.transaction():
        if db.scalar("SELECT COUNT(*) FROM tiers") == 0:
            seed(db)
    return db


def build_server(db_path: str | Path, *, clock: Clock = utc_now) -> MCPServer:
    """An MCP server with every loyalty tool, backed by the SQLite file at ``db_path``."""
    db = open_database(db_path, clock)
    # log_level: the SDK calls logging.basicConfig with a Rich handler at this level (INFO would be noisy).
    return MCPServer(
        "loyalty",
        instructions=INSTRUCTIONS,
        version="1.0.0",
        tools=[_tool(db, spec) for spec in TOOLS],
        log_level="WARNING",
    )


def main(transport: Literal["stdio", "http"], db_path: str | Path, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Run the service until stopped: over stdio, or Streamable HTTP at ``http://host:port/mcp``."""
    server = build_server(db_path)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)
