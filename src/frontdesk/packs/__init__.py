"""Business packs: tools, policies, lexicons, knowledge and demo data for one kind of business.

Registered explicitly here; a tenant names its pack (``tenants.pack``)."""

from frontdesk.packs._pack import Pack, PackDeps
from frontdesk.packs.printshop import PACK as PRINTSHOP

PACKS: dict[str, Pack] = {PRINTSHOP.name: PRINTSHOP}

__all__ = ["PACKS", "Pack", "PackDeps"]
