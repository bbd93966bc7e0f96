"""The channel registry. Adding a channel is a checklist in docs/channels.md: a folder with
adapter, renderer, fixtures and README, then one entry here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi import APIRouter

from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.channels.terminal.renderer import TerminalRenderer
from frontdesk.ingestion.channels.webchat.adapter import build_router as webchat_router
from frontdesk.ingestion.channels.webchat.renderer import WebchatRenderer
from frontdesk.output.delivery import Renderer


@dataclass(frozen=True)
class Channel:
    name: str
    renderer: Callable[[ChannelDeps], Renderer]
    router: Callable[[ChannelDeps], APIRouter] | None = None


CHANNELS: dict[str, Channel] = {
    "webchat": Channel("webchat", lambda deps: WebchatRenderer(deps.signals), webchat_router),
    "terminal": Channel("terminal", lambda deps: TerminalRenderer(deps.signals)),
}

__all__ = ["CHANNELS", "Channel", "ChannelDeps"]
