"""What a loyalty tool result proves, for the verification gate.

The server names every money field with a ``_vnd`` suffix (``min_spend_vnd``, ``value_vnd``...),
so those values are the amounts a reply may quote ("spend 200.000đ"), as are amounts written in
returned text (a rule named "1 điểm / 10.000đ"); any other amount in a reply is refused by the
price rule, as in every pack. Ids (``id``/``*_id``) are citable references, as
for any MCP tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from frontdesk.capabilities.mcp import default_evidence
from frontdesk.capabilities.tools import ToolEvidence
from frontdesk.verification.money import money_values

MONEY_SUFFIX = "_vnd"
MAX_AMOUNTS = 500  # a long report lists many; beyond that the model saw a truncated result anyway
_MAX_DEPTH = 8


def loyalty_evidence(tool: str, arguments: Mapping[str, Any], output: Any) -> ToolEvidence:
    base = default_evidence(tool, arguments, output)
    by_reference: dict[str, list[str]] = {}
    amounts = _amounts(output, by_reference, 0)[:MAX_AMOUNTS]
    return ToolEvidence(
        references=base.references,
        contacts=base.contacts,
        prices=tuple(dict.fromkeys(amounts)),
        prices_by_reference={ref: tuple(dict.fromkeys(found)) for ref, found in by_reference.items() if found},
    )


def _amounts(value: Any, by_reference: dict[str, list[str]], depth: int) -> list[str]:
    """The amounts under ``value``; each object with an ``id`` also owns the amounts under it (a
    reply that declares it presents rule X may quote X's amounts, and its campaign's)."""
    if depth > _MAX_DEPTH:
        return []
    if isinstance(value, str):
        # An amount written in returned text ("Base: 1 điểm / 10.000đ").
        return [value] if money_values(value) else []
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and key.endswith(MONEY_SUFFIX) and _is_number(item):
                found.append(f"{item} VND")
            else:
                found.extend(_amounts(item, by_reference, depth + 1))
        entity = value.get("id")
        if isinstance(entity, str):
            by_reference.setdefault(entity, []).extend(found)
    elif isinstance(value, list):
        for item in value[:MAX_AMOUNTS]:
            found.extend(_amounts(item, by_reference, depth + 1))
    return found


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
