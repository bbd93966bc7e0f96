"""Finding money amounts in text, for the price companion rule.

Amounts are compared as numbers, so "$45", "$45.00" and "45 USD" are the same price. Both
thousands styles are understood ("$1,200.50", "1.200,50 €")."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_NUMBER = r"\d{1,3}(?:[,.\s]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?"
_BEFORE = r"(?:US\$|USD\s?|\$|€|£|EUR\s?)"
_AFTER = r"(?:\s?[$€£]|\s?(?:USD|EUR|US dollars?|dollars?|bucks|dólares?|euros?|đô(?:\s?la)?)\b)"
_MONEY = re.compile(rf"{_BEFORE}\s?(?P<a>{_NUMBER})|(?P<b>{_NUMBER}){_AFTER}", re.IGNORECASE)


def _to_decimal(raw: str) -> Decimal | None:
    digits = raw.replace(" ", "")
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
        value = _to_decimal(match.group("a") or match.group("b"))
        if value is not None:
            found.append((match.group(0).strip(), value))
    return found
