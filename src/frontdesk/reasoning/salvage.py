"""Recovering a reply the model wrote as prose or near-JSON instead of calling ``reply``."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from frontdesk.output.blocks import MAX_BLOCKS, MAX_IMAGES, Block, ReplyPayload, text_blocks

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)
_TEXT_FIELD = re.compile(r'"text"\s*:\s*"((?:[^"\\]|\\.)*)"')


def salvage_reply(raw: str) -> list[Block] | None:
    """A valid payload embedded in the text wins; then quoted ``"text"`` fields of broken JSON;
    then the prose itself. None when nothing readable is left."""
    candidate = _FENCE.sub("", raw.strip()).strip()
    if not candidate:
        return None
    parsed = _as_payload(candidate)
    if parsed is not None:
        return parsed
    texts = [t for t in (_unescape(t) for t in _TEXT_FIELD.findall(candidate)) if t.strip()]
    if texts and candidate.startswith(("{", "[")):
        return text_blocks("\n\n".join(texts))
    if _looks_like_data(candidate):
        return None  # broken JSON with nothing quotable: no customer should read it
    return text_blocks(candidate) or None


def _looks_like_data(candidate: str) -> bool:
    """JSON-ish text (braces and quoted keys), as opposed to prose that happens to start with a
    bracket, such as a markdown link."""
    return candidate.startswith("{") or (candidate.startswith("[") and candidate.lstrip("[ \n").startswith(("{", '"')))


def _as_payload(candidate: str) -> list[Block] | None:
    start, end = candidate.find("{"), candidate.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data: Any = json.loads(candidate[start : end + 1])
    except ValueError:
        return None
    if isinstance(data, dict):
        data.pop("claims", None)  # salvaged text proves nothing; the companion rules still apply
    if isinstance(data, dict) and "blocks" not in data and isinstance(data.get("text"), str):
        data = {"blocks": [{"type": "text", "text": data["text"]}]}
    if isinstance(data, dict) and isinstance(data.get("blocks"), list):
        data["blocks"] = [_within_limits(b) for b in data["blocks"][:MAX_BLOCKS]]
    try:
        return list(ReplyPayload.model_validate(data).blocks)
    except ValidationError:
        return None


def _within_limits(block: Any) -> Any:
    """A group of eleven photos keeps its first ten: one photo too many must not cost the customer
    every photo (the validated ``reply`` tool refuses it; salvage is the last chance)."""
    if isinstance(block, dict) and isinstance(block.get("urls"), list) and len(block["urls"]) > MAX_IMAGES:
        return {**block, "urls": block["urls"][:MAX_IMAGES]}
    return block


def _unescape(value: str) -> str:
    try:
        return str(json.loads(f'"{value}"'))
    except ValueError:
        return value
