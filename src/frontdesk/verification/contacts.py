"""Contact details in a reply: phone numbers and e-mail addresses, the third thing (after prices
and photos) a small model invents ("call us at 123-456-7890"). A reply may give one only if a tool
returned it or the customer gave it (their own number, repeated back).

Phone numbers are compared by their digits, and a number written with its country code matches
the same number without it, and a trunk zero is dropped ("+84 903 123 456" and "0903 123 456").

The same reading finds the contact details in a customer's message for the router (whether a lead
can be saved), so the two can never disagree on what a phone number is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from frontdesk.verification.money import money_values

# A digit, then digits with at most two separators between them ("(212) 555-0199", "+84 912.345.678"):
# "0912 345 678 - 500 cards" is a number and a quantity. Not inside a word, an amount ("$", "1,5"),
# a reference ("#") or a decimal; after a label's dot or slash it is ("tel.0912 345 678").
# Nor the digits of a code that starts with letters ("ORD-2026-0042", "INV_2026_0042").
_PHONE = re.compile(r"(?<![\w$#])(?<!\d[.,/])(?<![A-Za-z][-_])\+?\d(?:[\s().\-\u2013]{0,2}\d){5,}(?!\w)")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}", re.IGNORECASE)
# Each end may be grouped in thousands ("1.000-2.000", "1,000 to 2,000" with an en dash).
_RANGE = re.compile(r"(\d{1,3}(?:[.,]\d{3})?|\d{1,5})\s{0,2}[-\u2013]\s{0,2}(\d{1,3}(?:[.,]\d{3})?|\d{1,5})")
# Words that introduce a phone number: what follows them is one even when it looks like a
# quantity range ("call me at 555-1234"). Vietnamese "số" alone is not one ("số lượng": quantity).
_PHONE_CUES = re.compile(
    r"\b(?:phone|tel|call|ring|whats\s?app|cell|mobile|tel[eé]fono|ll[aá]m(?:a|e|ame)|m[oó]vil|celular|"
    r"s[đd]t|đt|điện thoại|dien thoai|gọi|goi|zalo|liên hệ|lien he)\b\W{0,3}(?:\w+\W{1,3}){0,2}$",
    re.IGNORECASE,
)
# Numbers that name an order, an invoice or a parcel, not a person: blanked like dates.
_REFERENCES = re.compile(
    r"\b(?:order|ref(?:erence)?|invoice|tracking|pedido|factura|referencia|"
    r"mã đơn|ma don|đơn hàng|don hang|mã vận đơn|ma van don|p\.?o\.?|purchase order|"
    r"zip(?: code)?|postal code|postcode|c[óo]digo postal|mã bưu chính|ma buu chinh)"
    r"\.?\s*(?:no\.?|number|n[º°o]\.?|#|:)?\s*#?[\w-]*\d[\w-]*",
    re.IGNORECASE,
)
# Codes read in groups of digits: a parcel's tracking number, a book's ISBN.
_GROUPED_CODES = re.compile(
    r"\b(?:tracking|isbn(?:-1[03])?)\b\W{0,4}(?:no\.?|number|#)?\s*[\dX][\dX\s-]{8,}", re.IGNORECASE
)
# Digits that are not a phone number, blanked out before phone numbers are looked for: links,
# dates and times ("2026-12-02 14:00", "9.00-17.00"), and amounts grouped in thousands
# ("1.000.000 VND", "2,500,000"). Amounts with a currency go through ``money_values`` too, so
# "1 000 000 đ" is an amount; "600 123 456" alone is a (Spanish) phone number.
_NOT_PHONES = re.compile(
    r"https?://\S+"
    r"|\d{4}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?"
    r"|(?<!\d[./-])\b\d{1,2}[./-]\d{1,2}[./-]\d{2,4}\b(?![./-]\d)"
    r"|(?<!\d[.:])\b\d{1,2}[:.h]\d{2}\b(?![.:]\d)"
    r"|(?<!\+)(?<!\d[.,])\b\d{1,3}(?:([.,])\d{3})(?:\1\d{3})+(?![.,]?\d)",
    re.IGNORECASE,
)
MIN_PHONE_DIGITS = 7


@dataclass(frozen=True)
class ContactValue:
    kind: str  # "phone" or "e-mail"
    written: str
    key: str  # digits of a phone number, a lower-case address


def contact_values(text: str) -> list[ContactValue]:
    """The phone numbers and e-mail addresses written in ``text`` (not amounts, dates or times)."""
    found = [ContactValue("e-mail", m.group(0), m.group(0).lower()) for m in _EMAIL.finditer(text)]
    rest = _EMAIL.sub(" ", text)
    for money in money_values(rest):
        rest = rest.replace(money.written, " ")
    rest = _REFERENCES.sub(" ", _NOT_PHONES.sub(" ", _GROUPED_CODES.sub(" ", rest)))
    for match in _PHONE.finditer(rest):
        written = match.group(0).strip()
        digits = re.sub(r"\D", "", written)
        if len(digits) < MIN_PHONE_DIGITS or _quantity_range(written, rest[: match.start()]):
            continue
        found.append(ContactValue("phone", written, digits))
    return found


def _quantity_range(written: str, before: str) -> bool:
    """ "500-1000" is how many, "555-0100" and "call me at 555-1234" whom to call. A quantity
    never starts with a zero, and a range's ends are round and rising."""
    shape = _RANGE.fullmatch(written)
    if shape is None or _PHONE_CUES.search(before):
        return False
    low, high = (int(re.sub(r"\D", "", end)) for end in shape.groups())
    if shape.group(2).startswith("0"):
        return False
    return high > low and low % 5 == 0 and high % 5 == 0


def keys_of(texts: Iterable[str]) -> set[str]:
    """The comparison keys of every contact detail in ``texts`` (a tool's fields, the customer's words)."""
    return {value.key for text in texts for value in contact_values(text)}


def known(value: ContactValue, keys: set[str]) -> bool:
    if value.kind == "e-mail":
        return value.key in keys
    # The same number with or without its country code or trunk zero: "+84 903 123 456" is
    # "0903 123 456", "+1 555 0100 123" is "555 0100 123".
    mine = value.key.lstrip("0")
    for key in keys:
        other = key.lstrip("0")
        if mine == other:
            return True
        if min(len(mine), len(other)) >= MIN_PHONE_DIGITS and (other.endswith(mine) or mine.endswith(other)):
            return True
    return False
