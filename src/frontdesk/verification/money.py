"""Finding money amounts in text, for the price companion rule.

Amounts are compared as numbers with their currency, so "$45", "$45.00" and "45 USD" are the
same price and "€45" is not. Both thousands styles are understood ("$1,200.50", "1.200,50 €"),
as are Vietnamese dong ("450.000đ", "450k VND") and both ends of a range ("$45-70",
"between 45 and 70 dollars", "từ 45 đến 70 đô"). Full-width characters are folded first.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import NamedTuple

# Thousands are grouped with commas, dots or non-breaking spaces; never a line break, which
# separates a price from the next quantity ("$50\n500 cards"). A plain space groups thousands only
# beside a currency ("$1 200", "1 200 €"): "45 250 cards" stays two numbers.
_NUMBER = r"\d{1,3}(?:[,.\u00a0\u202f]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?"
_SPACED = r"\d{1,3}(?: \d{3})+(?:[.,]\d{1,2})?(?![\d.,]\d)"
_AMOUNT = rf"(?:{_NUMBER})(?:\s?[kK](?![a-zA-Z]))?"
_SIGNED_AMOUNT = rf"(?:{_SPACED}|{_NUMBER})(?:\s?[kK](?![a-zA-Z]))?"
_BEFORE = r"(?P<pre>US\$|USD\s?|\$|€|£|EUR\s?|₫|VND\s?)"
_AFTER_WORDS = (
    r"USD|EUR|VND|VNĐ|US dollars?|dollars?|bucks|d[oó]lar(?:es)?|euros?|pesos?|"
    r"đồng|dong|đô(?:\s?la)?|đ"
)
_AFTER = rf"(?P<post>\s?[$€£₫¤]|\s?(?:{_AFTER_WORDS})(?!\w))"
_RANGE = r"\s?(?:-|\u2013|\u2014|to|or|and|a|y|o|hasta|đến|tới)\s?"
# After "$45", only a dash or "to" makes the next bare number a price ("$45-70", "$45 to 70");
# "$45 and 3 days" must not turn 3 into money. A word after it means a quantity ("to 70 cards").
_UNIT_WORDS = r"(?:each|per|apiece|a piece|cada|por|mỗi)\b"
_RANGE_AFTER_PRICE = r"\s?(?:-|\u2013|\u2014|to|a|hasta|đến|tới)\s?"
_MONEY = re.compile(
    rf"{_BEFORE}\s?(?P<a>{_SIGNED_AMOUNT})(?:{_RANGE_AFTER_PRICE}(?P<c>{_AMOUNT})(?![\d$€£₫])(?!\s?(?!{_UNIT_WORDS})[^\W\d_]))?"
    rf"|(?P<b>{_SIGNED_AMOUNT})(?:{_AFTER}|(?={_RANGE}(?:{_AMOUNT})\s?(?:[$€£₫]|(?:{_AFTER_WORDS})(?!\w))))",
    re.IGNORECASE,
)
_CURRENCIES = {
    "$": "USD", "us$": "USD", "usd": "USD", "dollar": "USD", "dollars": "USD", "us dollar": "USD",
    "us dollars": "USD", "bucks": "USD", "dolar": "USD", "dólar": "USD", "dolares": "USD",
    "dólares": "USD", "đô": "USD", "đô la": "USD", "đôla": "USD",
    "€": "EUR", "eur": "EUR", "euro": "EUR", "euros": "EUR", "£": "GBP",
    "₫": "VND", "vnd": "VND", "vnđ": "VND", "đồng": "VND", "dong": "VND", "đ": "VND",
    "peso": "PESO", "pesos": "PESO", "¤": None,
}  # fmt: skip


_NOT_A_RANGE = re.compile(r"\s?(?:and|or|y|o)\s", re.IGNORECASE)
_RANGE_OPENER = re.compile(r"(?:between|entre|từ|from|de)\s*$", re.IGNORECASE)


class Money(NamedTuple):
    written: str
    value: Decimal
    currency: str | None  # None: a bare number in a range whose currency follows ("45" in "45-70 $")


def _to_decimal(raw: str) -> Decimal | None:
    digits = raw.replace("\u00a0", "").replace("\u202f", "").replace(" ", "").strip()
    thousands = digits[-1:] in ("k", "K")
    digits = digits.rstrip("kK").strip()
    # The last separator followed by exactly 1-2 digits is the decimal point; the rest group thousands.
    match = re.fullmatch(r"(.*?)[.,](\d{1,2})", digits)
    whole, cents = (match.group(1), match.group(2)) if match else (digits, "0")
    whole = whole.replace(",", "").replace(".", "")
    try:
        value = Decimal(f"{whole or '0'}.{cents}")
    except InvalidOperation:
        return None
    return value * 1000 if thousands else value


def _currency(marker: str | None) -> str | None:
    if not marker:
        return None
    return _CURRENCIES.get(" ".join(marker.strip().lower().split()))


def money_values(text: str) -> list[Money]:
    """Every money amount in ``text`` with its currency."""
    return list(_money_values(text))


@lru_cache(maxsize=8192)
def _money_values(text: str) -> tuple[Money, ...]:
    folded = unicodedata.normalize("NFKC", text)
    found: list[Money] = []
    for match in _MONEY.finditer(folded):
        currency = _currency(match.group("pre") or match.group("post"))
        # "a box of 6 and 120,000 VND": "and" joins two things, not the ends of a range, unless
        # the sentence says "between 45 and 70 dollars".
        joined = match.group("b") and not match.group("post") and _NOT_A_RANGE.match(folded, match.end())
        if joined and not _RANGE_OPENER.search(folded[max(0, match.start() - 12) : match.start()]):
            continue
        for group in ("a", "b", "c"):
            raw = match.group(group)
            value = _to_decimal(raw) if raw else None
            if value is not None:
                written = match.group(0).strip() if group != "c" else raw
                found.append(Money(written, value, currency))
    return tuple(found)


def money_amounts(text: str) -> list[tuple[str, Decimal]]:
    """Every money amount in ``text``: (as written, value)."""
    return [(m.written, m.value) for m in money_values(text)]


def without_money(text: str) -> str:
    """``text`` with every amount blanked (same length): what is left is said about the amount."""
    for money in money_values(text):
        text = text.replace(money.written, " " * len(money.written))
    return text
