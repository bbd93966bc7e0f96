"""A price said with what it buys is that option's price: rows told apart by their own words."""

from __future__ import annotations

import pytest

from frontdesk.verification.numbers import with_digits
from frontdesk.verification.tiers import tier_failures

CAKE = (
    "250.000 ₫ / bánh 16 cm (4-6 người)",
    "380.000 ₫ / bánh 20 cm (8-10 người)",
    "520.000 ₫ / bánh 24 cm (12-15 người)",
)
BIKE = ("€6 / 1 hora", "€15 / medio día (4 horas)", "€22 / día completo")
CROISSANT = ("28.000 ₫ / croissant", "150.000 ₫ / box of 6", "280.000 ₫ / box of 12")
BAGS = ("$8.50 / bag, for 25 bags", "$6.75 / bag, for 100 bags")
CARDS = ("$45 / 250 cards, $70 / 500 cards",)


@pytest.mark.parametrize(
    ("rows", "lie", "honest"),
    [
        (CAKE, "Dạ bánh kem 20 cm (8-10 người) giá 250.000đ ạ.", "Dạ bánh kem 16 cm (4-6 người) giá 250.000đ ạ."),
        (CAKE, "Dạ bánh 20 cm giá hai trăm rưỡi ạ.", "Dạ bánh 20 cm giá ba trăm tám chục nghìn ạ."),
        (BIKE, "Para 4 horas te sale mejor el medio día: 22 €.", "Para 4 horas te sale mejor el medio día: 15 €."),
        (BIKE, "El día completo son 15 €.", "El día completo son 22 €."),
        (CROISSANT, "A box of 12 is 150,000 VND.", "A box of 12 is 280,000 VND."),
        (BAGS, "Tote bags start at 25, and at that quantity they're $6.75 a bag.", "At 100 bags they're $6.75 a bag."),
        (CARDS, "Business cards are $70 for 250.", "Business cards are $70 for 500."),
    ],
)
def test_an_amount_moved_to_another_option_is_refused_and_its_own_option_ships(rows, lie, honest):
    assert [f.rule for f in tier_failures(with_digits(lie), [rows])] == ["price"]
    assert tier_failures(with_digits(honest), [rows]) == []


def test_price_lines_quoted_as_the_catalog_writes_them_ship():
    assert tier_failures("Tote bags: $8.50 / bag, for 25 bags, $6.75 / bag, for 100 bags.", [BAGS]) == []


def test_an_amount_said_with_no_option_or_with_another_items_words_is_left_to_the_price_rule():
    assert tier_failures("The cake is 380.000 ₫ and serves a family.", [CAKE]) == []
    assert tier_failures("For 12 people: it serves 12 to 15 and costs 520.000 ₫.", [CAKE]) == []
