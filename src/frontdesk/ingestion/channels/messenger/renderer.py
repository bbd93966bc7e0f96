"""Placeholder until the messenger renderer lands."""

from __future__ import annotations

from collections.abc import Sequence

from frontdesk.errors import ChannelAPIError
from frontdesk.ingestion.accounts import AccountView
from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.events import MediaRef
from frontdesk.ingestion.preparation import FetchedMedia
from frontdesk.output.blocks import Block
from frontdesk.output.rendering import DeliveryTarget, PlannedPart, SentPart, one_part_per_block


class MessengerRenderer:
    def __init__(self, deps: ChannelDeps) -> None:
        self._deps = deps

    def plan(self, target: DeliveryTarget, blocks: Sequence[Block]) -> list[PlannedPart]:
        return one_part_per_block(blocks)

    async def send(self, target: DeliveryTarget, part: PlannedPart, *, replay: bool = False) -> SentPart:
        raise ChannelAPIError("not implemented yet")

    async def typing(self, target: DeliveryTarget) -> None:
        return None


class MessengerMediaFetcher:
    def __init__(self, deps: ChannelDeps) -> None:
        self._deps = deps

    async def fetch(self, account: AccountView, media: MediaRef) -> FetchedMedia:
        raise ChannelAPIError("not implemented yet")
