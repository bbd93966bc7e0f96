"""Phone numbers and e-mails in a text, one reading for the gate (a reply's contact details) and the
router (a customer's: can a lead be saved?). Formats from many countries; numbers that are
quantities, amounts, dates, times or order references are not contacts."""

from __future__ import annotations

import pytest

from frontdesk.demo import demo_item_words
from frontdesk.packs.catalog import PACK
from frontdesk.reasoning.router import Router, RouterState
from frontdesk.verification.contacts import contact_values

ROUTER = Router(PACK.lexicons, demo_item_words())


def phones(text: str) -> list[str]:
    return [v.key for v in contact_values(text) if v.kind == "phone"]


@pytest.mark.parametrize(
    ("text", "digits"),
    [
        ("my name is Jane Doe and my phone is 555-0100", "5550100"),
        ("Ana Ruiz, 555-0199", "5550199"),
        ("call me at 555-2000 please", "5552000"),
        ("reach Tom on 867-5309", "8675309"),
        ("(212) 555-0199", "2125550199"),
        ("212.555.0199", "2125550199"),
        ("+1 212 555 0199", "12125550199"),
        ("+1-212-555-0199", "12125550199"),
        ("+84 912 345 678", "84912345678"),
        ("sđt 0912.345.678", "0912345678"),
        ("zalo: 0912345678", "0912345678"),
        ("84-912-345-678", "84912345678"),
        ("mi móvil es +34 612 34 56 78", "34612345678"),
        ("Soy Lucía, 600 123 456", "600123456"),
        ("London office +44 20 7946 0958", "442079460958"),
        ("tel.0912345678", "0912345678"),
        ("Ana/0912345678", "0912345678"),
        ("llámame 612.34.56.78", "612345678"),
        ("tel:+84.912.345.678", "84912345678"),
        ("Ana: 1.212.555.0199", "12125550199"),
        ("Ana 555\u20130100", "5550100"),
        ("Bao, 0912 345 678 - 500 cards", "0912345678"),  # the quantity is not part of the number
        ("(212) 555-0199 ext. 204", "2125550199"),  # the extension is dialled after the number
        ("call 212-555-0199 x12", "2125550199"),
        ("(028) 3822 1234 máy lẻ 105", "02838221234"),
        ("Ana, order ORD-2026-0042, phone 0912 345 678", "0912345678"),
    ],
)
def test_a_phone_number_is_read_whatever_its_format(text: str, digits: str) -> None:
    assert phones(text) == [digits]


@pytest.mark.parametrize(
    "text",
    [
        "500-1000 flyers please",
        "between 250-500 cards",
        "100 \u2013 150 stickers",
        "how much for 2500 cards?",
        "it cost $1,250,000 last time",
        "giá 1.200.000đ phải không",
        "can you deliver on 2026-12-05 14:30?",
        "pick up 05/12/2026 at 9.30",
        "my order #10234567 has not arrived",
        "ref 2026-0042: can we change the quantity?",
        "mã đơn 2026120501 bị trễ",
        "pedido 88123456 todavía no llega",
        "banner 24x36 in, 3 of them",
        "ISBN 978-3-16-148410-0 for the book cover",
        "tracking no. 9400 1000 0000 0000 0000 00 says delivered",
        "PO 4500012345 is approved",
        "invoice INV-2026-0042 has the wrong total",
        "ship it to ZIP 10001-1234",
        "1.000\u20132.000 tờ rơi giá bao nhiêu",
        "1,000-2,000 flyers",
    ],
)
def test_quantities_amounts_dates_and_order_numbers_are_not_phone_numbers(text: str) -> None:
    assert phones(text) == []


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("mail me: Jane.Doe+cards@mail.example.co.uk", "jane.doe+cards@mail.example.co.uk"),
        ("correo ANA@EJEMPLO.ES gracias", "ana@ejemplo.es"),
        ("email em là lan.nguyen@congty.vn nhé", "lan.nguyen@congty.vn"),
    ],
)
def test_an_email_address_is_read_with_dots_plus_signs_subdomains_and_capitals(text: str, address: str) -> None:
    assert [v.key for v in contact_values(text) if v.kind == "e-mail"] == [address]


@pytest.mark.parametrize(
    "text",
    [
        "my name is Jane Doe and my phone is 555-0100",
        "I'm Carlos Díaz, (212) 555-0199",
        "mình tên Lan, sđt 0912.345.678",
        "Soy Marta Gil, +34 612 34 56 78",
    ],
)
def test_a_customer_who_gives_a_name_and_a_phone_with_an_item_in_context_is_offered_the_lead(text: str) -> None:
    decision = ROUTER.route(text, RouterState(item_in_context=True))

    assert decision.intent == "capture"
    assert "leads" in decision.domains


@pytest.mark.parametrize("text", ["do you have 500-1000 flyers by 2026-12-05?", "my order #10234567, how much was it?"])
def test_numbers_that_are_not_contacts_do_not_make_a_lead(text: str) -> None:
    decision = ROUTER.route(text, RouterState(item_in_context=True))

    assert "contact_info" not in decision.signals
    assert "leads" not in decision.domains
