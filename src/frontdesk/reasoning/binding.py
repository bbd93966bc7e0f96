"""Arguments bound to the conversation: a contact field takes only what the customer gave, an item
field only the business's own ids.

A tool names its bound fields (``Tool.binds``: field -> ``phone``, ``email`` or ``item``). Each
turn, ``Bindings`` holds the values the conversation allows: the phone numbers and e-mail
addresses the customer wrote (in this turn or the history the model reads) or has saved, and the
business's item ids, narrowed to the ones the customer's message names when it names any.

Two uses. A client that constrains its output (``local:``) generates under ``narrowed``: each
bound field is an enum of its values, a contact the customer gave is required, and a contact field
with nothing to choose from is left out, so a 1.5B model can neither drop the phone the customer
just wrote nor make one up (it did both: ``capture_lead`` without the phone, twice). For every
model, ``unknown_contacts`` refuses a call whose contact the customer never gave, before it runs:
a request saved under an invented phone number reaches nobody.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from frontdesk.capabilities.search import fold
from frontdesk.capabilities.tools import BindKind
from frontdesk.verification.contacts import ContactValue, contact_values, known


@dataclass(frozen=True)
class Bindings:
    """What bound fields may hold this turn. An empty ``items`` leaves item fields free (a pack
    without a catalog of ids)."""

    phones: tuple[str, ...] = ()
    emails: tuple[str, ...] = ()
    items: tuple[str, ...] = ()

    @classmethod
    def of(cls, customer_texts: Iterable[str], item_words: Mapping[str, Sequence[str]], message: str) -> Bindings:
        """``customer_texts``: what the customer wrote and their saved phone and e-mail;
        ``item_words``: each item id's names; ``message``: this turn's text (the items it names)."""
        phones: list[ContactValue] = []
        emails: list[ContactValue] = []
        for text in customer_texts:
            for value in contact_values(text):
                found = phones if value.kind == "phone" else emails
                if not known(value, {v.key for v in found}):
                    found.append(value)
        return cls(
            tuple(_whole(v.written) for v in phones),
            tuple(v.written.lower() for v in emails),
            tuple(named_items(message, item_words) or item_words),
        )

    def choices(self, kind: BindKind) -> tuple[str, ...]:
        return {"phone": self.phones, "email": self.emails, "item": self.items}[kind]


def _whole(phone: str) -> str:
    """A number as the customer wrote it: "(917) 555-0142" is read from its first digit."""
    return f"({phone}" if ")" in phone and "(" not in phone else phone


def named_items(message: str, item_words: Mapping[str, Sequence[str]]) -> list[str]:
    """The item ids whose names (or ids) the message contains, plural or not."""
    words = f" {' '.join(re.findall(r'[a-z0-9]+', fold(message)))} "
    named = []
    for item, names in item_words.items():
        for name in (item.replace("-", " "), *names):
            folded = " ".join(re.findall(r"[a-z0-9]+", fold(name)))
            if folded and any(f" {folded}{end} " in words for end in ("", "s", "es")):
                named.append(item)
                break
    return named


def narrowed(schema: Mapping[str, Any], binds: Mapping[str, BindKind], bindings: Bindings) -> dict[str, Any]:
    """``schema`` with each bound field held to its values (see the module's docstring)."""
    result = copy.deepcopy(dict(schema))
    properties: dict[str, Any] = result.get("properties", {})
    required = list(result.get("required", []))
    for field, kind in binds.items():
        if field not in properties:
            continue
        values = bindings.choices(kind)
        if kind == "item":
            if values:
                properties[field] = {**_without_type(properties[field]), "enum": list(values)}
            continue
        if not values:  # nothing the customer gave: the field cannot be filled truthfully
            properties.pop(field)
            required = [name for name in required if name != field]
            continue
        properties[field] = {**_without_type(properties[field]), "enum": list(values)}
        if field not in required:
            required.append(field)  # given by the customer: the call carries it
    if required:
        result["required"] = required
    return result


def _without_type(field_schema: Mapping[str, Any]) -> dict[str, Any]:
    """A field's description and the like, without what an enum of strings replaces (a
    nullable type, length bounds, a pattern)."""
    replaced = {"type", "anyOf", "maxLength", "minLength", "pattern", "format", "default"}
    return {k: v for k, v in field_schema.items() if k not in replaced}


def unknown_contacts(args: Mapping[str, Any], binds: Mapping[str, BindKind], bindings: Bindings) -> list[str]:
    """The contact arguments of a call that the customer never gave (any model, before it runs)."""
    unknown = []
    for field, kind in binds.items():
        value = args.get(field)
        if kind == "item" or not isinstance(value, str) or not value.strip():
            continue
        allowed = {v.key for text in bindings.choices(kind) for v in contact_values(text)}
        written = contact_values(value)
        if not written or not all(known(v, allowed) for v in written):
            unknown.append(f"{field} {value!r}")
    return unknown
