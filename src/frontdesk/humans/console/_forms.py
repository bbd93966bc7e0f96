"""Reading the business forms (profile, catalog item, photo caption): the text fields as posted,
text in each of the tenant's languages, comma lists, and the problems found, grouped by the field
they belong to so that each is shown next to it.

Values stay text until the business models validate them (``BusinessProfile``, ``ItemFields``):
one set of rules for the console, the command line and imports, with their owner-readable
messages (``business._problems``). Also the small pieces the business pages share: the store,
the operator as its actor, one step up or down a list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from fastapi import Request
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.datastructures import FormData

from frontdesk.business import Actor, BusinessStore
from frontdesk.business._problems import problems
from frontdesk.errors import PayloadError
from frontdesk.humans.console._configure import media_of
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console.auth import Principal

Values = dict[str, str]


class FormProblems(Exception):
    """A form that is not saved: the problems by field name (``""``: the form as a whole)."""

    def __init__(self, by_field: Mapping[str, Sequence[str]]) -> None:
        super().__init__("; ".join(line for lines in by_field.values() for line in lines))
        self.by_field = {field: list(lines) for field, lines in by_field.items()}


def form_values(form: FormData) -> Values:
    """The text fields of a form (the last value of a repeated name), without the CSRF token.
    A browser posts a textarea's line breaks as CRLF: they become LF, as stored, so a form saved
    unchanged compares equal to what it showed."""
    values: Values = {}
    for name, value in form.multi_items():
        if isinstance(value, str) and name != "csrf":
            values[name] = value.replace("\r\n", "\n").strip()
    return values


def typed(value: str, problem: str) -> str:
    """A textarea's text as stored (LF line breaks, no edge blanks); ``ValueError(problem)`` when
    nothing is left of it or it holds a NUL byte."""
    value = value.replace("\r\n", "\n").strip()
    if not value or "\x00" in value:
        raise ValueError(problem)
    return value


def form_list(form: FormData, name: str) -> list[str]:
    """Every text value posted under ``name`` (checkboxes that share a name)."""
    return [v.strip() for v in form.getlist(name) if isinstance(v, str) and v.strip()]


def texts(values: Mapping[str, str], name: str, languages: Iterable[str]) -> dict[str, str]:
    """``name.<language>`` for each of the tenant's languages, left out where empty."""
    found = {language: values.get(f"{name}.{language}", "") for language in languages}
    return {language: text for language, text in found.items() if text}


def comma_list(value: str) -> list[str]:
    """``"name card, business card"`` as ``["name card", "business card"]``."""
    return [part.strip() for part in value.split(",") if part.strip()]


def nul_problems(values: Mapping[str, str]) -> list[str]:
    """NUL is never typed in a browser, and PostgreSQL refuses it in text and JSON: the field
    is refused here rather than failing the write."""
    return [f"{name}: must not contain NUL characters" for name, value in values.items() if "\x00" in value]


def grouped(lines: Iterable[str], fields: Iterable[str]) -> dict[str, list[str]]:
    """Each problem under the longest field name it starts with (``hours.mon.0: ...`` under
    ``hours.mon``, ``price row 2 amount: ...`` under ``price``), else under ``""``."""
    names = sorted(fields, key=len, reverse=True)
    by_field: dict[str, list[str]] = {}
    for line in lines:
        field = next((n for n in names if line.startswith((f"{n}.", f"{n}:", f"{n} "))), "")
        by_field.setdefault(field, []).append(line)
    return by_field


def validation_lines(exc: ValidationError) -> list[str]:
    """A model's validation errors as an owner reads them (``price.currency: currency 'XYZ' ...``)."""
    return problems(exc)


def refusal_lines(exc: PayloadError) -> list[str]:
    """A ``BusinessStore`` refusal as problem lines (its ``details`` when it lists them)."""
    details = exc.details
    if isinstance(details, list) and details and all(isinstance(d, str) for d in details):
        return list(details)
    return [exc.message]


class MoveForm(BaseModel):
    """One step up or down a list (catalog items, an item's photos)."""

    model_config = ConfigDict(frozen=True)
    direction: Literal["up", "down"]


def moved(ids: Sequence[str], which: str, direction: str) -> list[str] | None:
    """``ids`` with ``which`` one step up or down; None when it is at that end already."""
    order = list(ids)
    index = order.index(which)
    other = index - 1 if direction == "up" else index + 1
    if not 0 <= other < len(order):
        return None
    order[index], order[other] = order[other], order[index]
    return order


def actor_of(me: Principal) -> Actor:
    """The operator as ``BusinessStore`` records them in the audit trail."""
    return Actor(operator_id=me.operator_id, via="console")


def business_store(deps: ConsoleDeps, request: Request) -> BusinessStore:
    """The tenant data store, with the runtime's media store (photo uploads)."""
    return BusinessStore(deps.db, deps.clock, media_of(deps, request))
