"""Validation errors as an owner reads them: ``price.tiers.0.amount: at most 0 decimals``, without
pydantic's internal names for union branches and validators."""

from __future__ import annotations

from pydantic import ValidationError

# The tags ``ItemFields.price`` uses to pick its branch; never a field name an owner wrote.
_BRANCHES = frozenset({"amounts", "on_request"})


def _where(loc: tuple[int | str, ...]) -> str:
    parts = [str(p) for p in loc if not (isinstance(p, str) and ("[" in p or p in _BRANCHES))]
    return ".".join(parts)


def problems(exc: ValidationError) -> list[str]:
    found: list[str] = []
    for error in exc.errors(include_url=False, include_input=False):
        message = str(error["msg"]).removeprefix("Value error, ")
        where = _where(tuple(error["loc"]))
        found.append(f"{where}: {message}" if where else message)
    return list(dict.fromkeys(found))
