"""The companion rules that catch what the model did not declare: action statements, prices bound
to the services a reply presents, currencies, and image URLs written differently."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from frontdesk.capabilities.tools import ToolEvidence, ToolResult
from frontdesk.context.ledgers import WorkingState
from frontdesk.verification import ReplyContent, verify
from frontdesk.verification.claims import ServicePresented
from frontdesk.verification.money import money_values

NOW = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)
CATALOG = (
    "search_services",
    ToolResult(
        {},
        ToolEvidence(
            frozenset({"business-cards", "wedding-invitations"}),
            prices=("$45 per 250 cards, $70 per 500 cards",),
            prices_by_reference={"business-cards": ("$45 per 250 cards, $70 per 500 cards",)},
        ),
    ),
)
CAPTURE = ("capture_lead", ToolResult({}, ToolEvidence(events=(("lead_captured", "fu-1"),))))
HANDOFF = ("refer_to_human", ToolResult({}, ToolEvidence(events=(("handoff_triggered", "task-1"),))))


def state(*calls) -> WorkingState:
    current = WorkingState(now=NOW)
    for name, result in calls:
        current.record(name, result)
    return current


def rules(text: str, current: WorkingState, claims=(), urls=()) -> list[str]:
    return [f.rule for f in verify(ReplyContent(text, tuple(urls)), list(claims), current).failures]


@pytest.mark.parametrize(
    "text",
    [
        "I've saved your order for 500 flyers.",
        "Your request has been recorded and the team will call you.",
        "He guardado tu pedido de 500 volantes.",
        "Tu solicitud ha quedado registrada.",
        "Tôi đã lưu yêu cầu của bạn.",
    ],
)
def test_saying_something_was_saved_needs_an_action_that_happened(text):
    assert rules(text, state(CATALOG))[0] == "undeclared saved"  # "the team will call you" commits too
    assert rules(text, state(CATALOG, CAPTURE)) == []


@pytest.mark.parametrize(
    "text",
    [
        "I've asked a colleague to take over this conversation.",
        "I have handed you over to our manager.",
        "He avisado a una persona de nuestro equipo.",
        "Tôi đã chuyển cho nhân viên hỗ trợ bạn.",
    ],
)
def test_saying_a_person_takes_over_needs_a_hand_off(text):
    assert "undeclared handed over" in rules(text, state(CATALOG, CAPTURE))
    assert rules(text, state(HANDOFF)) == []


@pytest.mark.parametrize(
    "text",
    [
        "Send me your name and phone and I'll save your request.",
        "Once you confirm, we will forward it to the team.",
        "¿Quieres que guarde tu pedido?",
        "A member of our team can help you with that.",
        "Quy tắc sẽ áp dụng như bạn đã đặt ở bước trước.",  # the customer set it, not the agent
    ],
)
def test_offers_and_future_tense_are_not_assertions(text):
    assert rules(text, state(CATALOG)) == []


def test_a_price_must_belong_to_the_service_the_reply_presents():
    current = state(CATALOG)
    cards = [ServicePresented(service_id="business-cards")]
    invitations = [ServicePresented(service_id="wedding-invitations")]

    assert rules("Business cards are $70 for 500.", current, cards) == []
    assert rules("Wedding invitations are $70.", current, invitations) == ["price"]
    assert rules("Wedding invitations are $70.", current) == []  # undeclared: only "was it fetched at all"


@pytest.mark.parametrize("text", ["It is €45.", "It is 45 EUR.", "Son 45 pesos.", "Giá 45.000đ."])
def test_the_same_number_in_another_currency_is_not_the_fetched_price(text):
    assert rules(text, state(CATALOG)) == ["price"]


@pytest.mark.parametrize("text", ["$45 to 19", "$19-45", "between 19 and 45 dollars", "từ 19 đến 45 đô"])
def test_both_ends_of_a_range_are_checked(text):
    assert rules(text, state(CATALOG)) == ["price"]


def test_a_fetched_photo_matches_however_its_host_and_port_are_written():
    photo = "https://Print.Example.com:443/media/catalog/demo/flyers-1.png"
    current = state(("get_service_photos", ToolResult({}, ToolEvidence(photos={"flyers-1": photo}))))

    assert rules("Here:", current, urls=["https://print.example.com/media/catalog/demo/flyers-1.png"]) == []
    assert rules("Here:", current, urls=["https://print.example.com/media/catalog/demo/flyers-2.png"]) == ["image"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.100.000 đồng", [("1100000", "VND")]),
        ("450k VND", [("450000", "VND")]),
        ("\uff0445", [("45", "USD")]),  # a full-width dollar sign
        ("$45 and 3 days", [("45", "USD")]),
        ("$45-70 each", [("45", "USD"), ("70", "USD")]),
    ],
)
def test_money_values_carry_their_currency(text, expected):
    assert [(m.value, m.currency) for m in money_values(text)] == [(Decimal(v), c) for v, c in expected]
