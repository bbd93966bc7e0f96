"""The print shop's tool policies: every tool declared, nothing inferred from names.

Domains: ``catalog`` (services, prices), ``photos`` (pictures, offered only when asked for: with
them in every price question's bundle a small model fetched photos instead of the price),
``business`` (hours, address), ``leads`` (saving a new request), ``follow_ups`` (changing a saved
one), ``customer`` (contact details), ``handoff``. Phases: ``discovery`` (nothing chosen yet),
``capture`` (an item is in context), ``post_capture`` (a follow-up is open).
"""

from __future__ import annotations

from frontdesk.capabilities.policy import ToolPolicy

ALL_PHASES = frozenset({"discovery", "capture", "post_capture"})

POLICIES: dict[str, ToolPolicy] = {
    "search_services": ToolPolicy(frozenset({"catalog"}), "read", aliases=("list_services", "find_services")),
    # A question about a named item (or the one being discussed) starts with that item's own
    # details, its photos when asked for, the hours when asked for: started from the whole list,
    # a small model read ~900 tokens of other items' prices, and quoted one for another.
    "get_service_detail": ToolPolicy(
        frozenset({"catalog"}),
        "read",
        aliases=("get_service", "service_detail"),
        first_for=frozenset({"detail_question"}),
        first_needs=frozenset({"item_mentioned", "state:item_in_context"}),
    ),
    "get_service_photos": ToolPolicy(
        frozenset({"photos"}),
        "read",
        aliases=("get_photos",),
        first_for=frozenset({"detail_question"}),
        first_needs=frozenset({"photos"}),
    ),
    "get_business_info": ToolPolicy(
        frozenset({"business"}),
        "read",
        aliases=("get_business_hours", "get_opening_hours", "get_contact_info"),
        first_for=frozenset({"detail_question"}),
        first_needs=frozenset({"business_info"}),
    ),
    # Also after a first capture: a customer may order a second product (the same one twice
    # returns the first follow-up).
    "capture_lead": ToolPolicy(
        frozenset({"leads"}),
        "create",
        risk="medium",
        phases=frozenset({"capture", "post_capture"}),
        # An order with contact details and a name (said now, or saved): save it first.
        first_for=frozenset({"capture"}),
        first_needs=frozenset({"introduction", "state:contact_named"}),
    ),
    "update_follow_up": ToolPolicy(
        frozenset({"follow_ups"}), "update", risk="medium", phases=frozenset({"post_capture"})
    ),
    "update_customer_info": ToolPolicy(frozenset({"customer"}), "update", phases=ALL_PHASES),
    "refer_to_human": ToolPolicy(
        frozenset({"handoff"}),
        "create",
        risk="high",
        aliases=("handoff", "escalate"),
        first_for=frozenset({"human_request"}),  # a person asked for, or a complaint: hand over first
    ),
}
DISCOVERY_DOMAINS = frozenset({"catalog", "business"})
