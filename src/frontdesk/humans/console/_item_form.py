"""The catalog item form: an item as form values and back as ``ItemFields``.

Field names follow the item's own structure: ``name.<language>``, ``price.currency``,
``price.unit.<language>``, ``tiers.<row>.quantity|amount|label.<language>``, ``synonyms.<language>``
(comma-separated). A price is either quoted on request or up to ``MAX_TIERS`` rows; rows left
empty are ignored, and a problem in a row names the row as the owner sees it (``price row 3``).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from frontdesk.business import ON_REQUEST, ItemFields, Price
from frontdesk.business.catalog import SLUG_PATTERN
from frontdesk.humans.console._forms import (
    FormProblems,
    Values,
    comma_list,
    grouped,
    nul_problems,
    texts,
    validation_lines,
)

TIER_ROWS = 6  # rows a form offers at least: enough for a price list, few enough to read
MAX_TIERS = 12  # ``Price.tiers`` holds at most this many
FIELDS = (
    "id",
    "category",
    "name",
    "summary",
    "description",
    "price",
    "turnaround_days",
    "min_quantity",
    "synonyms",
    "active",
)
_SLUG = re.compile(SLUG_PATTERN)
_TIER_PROBLEM = re.compile(r"^price\.tiers\.(\d+)(?:\.(\w+))?")


def item_values(item: ItemFields | None, currency: str = "USD") -> Values:
    """The item as its form shows it; a new item's form starts active, priced in ``currency``."""
    if item is None:
        return {"price.kind": "amounts", "price.currency": currency, "min_quantity": "1", "active": "true"}
    values: Values = {
        "id": item.id,
        "category": item.category,
        "turnaround_days": "" if item.turnaround_days is None else str(item.turnaround_days),
        "min_quantity": str(item.min_quantity),
        "active": "true" if item.active else "",
    }
    for field in ("name", "summary", "description"):
        for language, text in getattr(item, field).items():
            values[f"{field}.{language}"] = text
    for language, words in item.synonyms.items():
        values[f"synonyms.{language}"] = ", ".join(words)
    if isinstance(item.price, Price):
        values["price.kind"] = "amounts"
        values["price.currency"] = item.price.currency
        for language, text in item.price.unit.items():
            values[f"price.unit.{language}"] = text
        for row, tier in enumerate(item.price.tiers):
            # The amount as stored (``str(Decimal)``), so an unchanged form saves nothing.
            values[f"tiers.{row}.quantity"] = str(tier.quantity)
            values[f"tiers.{row}.amount"] = str(tier.amount)
            for language, text in tier.label.items():
                values[f"tiers.{row}.label.{language}"] = text
    else:
        values["price.kind"] = ON_REQUEST
        values["price.currency"] = currency
    return values


def tier_rows(values: Values) -> int:
    """How many price rows to show: every filled one and at least one empty, ``TIER_ROWS`` at least."""
    filled = [row for row in range(MAX_TIERS) if any(k.startswith(f"tiers.{row}.") and v for k, v in values.items())]
    return min(MAX_TIERS, max(TIER_ROWS, (filled[-1] + 2) if filled else 0))


def item_from(values: Values, languages: list[str], item_id: str, *, creating: bool) -> ItemFields:
    """The posted form as the item's fields (``item_id``: the form's id when ``creating``, else
    the page's, which never changes); else ``FormProblems``."""
    lines = nul_problems(values)
    price, rows = _price(values, languages)
    data: dict[str, Any] = {
        "id": item_id,
        "category": values.get("category", ""),
        "name": texts(values, "name", languages),
        "summary": texts(values, "summary", languages),
        "description": texts(values, "description", languages),
        "price": price,
        "turnaround_days": values.get("turnaround_days") or None,
        "min_quantity": values.get("min_quantity") or 1,
        "synonyms": {lang: comma_list(values.get(f"synonyms.{lang}", "")) for lang in languages},
        "active": values.get("active") == "true",
    }
    fields = None
    try:
        fields = ItemFields.model_validate(data)
    except ValidationError as exc:
        lines += [_row_named(line, rows) for line in validation_lines(exc)]
    else:
        lines += fields.language_problems(languages, languages[0])
    if creating and (not _SLUG.fullmatch(item_id) or len(item_id) > 60):
        lines = [line for line in lines if not line.startswith("id:")]
        lines.append("id: use lowercase letters, digits and single dashes, at most 60 characters (business-cards)")
    if isinstance(price, dict) and not rows:
        lines = [line for line in lines if not line.startswith("price.tiers:")]
        lines.append("price: give at least one price row, or choose quoted on request")
    if fields is None or lines:
        raise FormProblems(grouped(lines, FIELDS))
    return fields


def _price(values: Values, languages: list[str]) -> tuple[dict[str, Any] | str, list[int]]:
    """The price as ``ItemFields`` reads it, and the form row of each tier it lists."""
    if values.get("price.kind") == ON_REQUEST:
        return ON_REQUEST, []
    tiers: list[dict[str, Any]] = []
    rows: list[int] = []
    for row in range(MAX_TIERS):
        quantity = values.get(f"tiers.{row}.quantity", "")
        amount = values.get(f"tiers.{row}.amount", "")
        label = texts(values, f"tiers.{row}.label", languages)
        if not (quantity or amount or label):
            continue
        tiers.append({"amount": amount, "label": label, **({"quantity": quantity} if quantity else {})})
        rows.append(row)
    price = {
        "currency": values.get("price.currency", ""),
        "unit": texts(values, "price.unit", languages),
        "tiers": tiers,
    }
    return price, rows


def _row_named(line: str, rows: list[int]) -> str:
    """``price.tiers.1.amount: ...`` as ``price row 3 amount: ...``: the row the owner filled in."""
    match = _TIER_PROBLEM.match(line)
    if match is None or int(match[1]) >= len(rows):
        return line
    named = f"price row {rows[int(match[1])] + 1}" + (f" {match[2]}" if match[2] else "")
    return named + line[match.end() :]
