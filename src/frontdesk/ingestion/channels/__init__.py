"""The channel registry. Adding a channel is a checklist in docs/channels.md: a folder with
adapter, renderer, fixtures and README, then one entry here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi import APIRouter

from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.channels.line.adapter import build_router as line_router
from frontdesk.ingestion.channels.line.renderer import LineMediaFetcher, LineRenderer
from frontdesk.ingestion.channels.messenger.adapter import build_router as meta_messaging_router
from frontdesk.ingestion.channels.messenger.renderer import MessengerMediaFetcher, MessengerRenderer
from frontdesk.ingestion.channels.telegram.adapter import build_router as telegram_router
from frontdesk.ingestion.channels.telegram.renderer import TelegramMediaFetcher, TelegramRenderer
from frontdesk.ingestion.channels.terminal.renderer import TerminalRenderer
from frontdesk.ingestion.channels.webchat.adapter import build_router as webchat_router
from frontdesk.ingestion.channels.webchat.renderer import WebchatRenderer
from frontdesk.ingestion.channels.whatsapp.adapter import build_router as whatsapp_router
from frontdesk.ingestion.channels.whatsapp.renderer import WhatsAppMediaFetcher, WhatsAppRenderer
from frontdesk.ingestion.preparation import MediaFetcher
from frontdesk.output.rendering import Renderer


@dataclass(frozen=True)
class Channel:
    name: str
    renderer: Callable[[ChannelDeps], Renderer]
    router: Callable[[ChannelDeps], APIRouter] | None = None
    # Downloads customer media (``MediaRef``) for the ``prepare_media`` job.
    fetcher: Callable[[ChannelDeps], MediaFetcher] | None = None


CHANNELS: dict[str, Channel] = {
    "webchat": Channel("webchat", lambda deps: WebchatRenderer(deps.signals), webchat_router),
    "terminal": Channel("terminal", lambda deps: TerminalRenderer(deps.signals)),
    "telegram": Channel("telegram", TelegramRenderer, telegram_router, TelegramMediaFetcher),
    # One router serves both Meta messaging products (``/webhooks/messenger|instagram/{id}``).
    "messenger": Channel("messenger", MessengerRenderer, meta_messaging_router, MessengerMediaFetcher),
    "instagram": Channel("instagram", MessengerRenderer, None, MessengerMediaFetcher),
    "whatsapp": Channel("whatsapp", WhatsAppRenderer, whatsapp_router, WhatsAppMediaFetcher),
    "line": Channel("line", LineRenderer, line_router, LineMediaFetcher),
}

__all__ = ["CHANNELS", "Channel", "ChannelDeps"]
