"""The channel registry. Adding a channel is a checklist in docs/channels.md: a folder with
adapter, renderer, fixtures and README, then one entry here."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import APIRouter
from sqlalchemy import select

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
    # The config key naming the platform identity an account answers as, where the webhook's
    # signing secret does not name it: one Meta app secret signs the webhooks of every Page,
    # Instagram account and phone number of that app, so only this id keeps another business's
    # messages out. Telegram (a secret token per bot) and LINE (a secret per channel) need none.
    own_id: str | None = None
    identity: str = ""  # what ``own_id`` names, for messages: "Page"


CHANNELS: dict[str, Channel] = {
    "webchat": Channel("webchat", lambda deps: WebchatRenderer(deps.signals), webchat_router),
    "terminal": Channel("terminal", lambda deps: TerminalRenderer(deps.signals)),
    "telegram": Channel("telegram", TelegramRenderer, telegram_router, TelegramMediaFetcher),
    # One router serves both Meta messaging products (``/webhooks/messenger|instagram/{id}``).
    "messenger": Channel(
        "messenger", MessengerRenderer, meta_messaging_router, MessengerMediaFetcher, own_id="page_id", identity="Page"
    ),
    "instagram": Channel(
        "instagram", MessengerRenderer, None, MessengerMediaFetcher, own_id="instagram_id", identity="Instagram account"
    ),
    "whatsapp": Channel(
        "whatsapp",
        WhatsAppRenderer,
        whatsapp_router,
        WhatsAppMediaFetcher,
        own_id="phone_number_id",
        identity="phone number",
    ),
    "line": Channel("line", LineRenderer, line_router, LineMediaFetcher),
}


_OWN_ID = re.compile(r"[0-9]{1,30}")  # Meta's Page, Instagram account and phone number ids


def usable_own_id(value: object) -> bool:
    return value is not None and not isinstance(value, bool) and _OWN_ID.fullmatch(str(value)) is not None


async def warn_accounts_without_own_id(db: Database) -> list[str]:
    """Accounts made before their channel's ``own_id`` was required: without it they take every
    body their app secret signs; with a malformed one, none. Named at every start until their id
    is set; returns them."""
    async with db.read() as session:
        columns = select(ChannelAccount.id, ChannelAccount.tenant_id, ChannelAccount.channel, ChannelAccount.config)
        accounts = (await session.execute(columns)).all()
    unusable = []
    for account_id, tenant_id, channel_name, config in accounts:
        channel = CHANNELS.get(channel_name)
        key = channel.own_id if channel is not None else None
        if channel is None or key is None or usable_own_id((config or {}).get(key)):
            continue
        unusable.append(account_id)
        missing = (config or {}).get(key) in (None, "")
        log.warning(
            "channel account %s %s; set it: frontdesk accounts add %s --id %s --tenant %s --config %s=<id>",
            account_id,
            f"has no {key}, so it takes the webhooks of every {channel.identity} of its Meta app"
            if missing
            else f"has a {key} that is not a numeric id, so it ignores every webhook",
            channel_name, account_id, tenant_id, key,
        )  # fmt: skip
    return unusable


__all__ = ["CHANNELS", "Channel", "ChannelDeps", "usable_own_id", "warn_accounts_without_own_id"]
