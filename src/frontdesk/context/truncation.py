"""Structure-aware truncation of tool results (ARCHITECTURE.md §4, tool-result reserve).

A result too large for what is left of the turn's tool-result reserve is shrunk by its structure:
long lists keep their first items plus a ``{"…": "N more items truncated"}`` entry, objects with
many keys keep their first keys plus a ``"…"`` key, long strings keep their start plus a note, and
deep nesting is folded. The outcome is always data that serialises to valid JSON: cutting the
serialised text instead would hand the model a broken document (an unclosed string, a half
object) that it may misread or repeat. Plain prose is cut at a character boundary with a note.
The verification gate is unaffected: evidence comes from the full result, not from what the model
was shown.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from frontdesk.platform.tokens import count_tokens

MARKER = "…"
# A result still gets this much when the reserve is spent: enough for its outline and the note.
MIN_RESULT_TOKENS = 64
# Characters kept per string, gentle to harsh. At each length the most list items that fit are
# kept; a length is taken only if it leaves at least ``_FEW_ITEMS`` (a list of five short rows
# says more than one long row).
_STRING_CHARS = (2_000, 1_000, 500, 240, 120, 80, 40)
_FEW_ITEMS = 5
_DEPTHS = (4, 3, 2, 1)
_SAMPLE_CHARS = 200_000

Counter = Callable[[str], int]


@dataclass(frozen=True)
class Shrunk:
    """A result as the model will read it. ``value`` is the original object when it fit."""

    value: Any
    tokens: int
    original_tokens: int
    truncated: bool = False


def result_text(value: Any) -> str:
    """A result as a provider serialises it: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return _dumps(to_jsonable_python(value))


def shrink_result(output: Any, max_tokens: int, count: Counter = count_tokens) -> Shrunk:
    """``output`` unchanged if it fits in ``max_tokens``, else a smaller version of it."""
    tokens = _size(result_text(output), max_tokens, count)
    if tokens <= max_tokens:
        return Shrunk(output, tokens, tokens)
    if isinstance(output, str):
        data = _json_container(output)
        if data is None:
            text = _shrink_prose(output, max_tokens, count)
            return Shrunk(text, count(text), tokens, True)
        text = _dumps(_shrink_data(data, tokens, max_tokens, count))  # JSON in, JSON text out
        return Shrunk(text, count(text), tokens, True)
    shrunk = _shrink_data(to_jsonable_python(output), tokens, max_tokens, count)
    return Shrunk(shrunk, count(_dumps(shrunk)), tokens, True)


class ResultAllowance:
    """One turn's tool-result reserve, spent as results enter the messages. Each result may use
    what is left (at least ``MIN_RESULT_TOKENS``)."""

    def __init__(self, reserve_tokens: int, count: Counter = count_tokens) -> None:
        self.reserve = reserve_tokens
        self.used = 0
        self._count = count

    @property
    def remaining(self) -> int:
        return max(0, self.reserve - self.used)

    def spend(self, text: str) -> None:
        """Account for something else the loop adds to the turn (a tool call's arguments)."""
        self.used += self._count(text)

    def fit(self, output: Any) -> Shrunk:
        shrunk = shrink_result(output, max(MIN_RESULT_TOKENS, self.remaining), self._count)
        self.used += shrunk.tokens
        return shrunk


def _size(text: str, max_tokens: int, count: Counter) -> int:
    """Tokens of ``text``. Beyond ``_SAMPLE_CHARS`` characters whose start alone is over the
    limit, an estimate from that start: counting megabytes exactly would take most of a second."""
    if len(text) <= _SAMPLE_CHARS:
        return count(text)
    sample = count(text[:_SAMPLE_CHARS])
    if sample <= max_tokens:
        return count(text)
    return round(sample * len(text) / _SAMPLE_CHARS)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _json_container(text: str) -> Any:
    """The object or list a string holds (an MCP tool's JSON text), else None."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _shrink_prose(text: str, max_tokens: int, count: Counter) -> str:
    """The longest start of ``text`` that fits with its note (binary search on characters)."""

    def cut(n: int) -> str:
        return f"{text[:n]}{MARKER} [{len(text) - n} more characters truncated]"

    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if count(cut(middle)) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return cut(low)


def _shrink_data(data: Any, original_tokens: int, max_tokens: int, count: Counter) -> Any:
    def fits(candidate: Any) -> bool:
        return count(_dumps(candidate)) <= max_tokens

    widest = max(1, _widest(data))
    best: Any = None
    for chars in _STRING_CHARS:
        if not fits(_trim(data, 1, chars, depth=0, max_depth=None)):
            continue
        # The most items per list that fit at this string length: doubling first, so no probe is
        # much larger than the limit (a result can be megabytes), then bisecting.
        low, high = 1, 2
        while high <= widest and fits(_trim(data, high, chars, depth=0, max_depth=None)):
            low, high = high, high * 2
        high = min(high - 1, widest)
        while low < high:
            middle = (low + high + 1) // 2
            if fits(_trim(data, middle, chars, depth=0, max_depth=None)):
                low = middle
            else:
                high = middle - 1
        best = _trim(data, low, chars, depth=0, max_depth=None)
        if low >= min(_FEW_ITEMS, widest):
            return best
    if best is not None:
        return best
    for max_depth in _DEPTHS:
        candidate = _trim(data, 1, _STRING_CHARS[-1], depth=0, max_depth=max_depth)
        if fits(candidate):
            return candidate
    return {MARKER: f"result truncated: its {original_tokens} tokens did not fit in {max_tokens}"}


def _widest(value: Any) -> int:
    """The longest list (or object with keys / 4) anywhere in ``value``."""
    if isinstance(value, list):
        return max([len(value), *(_widest(v) for v in value)])
    if isinstance(value, dict):
        return max([-(-len(value) // 4), *(_widest(v) for v in value.values())])
    return 0


def _trim(value: Any, items: int, chars: int, *, depth: int, max_depth: int | None) -> Any:
    if isinstance(value, str):
        if len(value) <= chars:
            return value
        return f"{value[:chars]}{MARKER} [{len(value) - chars} more characters truncated]"
    folded = max_depth is not None and depth >= max_depth
    if isinstance(value, list):
        if folded and value:
            return [{MARKER: f"{len(value)} items truncated"}]
        kept_list = [_trim(v, items, chars, depth=depth + 1, max_depth=max_depth) for v in value[:items]]
        if len(value) > items:
            kept_list.append({MARKER: f"{len(value) - items} more items truncated"})
        return kept_list
    if isinstance(value, dict):
        if folded and value:
            return {MARKER: f"{len(value)} keys truncated"}
        keys = items * 4  # an object is usually one record: keep more of its fields than list items
        kept = {k: _trim(v, items, chars, depth=depth + 1, max_depth=max_depth) for k, v in list(value.items())[:keys]}
        if len(value) > keys:
            kept[MARKER] = f"{len(value) - keys} more keys truncated"
        return kept
    return value
