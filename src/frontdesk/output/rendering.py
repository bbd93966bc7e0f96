"""The renderer port and the shapes a delivery is planned in.

A renderer compiles reply blocks into the platform's native calls (``plan``, pure, so a test can
snapshot it) and performs one call at a time (``send``). The deliverer stores the plan before the
first call and records each call's outcome, so a crash between two calls leaves visible
``pending`` parts and a replay resends only what did not go out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from frontdesk.output.blocks import Block


@dataclass(frozen=True)
class DeliveryTarget:
    """Where a reply goes, in channel-neutral terms; renderers read their own ids from it.

    ``reply_context`` is the metadata of the newest customer message the reply answers (a LINE
    reply token, a message id to quote). It never holds credentials: renderers fetch those."""

    channel: str
    channel_account_id: str
    conversation_id: str
    contact_external_id: str
    message_id: int
    account_config: Mapping[str, Any] = field(default_factory=dict)
    reply_context: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PlannedPart:
    """One platform call. ``request`` is JSON-serialisable and is all ``send`` needs besides the
    account's credentials, so a replay hours later sends the same thing."""

    block_index: int
    kind: str  # "text" | "image" | "album" | "batch"
    request: dict[str, Any]
    texts: int = 0
    images: int = 0


@dataclass(frozen=True)
class SentPart:
    platform_message_ids: tuple[str, ...] = ()


class Renderer(Protocol):
    """Compiles reply blocks to one platform's native calls and performs them."""

    def plan(self, target: DeliveryTarget, blocks: Sequence[Block]) -> list[PlannedPart]: ...

    async def send(self, target: DeliveryTarget, part: PlannedPart, *, replay: bool = False) -> SentPart:
        """Perform one call; raise (``ChannelAPIError``) if the platform did not accept it."""
        ...

    async def typing(self, target: DeliveryTarget) -> None:
        """Show "typing…" while a turn runs (a no-op where the platform has no such thing)."""
        ...


def one_part_per_block(blocks: Sequence[Block]) -> list[PlannedPart]:
    """The plan of channels whose client reads the stored blocks (web chat, terminal)."""
    return [
        PlannedPart(i, b.type, {}, texts=int(b.type == "text"), images=len(b.urls) if b.type == "image_group" else 0)
        for i, b in enumerate(blocks)
    ]


def split_text(text: str, limit: int, *, measure: Any = len) -> list[str]:
    """``text`` in pieces of at most ``limit`` (as ``measure`` counts), cut at a paragraph,
    line, sentence or word boundary when one exists in the second half of the window."""
    pieces: list[str] = []
    rest = text.strip()
    while rest:
        if measure(rest) <= limit:
            pieces.append(rest)
            break
        window = _fit(rest, limit, measure)
        cut = _boundary(window)
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    return [p for p in pieces if p]


def _fit(text: str, limit: int, measure: Any) -> str:
    """The longest prefix of ``text`` within ``limit`` (binary search: ``measure`` is monotonic)."""
    low, high = 1, min(len(text), limit)
    while low < high:
        middle = (low + high + 1) // 2
        if measure(text[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def _boundary(window: str) -> int:
    half = len(window) // 2
    for separator in ("\n\n", "\n", ". ", "! ", "? ", "。", "; ", ", ", " "):
        at = window.rfind(separator)
        if at >= half:
            return at + len(separator)
    return len(window)


def utf16_units(text: str) -> int:
    """Length as LINE counts it."""
    return len(text.encode("utf-16-le")) // 2
