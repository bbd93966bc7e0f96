"""The tool policy catalog fails closed: a tool is offered only when a policy says so for this
decision's intent, domains, phase and signals; a greeting or an unsure turn can never write."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from pydantic import BaseModel

from frontdesk.capabilities.policy import RoutingDecision, ToolPolicy, ToolPolicyCatalog
from frontdesk.capabilities.tools import Tool
from frontdesk.packs import PackDeps
from frontdesk.packs.catalog import PACK
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.engine import Database

READS = ["search_services", "get_service_detail", "get_service_photos", "get_business_info"]
# What an unsure turn may use: the entry reads of the discovery domains (photos only when asked for).
DISCOVERY_READS = ["search_services", "get_service_detail", "get_business_info"]
WRITES = ["capture_lead", "update_follow_up", "update_customer_info", "refer_to_human"]
ALL_DOMAINS = frozenset({"catalog", "photos", "business", "leads", "follow_ups", "customer", "handoff"})
PHASES = ("discovery", "capture", "post_capture")
INTENTS = ("greeting", "browse", "detail_question", "capture", "post_capture", "human_request", "unknown")


@pytest.fixture(scope="module")
def printshop() -> ToolPolicyCatalog:
    db = Database.from_url("sqlite+aiosqlite:///:memory:")  # only a constructor argument: no handler runs
    tools = PACK.build_tools(PackDeps(db, SystemClock(), "http://x/media"))
    return ToolPolicyCatalog(tools, PACK.policies, discovery_domains=PACK.discovery_domains)


def decide(intent: str, domains=(), phase: str = "discovery", confidence: float = 0.9, signals=()) -> RoutingDecision:
    return RoutingDecision(intent, frozenset(domains), confidence, phase, signals=tuple(signals))


def offered(catalog: ToolPolicyCatalog, decision: RoutingDecision) -> list[str]:
    return catalog.bundle(decision).tool_names


def every_decision():
    for intent, phase, confidence, confirmed in itertools.product(INTENTS, PHASES, (0.3, 0.95), (False, True)):
        yield decide(intent, ALL_DOMAINS, phase, confidence, ["confirmed"] if confirmed else [])


class Args(BaseModel):
    pass


async def _noop(_args: Args, _ctx) -> dict[str, str]:
    return {}


def tool(name: str) -> Tool:
    return Tool(name, f"{name} for tests", Args, _noop)


def test_the_printshop_pack_polices_every_tool_and_every_policy_names_a_tool(printshop):
    assert printshop.unpoliced() == []
    assert sorted(PACK.policies) == sorted(t.name for t in printshop.tools) == sorted(READS + WRITES)


def test_a_tool_without_a_policy_is_never_offered_and_is_named():
    catalog = ToolPolicyCatalog(
        [tool("search_services"), tool("export_all_contacts")],
        {"search_services": ToolPolicy(frozenset({"catalog"}), "read")},
        discovery_domains={"catalog"},
    )

    assert catalog.unpoliced() == ["export_all_contacts"]
    for decision in every_decision():
        bundle = catalog.bundle(decision)
        assert "export_all_contacts" not in bundle.tool_names, decision
        assert bundle.resolve("export_all_contacts") is None


@pytest.mark.parametrize(
    "decision",
    [
        pytest.param(decide("greeting"), id="greeting"),
        pytest.param(decide("greeting", ALL_DOMAINS, "capture"), id="greeting-with-every-domain"),
        pytest.param(decide("unknown", {"leads"}, "capture", 0.3), id="unknown-with-leads"),
        pytest.param(decide("unknown", ALL_DOMAINS, "post_capture", 0.99, ["confirmed"]), id="unknown-sure"),
        pytest.param(decide("capture", ALL_DOMAINS, "capture", 0.5), id="capture-with-low-confidence"),
    ],
)
def test_a_greeting_or_an_unsure_turn_cannot_capture_or_write(printshop, decision):
    names = offered(printshop, decision)

    assert "capture_lead" not in names
    assert not set(names) & set(WRITES)
    assert printshop.bundle(decision).resolve("escalate") is None


def test_a_plain_greeting_gets_no_tools_at_all(printshop):
    assert offered(printshop, decide("greeting")) == []


@pytest.mark.parametrize("domains", [(), ("leads",), ("leads", "customer", "handoff"), ALL_DOMAINS])
def test_an_unknown_turn_gets_only_the_read_tools_of_the_discovery_domains(printshop, domains):
    assert offered(printshop, decide("unknown", domains, "capture", 0.3)) == DISCOVERY_READS


@pytest.mark.parametrize(
    ("phase", "domains", "expected"),
    [
        ("capture", {"leads"}, True),
        ("capture", {"leads", "catalog", "customer"}, True),
        ("capture", {"catalog", "customer"}, False),
        ("discovery", {"leads", "catalog", "customer"}, False),
        ("post_capture", {"leads", "catalog", "customer"}, True),  # a second product after a first capture
        ("post_capture", {"follow_ups", "catalog", "customer"}, False),
    ],
)
def test_capture_lead_is_offered_only_with_the_leads_domain_once_an_item_is_in_context(
    printshop, phase, domains, expected
):
    assert ("capture_lead" in offered(printshop, decide("capture", domains, phase))) is expected


@pytest.mark.parametrize(("phase", "expected"), [("discovery", False), ("capture", False), ("post_capture", True)])
def test_update_follow_up_is_offered_only_after_a_capture(printshop, phase, expected):
    names = offered(printshop, decide("post_capture", {"follow_ups", "customer", "catalog"}, phase, 0.85))

    assert ("update_follow_up" in names) is expected
    assert "update_customer_info" in names


def test_a_capture_turn_is_offered_exactly_the_tools_of_its_domains(printshop):
    decision = decide("capture", {"leads", "customer", "catalog"}, "capture")

    assert offered(printshop, decision) == [
        "search_services",
        "get_service_detail",
        "capture_lead",
        "update_customer_info",
    ]
    with_photos = dataclasses.replace(decision, domains=decision.domains | {"photos"})
    assert "get_service_photos" in offered(printshop, with_photos)


def test_a_human_request_is_offered_the_hand_off_in_any_phase(printshop):
    for phase in PHASES:
        assert offered(printshop, decide("human_request", {"handoff"}, phase, 0.95)) == ["refer_to_human"]


def test_an_alias_resolves_to_its_tool_only_when_the_tool_is_in_the_bundle(printshop):
    info = printshop.bundle(decide("detail_question", {"business"}, confidence=0.8))
    catalog_only = printshop.bundle(decide("browse", {"catalog"}, confidence=0.8))

    assert info.resolve("get_business_hours") is info.resolve("get_business_info")
    assert info.resolve("get_business_hours").name == "get_business_info"
    assert info.resolve("get_opening_hours").name == "get_business_info"
    assert catalog_only.resolve("get_business_hours") is None
    assert catalog_only.resolve("get_business_info") is None
    assert catalog_only.resolve("list_services").name == "search_services"


@pytest.mark.parametrize(("signals", "expected"), [((), []), (("confirmed",), ["cancel_order"])])
def test_a_write_that_requires_confirmation_needs_the_confirmed_signal(signals, expected):
    catalog = ToolPolicyCatalog(
        [tool("cancel_order")],
        {"cancel_order": ToolPolicy(frozenset({"leads"}), "delete", "high", requires_confirmation=True)},
        discovery_domains={"catalog"},
    )

    assert offered(catalog, decide("post_capture", {"leads"}, "post_capture", 0.9, signals)) == expected


@pytest.mark.parametrize(
    ("decision", "tool_first", "first_step"),
    [
        # "how much are cards?": a guess is all a reply could be
        (decide("detail_question", {"catalog"}), True, ()),
        (decide("browse", {"catalog", "business"}), True, ()),
        # "a person will call" needs the hand-off, and it comes first
        (decide("human_request", {"handoff", "catalog", "customer"}), True, ("refer_to_human",)),
        # an order with a name and a phone: "saved" needs the save, and it comes first...
        (
            decide("capture", {"leads", "customer", "catalog"}, "capture", signals=["introduction"]),
            True,
            ("capture_lead",),
        ),
        (
            decide("capture", {"leads", "customer", "catalog"}, "capture", signals=["state:contact_named"]),
            True,
            ("capture_lead",),
        ),
        # ...unless nobody said a name: forced to save, a small model would invent one
        (decide("capture", {"leads", "customer", "catalog"}, phase="capture"), True, ()),
        (decide("greeting"), False, ()),  # nothing to look up
        (decide("unknown", confidence=0.3), False, ()),  # unsure: the model may just answer ("thanks!")
    ],
)
def test_a_turn_that_asks_for_something_starts_with_a_tool_call(printshop, decision, tool_first, first_step):
    bundle = printshop.bundle(decision)

    assert bundle.tool_first is tool_first
    assert bundle.first_step == first_step
