"""What a tool is here (``ToolSpec``), the decorator each domain module registers its tools with,
and the helpers they share (paging, lookups that fail with ``NotFoundError``, JSON columns)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from frontdesk.packs.loyalty.server.db import Database, Row, fold
from frontdesk.packs.loyalty.server.errors import NotFoundError
from frontdesk.packs.loyalty.server.models import Page

JsonObject = dict[str, Any]
P = TypeVar("P", bound=BaseModel)
Handler = Callable[[Database, P], JsonObject]


@dataclass(frozen=True)
class ToolSpec(Generic[P]):
    """One tool: its name (the handler's name), one-sentence description (its docstring), input model,
    handler, and the hints published as MCP tool annotations."""

    name: str
    description: str
    input_model: type[P]
    handler: Handler[P]
    read_only: bool
    destructive: bool

    @property
    def domain(self) -> str:
        return self.name.split("_", 1)[0]


class Registrar:
    """Collects a module's tools: ``tool = Registrar()``, then ``@tool(InputModel)`` on each handler."""

    def __init__(self) -> None:
        self.tools: list[ToolSpec[Any]] = []

    def __call__(
        self, model: type[P], *, read_only: bool = False, destructive: bool = False
    ) -> Callable[[Handler[P]], Handler[P]]:
        def register(handler: Handler[P]) -> Handler[P]:
            description = inspect.getdoc(handler)
            if not description:
                raise TypeError(f"tool {handler!r} needs a docstring: it is the tool's description")
            self.tools.append(ToolSpec(handler.__name__, description, model, handler, read_only, destructive))
            return handler

        return register


def require(db: Database, table: str, kind: str, key: str, column: str = "id") -> Row:
    found = db.row(f"SELECT * FROM {table} WHERE {column} = ?", (key,))
    if found is None:
        raise NotFoundError(kind, key)
    return found


def paged(db: Database, sql: str, params: Sequence[object], page: Page, order: str) -> JsonObject:
    """Run ``sql`` (a SELECT) with paging; the result carries the total count."""
    total = db.scalar(f"SELECT COUNT(*) FROM ({sql})", params)
    rows = db.rows(f"{sql} ORDER BY {order} LIMIT ? OFFSET ?", [*params, page.limit, page.offset])
    return {"items": rows, "total": total, "limit": page.limit, "offset": page.offset}


def loads(row: Row, *columns: str) -> Row:
    """Decode the JSON text columns of a row in place (and return it)."""
    for column in columns:
        if row.get(column) is not None:
            row[column] = json.loads(row[column])
    return row


def where(conditions: list[tuple[str, object]], *fixed: str) -> tuple[str, list[object]]:
    """``WHERE a AND b`` from fixed clauses, then (clause, parameter) pairs whose parameter is not None."""
    used = [(clause, value) for clause, value in conditions if value is not None]
    clauses = [*fixed, *(clause for clause, _ in used)]
    if not clauses:
        return "", []
    return " WHERE " + " AND ".join(clauses), [value for _, value in used]


def contains(query: str) -> str:
    """A LIKE pattern for ``fold(column) LIKE ?``: the folded words anywhere."""
    return "%" + fold(query).replace("%", "").replace("_", "") + "%"
