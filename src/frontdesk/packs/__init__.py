"""Business packs: tools, policies, lexicons, knowledge and demo data for one kind of business.

Registered explicitly here; a tenant names its pack (``tenants.pack``)."""

from frontdesk.packs._pack import Pack, PackDeps, TenantData
from frontdesk.packs.catalog import PACK as CATALOG
from frontdesk.packs.loyalty import McpPack, loyalty_pack

PACKS: dict[str, Pack] = {CATALOG.name: CATALOG}
# Packs whose tools come from an MCP server: available once ``Runtime.start`` has connected it.
MCP_PACKS: dict[str, McpPack] = {"loyalty": loyalty_pack()}

__all__ = ["MCP_PACKS", "PACKS", "McpPack", "Pack", "PackDeps", "TenantData"]
