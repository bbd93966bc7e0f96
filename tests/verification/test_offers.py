"""An offer the business's data never makes is refused; one it makes ships, in any wording."""

from __future__ import annotations

import pytest

from frontdesk.verification.offers import unknown_offers, vocabulary

PRINT_SHOP = vocabulary(
    (
        "Custom t-shirts",
        "Screen printed for larger runs or heat-transfer printed for small batches.",
        "Tote bags",
        "Natural or black 6 oz cotton canvas tote bags, printed on one or both sides.",
        "Orders can be picked up at the shop or delivered locally for a flat fee.",
    )
)
BIKES = vocabulary(("Alquiler bici urbana", "Alquiler bici eléctrica", "Casco y candado incluidos."))


@pytest.mark.parametrize(
    ("known", "lie", "honest"),
    [
        (PRINT_SHOP, "Yes, we do embroidered polos for staff.", "Yes, we do screen printed t-shirts for staff."),
        (PRINT_SHOP, "We also print photos on stretched canvas.", "We also print cotton canvas tote bags."),
        (BIKES, "Sí, tenemos tándems de alquiler.", "Sí, tenemos bicis eléctricas de alquiler."),
        (BIKES, "También alquilamos bicis infantiles.", "También alquilamos bicis urbanas."),
    ],
)
def test_an_offer_names_only_what_the_business_data_names(known, lie, honest):
    assert unknown_offers(lie, known)
    assert unknown_offers(honest, known) == []


def test_what_the_business_does_not_do_and_the_customers_words_are_no_offer():
    assert unknown_offers("We don't do embroidered polos, sorry.", PRINT_SHOP) == []
    assert unknown_offers("Embroidered polos? Screen printed t-shirts are what we do.", PRINT_SHOP) == []
