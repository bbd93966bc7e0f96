"""A tenant's own business data: its profile (hours, address, contacts), its catalog (items,
structured prices, photo galleries) and the business file they are imported from and exported
to. Read by pack tools; edited by the console, the command line and imports; never code."""

from frontdesk.business.catalog import (
    CURRENCIES,
    ON_REQUEST,
    CatalogItem,
    ItemFields,
    ItemSpec,
    Photo,
    Price,
    format_amount,
)
from frontdesk.business.files import BusinessFile, file_format, read_business_file
from frontdesk.business.importing import Change, Importer, plan
from frontdesk.business.profile import BusinessProfile, SpecialDay
from frontdesk.business.store import Actor, BusinessData, BusinessStore

__all__ = [
    "CURRENCIES",
    "ON_REQUEST",
    "Actor",
    "BusinessData",
    "BusinessFile",
    "BusinessProfile",
    "BusinessStore",
    "CatalogItem",
    "Change",
    "Importer",
    "ItemFields",
    "ItemSpec",
    "Photo",
    "Price",
    "SpecialDay",
    "file_format",
    "format_amount",
    "plan",
    "read_business_file",
]
