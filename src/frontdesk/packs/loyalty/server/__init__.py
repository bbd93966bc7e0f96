"""The loyalty domain service: a loyalty-programme back office (campaigns, rules, rewards, members, tiers,
vouchers, segments, reports) over a SQLite file, served as an MCP server.

It is a separate service: nothing here imports frontdesk outside this package; frontdesk reaches it over
MCP (stdio or Streamable HTTP). Start it with ``python -m frontdesk.packs.loyalty.server --db PATH``.
"""

from frontdesk.packs.loyalty.server.app import build_server, main, open_database
from frontdesk.packs.loyalty.server.registry import DOMAINS, TOOL_NAMES, TOOLS, tool_names

__all__ = ["DOMAINS", "TOOLS", "TOOL_NAMES", "build_server", "main", "open_database", "tool_names"]
