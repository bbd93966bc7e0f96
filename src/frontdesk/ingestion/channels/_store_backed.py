"""Renderer for channels whose client reads replies from our store (web chat, terminal).

The stored reply rows are the delivery; rendering wakes the open readers in this process.
A reader on another instance finds the rows by polling."""

from __future__ import annotations

from collections.abc import Sequence

from frontdesk.output.blocks import Block
from frontdesk.output.delivery import DeliveryTarget, RenderResult
from frontdesk.platform.signals import ConversationSignals


class StoreBackedRenderer:
    def __init__(self, signals: ConversationSignals) -> None:
        self._signals = signals

    async def render(self, target: DeliveryTarget, blocks: Sequence[Block]) -> RenderResult:
        self._signals.publish(target.conversation_id)
        return RenderResult(parts_total=len(blocks), parts_sent=len(blocks))
