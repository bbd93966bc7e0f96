"""Masking a customer's phone numbers and e-mail addresses in a scenario saved from a real
conversation, so the file can leave the tenant without them.

Each detail gets a stand-in that is still a detail of its kind (the router offers lead capture
for a message with a phone number in it, and the gate proves a phone repeated back to the
customer), and the same number always gets the same stand-in, whatever way it was written:
"0903 123 456" in the message and "+84903123456" in the tool's arguments both become
"+1 202 555 0101". The stand-ins are from the range kept for fiction (555-0100 to 555-0199) and
the domain kept for examples.

What is masked is what the customer gave (their messages, the phone and e-mail saved on their
contact). The business's own number and address are not personal: they stay, so a reply that
gives them is still proven by the business's data in the same file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from frontdesk.verification.contacts import MIN_PHONE_DIGITS, ContactValue, contact_values, known

STAND_IN_PHONE = "+1 202 555 01"  # then two digits: 555-0100 .. 555-0199
STAND_IN_PHONES = 100
_ROUND = re.compile(r"[1-9]\d*000")
# Digits with the separators people put in phone numbers, whatever the reading of them.
_DIGIT_RUN = re.compile(r"(?<![\w(])\(?\+?\(?\d(?:[\s().\-/]{0,3}\d){6,}(?![\w])")


class Masker:
    def __init__(self, customer_texts: Iterable[str]) -> None:
        self._phones: list[tuple[str, str]] = []  # (digits, stand-in)
        self._emails: dict[str, str] = {}
        for text in customer_texts:
            for value in contact_values(text):
                self._learn(value)

    @property
    def masked(self) -> int:
        """How many distinct details have a stand-in."""
        return len(self._phones) + len(self._emails)

    def _learn(self, value: ContactValue) -> None:
        if value.kind == "e-mail":
            self._emails.setdefault(value.key, f"customer{len(self._emails) + 1}@example.com")
        elif _ROUND.fullmatch(value.written):
            return  # "1000000 stickers": how many, not whom to call
        elif self._phone_stand_in(value) is None:
            number = len(self._phones) % STAND_IN_PHONES
            self._phones.append((value.key, f"{STAND_IN_PHONE}{number:02d}"))

    def _phone_stand_in(self, value: ContactValue) -> str | None:
        for digits, stand_in in self._phones:
            if known(value, {digits}):
                return stand_in
        return None

    def text(self, text: str) -> str:
        for value in contact_values(text):
            stand_in = self._emails.get(value.key) if value.kind == "e-mail" else self._phone_stand_in(value)
            if stand_in is not None:
                text = text.replace(value.written, stand_in)
        if not self._phones:
            return text
        # A known number written in a way the reading of contact details takes for something else
        # ("+84 903.123.456" reads as an amount, "0903/123/456" as a date): still the customer's.
        return _DIGIT_RUN.sub(self._known_run, text)

    def _known_run(self, match: re.Match[str]) -> str:
        digits = re.sub(r"\D", "", match.group(0))
        if len(digits) < MIN_PHONE_DIGITS:
            return match.group(0)
        stand_in = self._phone_stand_in(ContactValue("phone", match.group(0), digits))
        return stand_in if stand_in is not None and not match.group(0).startswith(STAND_IN_PHONE) else match.group(0)

    def value(self, value: Any) -> Any:
        """``value`` with every string in it masked (mapping keys are left alone)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value
