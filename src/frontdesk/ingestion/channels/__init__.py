"""The channel registry. Adding a channel is a checklist in docs/channels.md: a folder with
adapter, renderer, fixtures and README, then one entry here."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import APIRouter
from sqlalchemy import select

from frontdesk.ingestion.accounts import OwnId
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
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Channel:
    name: str
    renderer: Callable[[ChannelDeps], Renderer]
    router: Callable[[ChannelDeps], APIRouter] | None = None
    # Downloads customer media (``MediaRef``) for the ``prepare_media`` job.
    fetcher: Callable[[ChannelDeps], MediaFetcher] | None = None
    # Where the webhook's signing secret does not name the account's platform identity (one Meta
    # app secret signs every Page, Instagram account and number of the app), the config key that
    # does: only it keeps another business's messages out. Telegram (a secret token per bot) and
    # LINE (a secret per channel) need none.
    own_id: OwnId | None = None


CHANNELS: dict[str, Channel] = {
    "webchat": Channel("webchat", lambda deps: WebchatRenderer(deps.signals), webchat_router),
    "terminal": Channel("terminal", lambda deps: TerminalRenderer(deps.signals)),
    "telegram": Channel("telegram", TelegramRenderer, telegram_router, TelegramMediaFetcher),
    # One router serves both Meta messaging products (``/webhooks/messenger|instagram/{id}``).
    "messenger": Channel(
        "messenger", MessengerRenderer, meta_messaging_router, MessengerMediaFetcher, own_id=OwnId("page_id", "Page")
    ),
    "instagram": Channel(
        "instagram", MessengerRenderer, None, MessengerMediaFetcher, own_id=OwnId("instagram_id", "Instagram account")
    ),
    "whatsapp": Channel(
        "whatsapp",
        WhatsAppRenderer,
        whatsapp_router,
        WhatsAppMediaFetcher,
        own_id=OwnId("phone_number_id", "phone number"),
    ),
    "line": Channel("line", LineRenderer, line_router, LineMediaFetcher),
}


async def warn_accounts_without_own_id(db: Database) -> list[str]:
    """Accounts made before their channel's ``own_id`` was required, and not fixed since: named at
    every start until it is set. Returns them."""
    async with db.read() as session:
        columns = select(ChannelAccount.id, ChannelAccount.tenant_id, ChannelAccount.channel, ChannelAccount.config)
        accounts = (await session.execute(columns)).all()
    unusable = []
    for account_id, tenant_id, channel_name, config in accounts:
        own_id = CHANNELS[channel_name].own_id if channel_name in CHANNELS else None
        if own_id is None or (problem := own_id.problem(config or {})) is None:
            continue
        unusable.append(account_id)
        log.warning(
            "channel account %s %s, so %s; set it: frontdesk accounts add %s --id %s --tenant %s --config %s=<id>",
            account_id, problem, own_id.consequence(config or {}), channel_name, account_id, tenant_id, own_id.key,
        )  # fmt: skip
    return unusable


__all__ = ["CHANNELS", "Channel", "ChannelDeps", "OwnId", "warn_accounts_without_own_id"]
