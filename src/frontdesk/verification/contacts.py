"""Contact details in a reply: phone numbers and e-mail addresses, the third thing (after prices
and photos) a small model invents ("call us at 123-456-7890"). A reply may give one only if a tool
returned it or the customer gave it (their own number, repeated back).

Phone numbers are compared by their digits, and a number written with its country code matches
the same number without it ("+1 555 0100 123" and "555 0100 123").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_PHONE = re.compile(r"(?<![\w$.,/])\+?\d[\d\s().-]{5,}\d(?!\w)")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}", re.IGNORECASE)
_DATE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}")
_RANGE = re.compile(r"\d{1,5}\s?[-\u2013]\s?\d{1,5}")
MIN_PHONE_DIGITS = 7


@dataclass(frozen=True)
class ContactValue:
    kind: str  # "phone" or "e-mail"
    written: str
    key: str  # digits of a phone number, a lower-case address


def contact_values(text: str) -> list[ContactValue]:
    """The phone numbers and e-mail addresses written in ``text`` (not dates, not "500-1000")."""
    found = [ContactValue("e-mail", m.group(0), m.group(0).lower()) for m in _EMAIL.finditer(text)]
    without_emails = _EMAIL.sub(" ", text)
    for match in _PHONE.finditer(without_emails):
        written = match.group(0).strip()
        digits = re.sub(r"\D", "", written)
        if len(digits) < MIN_PHONE_DIGITS or _DATE.fullmatch(written) or _RANGE.fullmatch(written):
            continue
        found.append(ContactValue("phone", written, digits))
    return found


def keys_of(texts: Iterable[str]) -> set[str]:
    """The comparison keys of every contact detail in ``texts`` (a tool's fields, the customer's words)."""
    return {value.key for text in texts for value in contact_values(text)}


def known(value: ContactValue, keys: set[str]) -> bool:
    if value.kind == "e-mail":
        return value.key in keys
    # The same number with or without its country code (or trunk prefix).
    return any(
        key == value.key
        or (min(len(key), len(value.key)) >= MIN_PHONE_DIGITS and (key.endswith(value.key) or value.key.endswith(key)))
        for key in keys
    )
