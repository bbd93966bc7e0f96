"""Amounts a reply computes from proven ones: a total, a discounted price, a sum, a rounding.

A good reply does the customer's arithmetic: "10 signs at $12 is $120", "15% off: $72.25 instead
of $85", "45.000đ + 35.000đ = 80.000đ", "just under forty euros (€39.95)". None of these amounts
is a price a tool returned, yet each follows from one. An amount passes here only when it is
reached in one step from what is proven:

* a proven price times a count the customer or the reply states (not any count: "$90" is not
  "$45 times 2" unless a 2 is written), optionally with a proven percentage taken off or kept;
* the sum of two or more of the reply's other grounded amounts, or the gap between two;
* a round figure after "about", "just under", "casi", "khoảng"… within 5% of a proven price.

Proven prices and percentages come from the gate; this module only does the arithmetic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from decimal import Decimal
from itertools import combinations

from frontdesk.verification.facts import sentences
from frontdesk.verification.money import Money

Amount = tuple[Decimal, str | None]  # value, currency (None: any)

_COUNT = re.compile(r"(?<![\w.,%$€£₫])(\d{1,3}(?:[.,]\d{3})+|\d+)(?![\w%]|[.,]\d)")
_PERCENT = re.compile(r"(\d{1,2}(?:[.,]\d+)?)\s?%")
_APPROXIMATELY = re.compile(
    r"(?:just\s+)?(?:under|over|about|around|roughly|nearly|almost|approximately|some|"
    r"casi|unos|unas|alrededor\s+de|cerca\s+de|poco\s+menos\s+de|poco\s+más\s+de|"
    r"khoảng|gần|tầm|chừng|hơn|dưới)\s*$",
    re.IGNORECASE,
)
_SAVING = re.compile(
    r"\b(?:sav\w*|less|cheaper|off|discount\w*|ahorr\w*|menos|más barat\w*|descuento\w*|"
    r"rẻ hơn|tiết kiệm|bớt|giảm|lợi)\b",
    re.IGNORECASE,
)
_MAX_SUMMANDS = 6
_CENT = Decimal("0.01")


# Two is written as a word more often than not, and the number readers leave it as one.
_TWO = re.compile(r"(?<!\w)(?:two|both|pair|couple|dos|ambos|ambas|par|hai|cả hai|đôi|cặp)(?!\w)", re.IGNORECASE)


def counts_in(texts: Iterable[str]) -> set[Decimal]:
    """Whole numbers written in the texts (already in digits), as multipliers: 2 to 100,000."""
    found: set[Decimal] = set()
    for text in texts:
        if _TWO.search(text):
            found.add(Decimal(2))
        for match in _COUNT.finditer(text):
            value = Decimal(re.sub(r"[.,]", "", match.group(1)))
            if 2 <= value <= 100_000:
                found.add(value)
    return found


def percents_in(texts: Iterable[str]) -> set[Decimal]:
    return {Decimal(m.group(1).replace(",", ".")) for text in texts for m in _PERCENT.finditer(text)}


def _same_currency(currency: str | None, other: str | None) -> bool:
    return currency is None or other is None or currency == other


def _close(value: Decimal, candidate: Decimal) -> bool:
    return abs(value - candidate) < _CENT or value == candidate.quantize(_CENT)


Discount = tuple[Decimal, "set[Amount] | None"]  # a percentage, and the prices it applies to (None: any)


def _one_step(
    proven: set[Amount], counts: set[Decimal], discounts: Sequence[Discount], currency: str | None
) -> set[Decimal]:
    def times(units: Iterable[Decimal]) -> set[Decimal]:
        return {*units, *(u * n for u in units for n in counts)}

    def mine(amounts: Iterable[Amount]) -> set[Decimal]:
        return {value for value, cur in amounts if _same_currency(currency, cur)}

    reachable = times(mine(proven))
    for percent, scope in discounts:
        for x in reachable if scope is None else times(mine(scope)):
            reachable = reachable | {x * (100 - percent) / 100, x * percent / 100}
    return reachable


def computed(
    money: Money,
    text: str,
    reply_amounts: Sequence[Money],
    proven: set[Amount],
    counts: set[Decimal],
    discounts: Sequence[Discount],
) -> bool:
    """True when ``money`` (an amount of ``text`` no tool gave) follows from the proven ones."""
    reachable = _one_step(proven, counts, discounts, money.currency)
    if any(_close(money.value, c) for c in reachable):
        return True
    others = [
        m.value
        for m in reply_amounts
        if m is not money
        and m.value != money.value
        and _same_currency(money.currency, m.currency)
        and any(_close(m.value, c) for c in reachable)
    ]
    for size in range(2, min(len(others), _MAX_SUMMANDS) + 1):
        if any(sum(group) == money.value for group in combinations(others, size)):
            return True
    # A saving, said as one: the gap between an amount the reply states and one it states or one
    # step reaches ("10 tins at 90.000đ would be 900.000đ; the box is 800.000đ, 100.000đ less").
    if _SAVING.search(next((s for s in sentences(text) if money.written in s), "")) and any(
        abs(a - b) == money.value for a in others for b in reachable | set(others)
    ):
        return True
    return _approximates(money, text, reachable)


def _approximates(money: Money, text: str, reachable: set[Decimal]) -> bool:
    at = text.find(money.written)
    if at < 0 or not _APPROXIMATELY.search(text[:at]):
        return False
    return any(c and abs(money.value - c) <= c * Decimal("0.05") for c in reachable)
