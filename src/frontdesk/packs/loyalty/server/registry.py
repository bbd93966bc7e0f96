"""Every tool of the service, in one explicit list, and ``run_tool``: one transaction per call, with
idempotency keys honoured (a repeated key returns the stored first result and changes nothing)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel

from frontdesk.packs.loyalty.server import (
    campaigns,
    members,
    points,
    reports,
    rewards,
    rule_checks,
    rules,
    segments,
    tiers,
    vouchers,
)
from frontdesk.packs.loyalty.server._tool import JsonObject, ToolSpec
from frontdesk.packs.loyalty.server.db import Database, dumps
from frontdesk.packs.loyalty.server.errors import ConflictError

DOMAINS = ("campaign", "rule", "reward", "member", "tier", "voucher", "segment", "report")

TOOLS: tuple[ToolSpec[Any], ...] = (
    *campaigns.TOOLS,
    *rules.TOOLS,
    *rule_checks.TOOLS,
    *rewards.TOOLS,
    *members.TOOLS,
    *points.TOOLS,
    *tiers.TOOLS,
    *vouchers.TOOLS,
    *segments.TOOLS,
    *reports.TOOLS,
)
TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in TOOLS)

if len(set(TOOL_NAMES)) != len(TOOL_NAMES) or any(spec.domain not in DOMAINS for spec in TOOLS):
    raise RuntimeError("tool names must be unique and start with a known domain")  # pragma: no cover


def tool_names() -> list[str]:
    """The names of every tool the server registers (for contract tests elsewhere)."""
    return list(TOOL_NAMES)


def run_tool(db: Database, spec: ToolSpec[Any], params: BaseModel) -> JsonObject:
    """Run one tool call in its own transaction, replaying the stored result for a known idempotency key."""
    key: str | None = getattr(params, "idempotency_key", None)
    with db.transaction():
        if key is None:
            return _plain(spec.handler(db, params))
        request = hashlib.sha256(params.model_dump_json(exclude={"idempotency_key"}).encode()).hexdigest()
        seen = db.row("SELECT tool, request_hash, result FROM idempotency_keys WHERE key = ?", (key,))
        if seen is not None:
            if seen["tool"] != spec.name or seen["request_hash"] != request:
                raise ConflictError(
                    f"idempotency_key {key!r} was already used for a different {seen['tool']} call; use a new key"
                )
            stored: JsonObject = json.loads(seen["result"])
            return stored
        result = _plain(spec.handler(db, params))
        db.insert(
            "idempotency_keys",
            {
                "key": key,
                "tool": spec.name,
                "request_hash": request,
                "result": dumps(result),
                "created_at": db.now_iso(),
            },
        )
        return result


def _plain(result: JsonObject) -> JsonObject:
    """The result as plain JSON values, so a replayed result is identical to the first one."""
    plain: JsonObject = json.loads(dumps(result))
    return plain
