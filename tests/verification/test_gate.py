"""Invariant 3: a reply ships only if every claim it files and every price or photo it shows was
proven by what the tools really returned (this turn, or the ledger windows of earlier turns)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from frontdesk.capabilities.tools import ToolContext, ToolEvidence, ToolResult
from frontdesk.context.ledgers import WorkingState
from frontdesk.demo import DEMO_TENANT, seed_demo
from frontdesk.packs import PackDeps
from frontdesk.packs.catalog import PACK
from frontdesk.packs.catalog.tools import ServiceIdArgs
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.media import LocalMediaStore
from frontdesk.verification.claims import (
    CLAIM_TYPES,
    BusinessInfoStated,
    CustomerInfoUpdated,
    FollowUpUpdated,
    HandoffTriggered,
    ImagesShown,
    LeadCaptured,
    ServicePresented,
)
from frontdesk.verification.gate import ReplyContent, verify
from frontdesk.verification.money import money_amounts

T0 = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)
CARD_PRICES = "$45 per 250 cards, $70 per 500 cards"
CARD_1 = "http://x/media/business-cards-1.png"
CARD_2 = "http://x/media/business-cards-2.png"

SEARCH = (
    "search_services",
    ToolResult({}, ToolEvidence(frozenset({"business-cards"}), (CARD_PRICES,)), None, "search"),
)
PHOTOS = (
    "get_service_photos",
    ToolResult({}, ToolEvidence(frozenset({"business-cards"}), photos={"business-cards-1": CARD_1}), None, "photos"),
)
INFO = ("get_business_info", ToolResult({}, ToolEvidence(facts=frozenset({"business_info"})), None, "business"))
CAPTURE = ("capture_lead", ToolResult({}, ToolEvidence(events=(("lead_captured", "fu-1"),)), None, "lead:fu-1"))
HANDOFF = ("refer_to_human", ToolResult({}, ToolEvidence(events=(("handoff_triggered", "task-1"),)), None, "handoff"))
UPDATE = ("update_follow_up", ToolResult({}, ToolEvidence(events=(("follow_up_updated", "fu-1"),)), None, "lead:fu-1"))
SAVE_CUSTOMER = (
    "update_customer_info",
    ToolResult({}, ToolEvidence(events=(("customer_info_updated", None),)), None, "customer"),
)


def turn(earlier=(), now=(), open_tasks=("fu-1", "task-1")) -> WorkingState:
    """This turn's state: the ledgers an earlier turn left behind (as a load would give them),
    the conversation's open tasks, plus what this turn's tools did."""
    before = WorkingState(now=T0)
    for name, result in earlier:
        before.record(name, result)
    state = WorkingState(
        now=T0 + timedelta(hours=1),
        tool=list(before.tool),
        action=list(before.action),
        open_references=frozenset(open_tasks),
    )
    for name, result in now:
        state.record(name, result)
    return state


def failures(verdict) -> list[tuple[str, str]]:
    return [(f.rule, f.reason) for f in verdict.failures]


PROVEN = [
    pytest.param(LeadCaptured(follow_up_id="fu-1"), [], [CAPTURE], id="lead_captured-this-turn"),
    pytest.param(LeadCaptured(), [CAPTURE], [], id="lead_captured-in-the-action-ledger"),
    pytest.param(HandoffTriggered(), [], [HANDOFF], id="handoff_triggered-this-turn"),
    pytest.param(HandoffTriggered(), [HANDOFF], [], id="handoff_triggered-in-the-action-ledger"),
    pytest.param(ServicePresented(service_id="business-cards"), [], [SEARCH], id="service_presented"),
    pytest.param(BusinessInfoStated(), [INFO], [], id="business_info_stated-in-the-tool-ledger"),
    pytest.param(FollowUpUpdated(follow_up_id="fu-1"), [CAPTURE], [UPDATE], id="follow_up_updated"),
    pytest.param(CustomerInfoUpdated(), [], [SAVE_CUSTOMER], id="customer_info_updated"),
    pytest.param(ImagesShown(photo_ids=["business-cards-1"]), [], [PHOTOS], id="images_shown"),
]

UNPROVEN = [
    pytest.param(LeadCaptured(), [], [SEARCH], "no lead was captured", id="lead_captured-nothing-ran"),
    pytest.param(LeadCaptured(follow_up_id="fu-9"), [CAPTURE], [], "'fu-9' is not a lead", id="lead_captured-other"),
    pytest.param(HandoffTriggered(), [], [SEARCH], "no hand-off happened", id="handoff_triggered"),
    pytest.param(ServicePresented(service_id="flyers"), [], [SEARCH], "'flyers' was not returned", id="service"),
    pytest.param(
        FollowUpUpdated(follow_up_id="fu-1"), [UPDATE], [], "was not updated this turn", id="follow_up-earlier-turn"
    ),
    pytest.param(
        CustomerInfoUpdated(), [SAVE_CUSTOMER], [], "not saved this turn", id="customer_info_updated-earlier-turn"
    ),
    pytest.param(
        ImagesShown(photo_ids=["business-cards-1"]), [PHOTOS], [SEARCH], "not fetched this turn", id="images-earlier"
    ),
    pytest.param(
        ImagesShown(photo_ids=["business-cards-1", "business-cards-2"]),
        [],
        [PHOTOS],
        "photos business-cards-2 were not fetched this turn",
        id="images_shown-one-never-fetched",
    ),
]


@pytest.mark.parametrize(
    ("claim", "earlier"),
    [
        pytest.param(LeadCaptured(), [CAPTURE], id="lead_captured-follow-up-closed"),
        pytest.param(HandoffTriggered(), [HANDOFF], id="handoff_triggered-hand-off-closed"),
    ],
)
def test_an_earlier_action_whose_task_was_closed_proves_nothing(claim, earlier):
    verdict = verify(ReplyContent("Done!"), [claim], turn(earlier, [], open_tasks=()))

    assert [f.rule for f in verdict.failures] == [claim.type]


def test_the_tables_cover_every_claim_type():
    # business_info_stated proves and disproves nothing alone: the hours, addresses and phone
    # numbers a reply states are each checked against what backs them (test_closed_world.py).
    assert {p.values[0].type for p in PROVEN} == set(CLAIM_TYPES)
    assert {p.values[0].type for p in UNPROVEN} == set(CLAIM_TYPES) - {"business_info_stated"}


def test_declaring_business_info_without_loading_it_does_not_refuse_a_reply_that_states_none():
    verdict = verify(ReplyContent("Business cards are $45 for 250."), [BusinessInfoStated()], turn([SEARCH], []))

    assert verdict.accepted


@pytest.mark.parametrize(("claim", "earlier", "now"), PROVEN)
def test_a_claim_backed_by_what_the_tools_did_is_accepted(claim, earlier, now):
    verdict = verify(ReplyContent("Done!"), [claim], turn(earlier, now))

    assert failures(verdict) == []
    assert verdict.accepted


@pytest.mark.parametrize(("claim", "earlier", "now", "why"), UNPROVEN)
def test_a_claim_no_tool_proved_is_refused_with_its_reason(claim, earlier, now, why):
    verdict = verify(ReplyContent("Done!"), [claim], turn(earlier, now))

    [(rule, reason)] = failures(verdict)
    assert not verdict.accepted
    assert rule == claim.type
    assert why in reason


@pytest.mark.parametrize(
    "text", ["Business cards are $45 for 250.", "500 cards: $70.00", "That's 45 dollars.", "Son 45 dólares.", "45 đô"]
)
def test_a_fetched_price_may_be_quoted_in_any_written_form(text):
    assert failures(verify(ReplyContent(text), [], turn(now=[SEARCH]))) == []


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("250 business cards are $50.", "$50"),
        ("Son 50 dólares.", "50 dólares"),
        ("Son 50 dolares.", "50 dolares"),
        ("Giá 50 đô nhé", "50 đô"),
    ],
)
def test_a_price_the_tools_never_returned_is_refused(text, written):
    verdict = verify(ReplyContent(text), [], turn(now=[SEARCH]))

    assert failures(verdict) == [
        ("price", f"the price {written} does not match any price a tool returned; never invent prices")
    ]


def test_a_price_with_no_tool_call_at_all_is_refused():
    assert [rule for rule, _ in failures(verify(ReplyContent("Only 45 USD!"), [], turn()))] == ["price"]


def test_a_price_fetched_in_an_earlier_turn_is_still_accepted_from_the_tool_ledger():
    assert failures(verify(ReplyContent("As I said, $45 for 250."), [], turn(earlier=[SEARCH]))) == []


def test_an_invented_price_on_a_line_before_a_quantity_is_still_refused():
    reply = ReplyContent("Business cards:\n250 cards: $50\n500 cards: $70")

    assert [rule for rule, _ in failures(verify(reply, [], turn(now=[SEARCH])))] == ["price"]


@pytest.fixture
async def printshop_tools(db, tmp_path):
    await seed_demo(db, SystemClock(), LocalMediaStore(tmp_path / "media"))  # the demo print shop's catalog
    return {t.name: t for t in PACK.build_tools(PackDeps(db, SystemClock(), "http://x/media"))}


async def test_a_service_quoted_on_request_gives_no_price_to_quote(printshop_tools):
    tool = printshop_tools["get_service_detail"]
    result = await tool.handler(ServiceIdArgs(service_id="wedding-invitations"), ToolContext(DEMO_TENANT, "c"))

    verdict = verify(ReplyContent("Wedding invitations start at $300."), [], turn(now=[(tool.name, result)]))

    assert result.output["price"] == "not set: quoted on request"
    assert [rule for rule, _ in failures(verdict)] == ["price"]


def test_a_photo_fetched_this_turn_may_be_shown():
    reply = ReplyContent(f"Here they are: {CARD_1}", image_urls=(CARD_1,))

    assert failures(verify(reply, [], turn(now=[PHOTOS]))) == []


@pytest.mark.parametrize(
    ("reply", "earlier", "now", "url"),
    [
        pytest.param(ReplyContent("Here:", image_urls=(CARD_2,)), [], [PHOTOS], CARD_2, id="never-fetched"),
        pytest.param(ReplyContent("Here:", image_urls=(CARD_1,)), [PHOTOS], [], CARD_1, id="fetched-an-earlier-turn"),
        pytest.param(ReplyContent(f"See ![cards]({CARD_2})."), [], [PHOTOS], CARD_2, id="url-in-the-text"),
        pytest.param(ReplyContent(f"See {CARD_1}"), [PHOTOS], [SEARCH], CARD_1, id="text-url-from-an-earlier-turn"),
    ],
)
def test_a_photo_not_fetched_this_turn_is_refused(reply, earlier, now, url):
    verdict = verify(reply, [], turn(earlier, now))

    assert failures(verdict) == [
        ("image", f"the image {url} is not a photo fetched this turn; show only photos a tool returned")
    ]


def test_the_hint_names_each_failed_claim_and_rule_with_its_reason():
    reply = ReplyContent("Saved! Cards are $50. https://evil.example/cat.jpg")
    claims = [LeadCaptured(), ImagesShown(photo_ids=["business-cards-3"])]

    hint = verify(reply, claims, turn(now=[SEARCH, PHOTOS])).hint()

    bullets = [line for line in hint.splitlines() if line.startswith("- ")]
    assert bullets == [
        "- lead_captured: no lead was captured: capture_lead did not run successfully",
        "- images_shown: photos business-cards-3 were not fetched this turn (fetched: business-cards-1)",
        "- price: the price $50 does not match any price a tool returned; never invent prices",
        "- image: the image https://evil.example/cat.jpg is not a photo fetched this turn; "
        "show only photos a tool returned",
    ]
    assert hint.startswith("Your reply was NOT sent")
    assert "call `reply` again" in hint


def d(value: str) -> Decimal:
    return Decimal(value)


@pytest.mark.parametrize(
    ("text", "amounts"),
    [
        ("Business cards are $45.", [("$45", d("45"))]),
        ("$45 per 250 cards, $70 per 500 cards", [("$45", d("45")), ("$70", d("70"))]),
        ("It comes to $1,200.50 in total", [("$1,200.50", d("1200.50"))]),
        ("That's 70.00 USD", [("70.00 USD", d("70"))]),
        ("US$8.50 per bag", [("US$8.50", d("8.50"))]),
        ("Son 1.200,50 € en total", [("1.200,50 €", d("1200.50"))]),
        ("Cuestan 45 dólares", [("45 dólares", d("45"))]),
        ("Cuestan 45 dolares", [("45 dolares", d("45"))]),
        ("Giá là 45 đô", [("45 đô", d("45"))]),
        ("Giá là 45 đô la nhé", [("45 đô la", d("45"))]),
        ("Only 12 bucks", [("12 bucks", d("12"))]),
        ("250 cards: $45\n500 cards: $70", [("$45", d("45")), ("$70", d("70"))]),
        ("Call us at 555-123-4567", []),
        ("Llámanos al +1 (555) 123 4567", []),
        ("Gọi 0912 345 678 nhé", []),
        ("We need 500 cards by Friday", []),
        ("2,500 flyers in 3 days", []),
        ("Quoted on request — depends on size, quantity and finishing", []),
    ],
)
def test_money_amounts_finds_prices_in_every_language_and_nothing_else(text, amounts):
    assert money_amounts(text) == amounts


# -- contact details: a phone number or e-mail only if a tool returned it or the customer gave it

SHOP_INFO = (
    "get_business_info",
    ToolResult(
        {},
        ToolEvidence(facts=frozenset({"business_info"}), contacts=("+1 555 0100 123", "hello@demoprint.example")),
        None,
        "business",
    ),
)


@pytest.mark.parametrize(
    ("text", "earlier", "now", "customer", "refused"),
    [
        # a small model's own invention, on a hand-over turn
        ("To reach our staff, call 123-456-7890 or visit our website.", [], [HANDOFF], (), ["123-456-7890"]),
        ("Write to us at sales@printshop.com.", [], [SEARCH], (), ["sales@printshop.com"]),
        # what the business-info tool returned, this turn or in the ledger, with or without the country code
        ("Call us on +1 555 0100 123 or hello@demoprint.example.", [], [SHOP_INFO], (), []),
        ("Our number is (555) 0100-123.", [SHOP_INFO], [], (), []),
        # the customer's own number, repeated back
        ("We'll call you at 555-123-4567.", [], [], ("Call me back, 555 123 4567",), []),
        ("Noted: ana@example.com", [], [], ("ana@example.com",), []),
        # not contact details: dates, times, quantity ranges, prices, amounts in thousands, links
        ("Ready on 2026-12-01; 500-1000 cards cost $45.", [], [SEARCH], (), []),
        ("Now: 2026-12-02 14:00. We open 9.00-17.00, 03/12/2026 too.", [], [], (), []),
        ("Gold needs 2.000.000 VND, Silver 1.000.000 đồng, Bronze 1,500,000.", [], [], (), []),
        ("Your order #12345678 is on https://shop.example/o?id=12345678 .", [], [], (), []),
        # the same number in national and international form
        ("Chúng tôi sẽ gọi lại số +84 903 123 456.", [], [], ("gọi lại cho mình nhé, 0903 123 456",), []),
    ],
)
def test_contact_details_in_a_reply_must_come_from_a_tool_or_the_customer(text, earlier, now, customer, refused):
    state = turn(earlier, now)
    state.customer_contacts = customer

    verdict = verify(ReplyContent(text), [], state)

    found = [reason for rule, reason in failures(verdict) if rule == "contact"]
    assert len(found) == len(refused)
    for reason, written in zip(found, refused, strict=True):
        assert written in reason


def test_a_phone_an_mcp_tool_returned_may_be_read_back():
    from frontdesk.capabilities.mcp import default_evidence

    output = {"members": [{"id": "mem_0042", "name": "Lan", "phone": "0903 123 456", "owner_email": "lan@shop.vn"}]}
    state = turn(now=[("member_search", ToolResult(output, default_evidence("member_search", {}, output)))])

    verdict = verify(ReplyContent("Lan (mem_0042): +84 903 123 456, lan@shop.vn"), [], state)
    invented = verify(ReplyContent("Lan (mem_0042): 0912 000 111"), [], state)

    assert failures(verdict) == []
    assert [rule for rule, _ in failures(invented)] == ["contact"]
