"""Openings evaluated ahead, kept as llama.cpp states so that no turn evaluates one twice.

llama.cpp reuses what its context already holds when the next prompt starts the same way, so one
business's turns share their opening for free. A state kept here is for the prompt that follows
something else: another business's turn. Only openings are kept (saved once, when evaluated
ahead), and only the model's memory of them (some 28 KB a token for the built-in model), never
the per-token output scores: llama-cpp-python's own ``LlamaRAMCache`` copies its whole score
buffer (300 MB) with every state and saves one after every completion, which cost 0.75 s a
request and 1.9 GB of memory here, more than it saved.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class _State:
    tokens: tuple[int, ...]
    data: bytes


class OpeningStates:
    """States by their tokens, the least recently used dropped past ``capacity_bytes``."""

    def __init__(self, capacity_bytes: int) -> None:
        self._capacity = capacity_bytes
        self._states: OrderedDict[tuple[int, ...], _State] = OrderedDict()

    @property
    def size(self) -> int:
        return sum(len(s.data) for s in self._states.values())

    def save(self, llama: Any, llama_cpp: Any) -> None:
        """Keep the context ``llama`` holds now (its evaluated tokens and their memory)."""
        tokens = tuple(int(t) for t in llama.input_ids[: llama.n_tokens])
        if not tokens or not self._capacity:
            return
        ctx = llama._ctx.ctx
        size = llama_cpp.llama_state_get_size(ctx)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(ctx, buffer, size)
        self._states[tokens] = _State(tokens, bytes(buffer)[:written])
        self._states.move_to_end(tokens)
        while self.size > self._capacity and self._states:
            self._states.popitem(last=False)

    def restore_for(self, llama: Any, llama_cpp: Any, prompt: list[int]) -> int:
        """Load the kept state that starts ``prompt`` furthest, when it goes further than what the
        context holds; returns the tokens it covers (0: nothing loaded)."""
        if not self._states:
            return 0
        held = _common(llama.input_ids[: llama.n_tokens], prompt)
        best: _State | None = None
        reach = held
        for state in self._states.values():
            common = _common(state.tokens, prompt)
            if common > reach:
                best, reach = state, common
        if best is None:
            return 0
        data = (ctypes.c_uint8 * len(best.data)).from_buffer_copy(best.data)
        if llama_cpp.llama_state_set_data(llama._ctx.ctx, data, len(best.data)) != len(best.data):
            llama.reset()  # a state that does not fit this context: evaluate from scratch
            return 0
        llama.input_ids[: len(best.tokens)] = best.tokens
        llama.n_tokens = len(best.tokens)
        llama._requires_eval = True  # the scores are not restored: the rest of the prompt is evaluated
        self._states.move_to_end(best.tokens)
        return reach


def _common(held: Any, prompt: list[int]) -> int:
    count = 0
    for a, b in zip(held, prompt, strict=False):
        if int(a) != b:
            break
        count += 1
    return count
