"""The JSON body of every HTTP error, and the OpenAPI ``responses`` entries that document it.

Every error answer is ``{"error": {"code", "message", "details"}}``: ``code`` is the error's kind
(``payload_invalid``, ``unauthorized``...), ``message`` says what went wrong in plain words, and
``details`` is null or, for invalid input, a list of ``{"field", "problem"}``. The app's exception
handlers build it (``error_body``); routes declare the statuses they can answer with
``error_responses``, so the OpenAPI document says what a client will really get: JSON, whatever
the route's own media type (an HTML page, a text/plain handshake).

Schemas here are inlined (``json_schema``): a route's declarations cannot add component schemas,
and ``#/$defs/...`` inside an OpenAPI document points at the document's root.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict


class ErrorDetail(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    code: str
    message: str
    details: Any  # always present: null, or a list of {"field", "problem"}


class ErrorBody(BaseModel):
    """``{"error": {"code", "message", "details"}}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    error: ErrorDetail


# The database out of reach for a moment (app.py answers 503 with Retry-After); every route that
# reads or writes it can answer this.
UNAVAILABLE = {503: "the database is briefly out of reach: try again after Retry-After seconds"}


def error_body(code: str, message: str, details: object = None) -> dict[str, object]:
    return {"error": {"code": code, "message": message, "details": details}}


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema (as validated: aliases, not field names) with ``$defs`` inlined."""
    schema = model.model_json_schema(by_alias=True)
    defs = schema.pop("$defs", {})
    return dict(_inline(schema, defs, ()))


def _inline(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            raise ValueError(f"{name} is recursive: its schema cannot be inlined")
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return {**_inline(defs[name], defs, (*seen, name)), **_inline(rest, defs, seen)}
    return {key: _inline(value, defs, seen) for key, value in node.items()}


ERROR_SCHEMA = json_schema(ErrorBody)


def error_responses(statuses: Mapping[int, str]) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries for these error statuses: each its description and the JSON error body."""
    return {
        status: {"description": description, "content": {"application/json": {"schema": ERROR_SCHEMA}}}
        for status, description in statuses.items()
    }
