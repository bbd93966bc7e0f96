"""Renderer for channels whose client reads replies from our store (web chat, terminal).

The stored reply rows are the delivery; rendering wakes the open readers in this process.
A reader on another instance finds the rows by polling."""

from __future__ import annotations

from collections.abc import Sequence

from frontdesk.output.blocks import Block
from frontdesk.output.rendering import DeliveryTarget, PlannedPart, SentPart, one_part_per_block
from frontdesk.platform.signals import ConversationSignals


class StoreBackedRenderer:
    def __init__(self, signals: ConversationSignals) -> None:
        self._signals = signals

    def plan(self, target: DeliveryTarget, blocks: Sequence[Block]) -> list[PlannedPart]:
        return one_part_per_block(blocks)

    async def send(self, target: DeliveryTarget, part: PlannedPart, *, replay: bool = False) -> SentPart:
        self._signals.publish(target.conversation_id)
        return SentPart()

    async def typing(self, target: DeliveryTarget) -> None:
        return None
