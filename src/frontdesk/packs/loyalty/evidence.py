"""What a loyalty tool result proves, for the verification gate.

The server names every money field with a ``_vnd`` suffix (``min_spend_vnd``, ``value_vnd``...),
so those values are the amounts a reply may quote ("spend 200.000đ") — any other amount in a reply
is refused by the price rule, as in every pack. Ids (``id``/``*_id``) are citable references, as
for any MCP tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from frontdesk.capabilities.mcp import default_evidence
from frontdesk.capabilities.tools import ToolEvidence

MONEY_SUFFIX = "_vnd"
MAX_AMOUNTS = 500  # a long report lists many; beyond that the model saw a truncated result anyway
_MAX_DEPTH = 8


def loyalty_evidence(tool: str, arguments: Mapping[str, Any], output: Any) -> ToolEvidence:
    base = default_evidence(tool, arguments, output)
    amounts: list[str] = []
    _collect_amounts(output, amounts, 0)
    return ToolEvidence(references=base.references, prices=tuple(dict.fromkeys(amounts)))


def _collect_amounts(value: Any, found: list[str], depth: int) -> None:
    if depth > _MAX_DEPTH or len(found) >= MAX_AMOUNTS:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and key.endswith(MONEY_SUFFIX) and _is_number(item):
                found.append(f"{item} VND")
            else:
                _collect_amounts(item, found, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _collect_amounts(item, found, depth + 1)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
