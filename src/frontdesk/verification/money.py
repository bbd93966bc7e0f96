"""Finding money amounts in text, for the price companion rule.

Amounts are compared as numbers, so "$45", "$45.00" and "45 USD" are the same price. Both
thousands styles are understood ("$1,200.50", "1.200,50 €")."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

# Thousands are grouped with commas, dots or non-breaking spaces; never a plain space or a line
# break, which separate a price from the next quantity ("$50\n500 cards").
_NUMBER = r"\d{1,3}(?:[,.\u00a0\u202f]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?"
_BEFORE = r"(?:US\$|USD\s?|\$|€|£|EUR\s?)"
_AFTER = r"(?:\s?[$€£]|\s?(?:USD|EUR|US dollars?|dollars?|bucks|d[oó]lar(?:es)?|euros?|đô(?:\s?la)?)\b)"
# The first number of a range counts too: "45-70 dollars", "entre 45 y 70 dólares", "$45-70".
_RANGE_WORD = r"\s?(?:-|\u2013|to|a|y|or|o)\s?"
_MONEY = re.compile(
    rf"{_BEFORE}\s?(?P<a>{_NUMBER})(?:\s?[-\u2013]\s?(?P<c>{_NUMBER})(?![\d$€£]))?"
    rf"|(?P<b>{_NUMBER})(?:{_AFTER}|(?={_RANGE_WORD}(?:{_NUMBER}){_AFTER}))",
    re.IGNORECASE,
)


def _to_decimal(raw: str) -> Decimal | None:
    digits = raw.replace("\u00a0", "").replace("\u202f", "")
    # The last separator followed by exactly 1-2 digits is the decimal point; the rest group thousands.
    match = re.fullmatch(r"(.*?)[.,](\d{1,2})", digits)
    whole, cents = (match.group(1), match.group(2)) if match else (digits, "0")
    whole = whole.replace(",", "").replace(".", "")
    try:
        return Decimal(f"{whole or '0'}.{cents}")
    except InvalidOperation:
        return None


def money_amounts(text: str) -> list[tuple[str, Decimal]]:
    """Every money amount in ``text``: (as written, value)."""
    found: list[tuple[str, Decimal]] = []
    for match in _MONEY.finditer(text):
        for group in ("a", "b", "c"):
            raw = match.group(group)
            value = _to_decimal(raw) if raw else None
            if value is not None:
                found.append((match.group(0).strip() if group != "c" else raw, value))
    return found
