"""A pydantic JSON schema rewritten to what a model needs to read, with the same rules.

Pydantic's schema of a tagged union is written for OpenAPI readers: every member a ``$defs``
entry with its docstring, a ``const`` repeated as ``default`` and ``type``, a discriminator
mapping beside a ``oneOf`` that lists the same members again. The ``reply`` tool's schema was
990 o200k tokens that way, on every model request of every turn. The guidance (what each claim
means) is in the playbook once; what stays here is every rule the server checks: types, required
fields, lengths, counts, no extra keys.

Rewrites:

- ``$ref`` is inlined (no recursion in these models);
- ``title``, ``description``, ``default`` and ``format`` go (annotations, not rules: a JSON
  schema validator does not assert ``format`` unless asked to);
- a ``oneOf`` with a discriminator becomes ``anyOf`` (its members differ in the tag's ``const``,
  so at most one can match either way), and what every member shares moves up to the union
  once: ``type: object`` and the tag as a required field (pydantic requires the tag when it
  validates a tagged union; a default does not stand in for a missing one);
- ``{"const": "x", "type": "string"}`` becomes ``{"const": "x"}``;
- ``anyOf: [{"type": T, ...}, {"type": "null"}]`` becomes ``{"type": [T, "null"], ...}``;
- union members that differ only in their tag become one member with an ``enum`` of tags.

Three rules are left to the server, which validates every call with the pydantic model and tells
the model what was wrong so that it can try again: a union member's ``additionalProperties:
false`` (seven of them in ``reply``, 40 tokens: a block or claim with a key of its own is still
refused; the top level keeps its own), a URL's shape (``format``), and pydantic's own validators
(a text that is only whitespace). Apart from those, what the schema accepts the server accepts,
and the other way round (``tests/reasoning/test_reply_schema.py`` holds the two to it on
generated payloads).
"""

from __future__ import annotations

import json
from typing import Any

_ANNOTATIONS = frozenset({"title", "description", "default", "format"})


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    defs = schema.get("$defs", {})
    lean = _rewrite({k: v for k, v in schema.items() if k != "$defs"}, defs)
    assert isinstance(lean, dict)
    return lean


def _rewrite(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_rewrite(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _rewrite(defs[node["$ref"].removeprefix("#/$defs/")], defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _ANNOTATIONS or key == "discriminator":
            continue
        if key == "properties":
            out[key] = {name: _rewrite(sub, defs) for name, sub in value.items()}
        else:
            out[key] = _rewrite(value, defs)
    if "const" in out:
        out.pop("type", None)
    if "format" in node:  # pydantic's length bound of a URL is part of its format, checked by the server
        out.pop("minLength", None)
    tag = node.get("discriminator", {}).get("propertyName") if isinstance(node.get("discriminator"), dict) else None
    if tag is not None and "oneOf" in out:
        members = [_member(member, tag) for member in out.pop("oneOf")]
        out = {"type": "object", "required": [tag], **out, "anyOf": _merge_tag_only(members, tag)}
    return nullable_as_type(out)


def _member(member: dict[str, Any], tag: str) -> dict[str, Any]:
    """A union member without what the union now says once (its ``type``, its tag as required)
    or leaves to the server (``additionalProperties``)."""
    lean = {k: v for k, v in member.items() if k not in ("type", "additionalProperties", "required")}
    required = [name for name in member.get("required", []) if name != tag]
    return {**lean, "required": required} if required else lean


def _merge_tag_only(members: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    """Members alike but for their tag's ``const`` become one member whose tag is an ``enum``."""
    merged: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for member in members:
        shape = json.dumps(_without_tag(member, tag), sort_keys=True)
        tag_value = member.get("properties", {}).get(tag, {}).get("const")
        if tag_value is None:  # not a tagged member after all: keep it as it is
            shape = f"#{len(order)}"
        if shape not in merged:
            merged[shape] = member
            order.append(shape)
            continue
        first = merged[shape]
        tags = first["properties"][tag]
        values = tags["enum"] if "enum" in tags else [tags["const"]]
        first["properties"] = {**first["properties"], tag: {"enum": [*values, tag_value]}}
    return [merged[shape] for shape in order]


def _without_tag(member: dict[str, Any], tag: str) -> dict[str, Any]:
    properties = {k: v for k, v in member.get("properties", {}).items() if k != tag}
    return {**member, "properties": properties}


def nullable_as_type(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [{"type": T, ...}, {"type": "null"}]`` as ``{"type": [T, "null"], ...}``."""
    options = node.get("anyOf")
    if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return node
    other = next(o for o in options if o != {"type": "null"})
    if not isinstance(other.get("type"), str):
        return node
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    return {**rest, **other, "type": [other["type"], "null"]}
