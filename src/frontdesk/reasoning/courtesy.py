"""The pack's courtesy reply after an action, filled with what the action's tool really returned.

When the model's own reply after a hand-over or a saved request is refused twice (a 1.5B model
wrote "you can call me or send an email to [email address]" after handing over), the customer
still gets a reply that says what happens next, with the real reference and contact, in their
language: the pack's template, not the generic hold message.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

__all__ = ["courtesy_reply"]


def courtesy_reply(templates: Mapping[str, str], done: Mapping[str, Mapping[str, Any]]) -> str | None:
    """``templates``: event -> a ``str.format`` template, in the customer's language; ``done``:
    event -> the arguments and result of the call that did it. The filled templates of what was
    done, in the templates' order; None when nothing was done that has one, or when a template
    names a value the call did not give (a sentence with a hole is worse than the hold message)."""
    pieces: list[str] = []
    for event, template in templates.items():
        if event not in done:
            continue
        values = {k: v for k, v in done[event].items() if isinstance(v, str | int | float) and str(v).strip()}
        contact = values.get("phone") or values.get("email")
        if contact:
            values["contact"] = contact
        fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
        if not fields <= values.keys():
            return None
        pieces.append(template.format_map(values))
    return " ".join(pieces) or None
