"""WhatsApp renderer: reply blocks to Cloud API calls, and the media download for customer files.

Every call is ``POST {graph}/{phone_number_id}/messages`` with the account's bearer token:

- text → a ``text`` message (``preview_url`` off: a link the model writes does not unfold into a
  card), split at 4096 characters on a sentence boundary;
- image_group → one ``image`` message per image, in order (WhatsApp has no albums), the caption on
  the first; a caption over 1024 characters goes first as a text message instead;
- typing → the customer's newest message marked read with a typing indicator (lasts 25 s or until
  we answer).

The ``wamid`` each send returns is recorded on its delivery part: the ``statuses`` webhook
(delivered, read, failed...) is matched on it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from frontdesk.errors import ChannelAPIError, ConfigError
from frontdesk.ingestion.accounts import AccountView
from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.channels._http import call_json, download
from frontdesk.ingestion.channels._meta import graph_base
from frontdesk.ingestion.events import MediaRef
from frontdesk.ingestion.preparation import FetchedMedia
from frontdesk.output.blocks import Block
from frontdesk.output.rendering import DeliveryTarget, PlannedPart, SentPart, split_text

CHANNEL = "whatsapp"
TEXT_LIMIT = 4096
CAPTION_LIMIT = 1024
_PHONE = re.compile(r"\+?[0-9]{5,20}")
_GRAPH_ID = re.compile(r"[0-9A-Za-z_-]{1,200}")  # a media or phone number id: one URL path segment


def plan(recipient: str, blocks: Sequence[Block]) -> list[PlannedPart]:
    """The messages ``blocks`` become, in order. Pure: ``request["body"]`` is the JSON posted."""
    parts: list[PlannedPart] = []
    for index, block in enumerate(blocks):
        if block.type == "text":
            parts += [_text(index, recipient, piece) for piece in split_text(block.text, TEXT_LIMIT)]
            continue
        caption = (block.caption or "").strip() or None
        if caption and len(caption) > CAPTION_LIMIT:
            parts += [_text(index, recipient, piece) for piece in split_text(caption, TEXT_LIMIT)]
            caption = None
        for position, url in enumerate(block.urls):
            image: dict[str, Any] = {"link": str(url)}
            if caption and position == 0:
                image["caption"] = caption
            parts.append(PlannedPart(index, "image", {"body": _message(recipient, "image", image)}, images=1))
    return parts


def _text(index: int, recipient: str, text: str) -> PlannedPart:
    body = _message(recipient, "text", {"preview_url": False, "body": text})
    return PlannedPart(index, "text", {"body": body}, texts=1)


def _message(recipient: str, kind: str, content: dict[str, Any]) -> dict[str, Any]:
    # A customer who hides their number behind a username is known only by a business-scoped user
    # id ("US.13491208655302741918"); Meta takes that in ``recipient`` instead of ``to``.
    address = {"to": recipient} if _PHONE.fullmatch(recipient) else {"recipient": recipient}
    return {"messaging_product": "whatsapp", "recipient_type": "individual", **address, "type": kind, kind: content}


def _bearer(account: AccountView) -> dict[str, str]:
    return {"Authorization": f"Bearer {account.credentials.require('access_token')}"}


def _graph_id(value: Any, what: str) -> str:
    text = str(value or "")
    if not _GRAPH_ID.fullmatch(text):
        raise ConfigError(f"this whatsapp account has no usable {what}")
    return text


class WhatsAppRenderer:
    # The indicator lasts 25 s and every renewal re-sends the read receipt: renew rarely.
    typing_every_s = 20.0

    def __init__(self, deps: ChannelDeps) -> None:
        self._deps = deps

    def plan(self, target: DeliveryTarget, blocks: Sequence[Block]) -> list[PlannedPart]:
        return plan(target.contact_external_id, blocks)

    async def send(self, target: DeliveryTarget, part: PlannedPart, *, replay: bool = False) -> SentPart:
        account = await self._deps.accounts.get(target.channel_account_id, (CHANNEL,))
        body = await self._post(account, part.request["body"])
        messages = body.get("messages") if isinstance(body, dict) else None
        # A 200 without an id still means Meta took the message: recording it as failed would make
        # a replay send it twice. It only leaves the status callbacks nothing to match.
        return SentPart(tuple(str(m["id"]) for m in messages or () if isinstance(m, dict) and m.get("id")))

    async def typing(self, target: DeliveryTarget) -> None:
        wamid = target.reply_context.get("wamid")
        if not isinstance(wamid, str) or not wamid:
            return  # an operator message or a replay: there is no customer message to mark
        account = await self._deps.accounts.get(target.channel_account_id, (CHANNEL,))
        read = {"messaging_product": "whatsapp", "status": "read", "message_id": wamid}
        await self._post(account, {**read, "typing_indicator": {"type": "text"}})

    async def _post(self, account: AccountView, body: Mapping[str, Any]) -> Any:
        number = _graph_id(account.config.get("phone_number_id"), "phone_number_id")
        url = f"{graph_base(account)}/{number}/messages"
        return await call_json(self._deps.http, "POST", url, json=body, headers=_bearer(account))


class WhatsAppMediaFetcher:
    """The media id's URL from the Graph API, then the file (the URL lasts minutes; we fetch at once).

    Both calls carry the bearer token, so the download URL is followed only over HTTPS (or to the
    account's ``api_base_url``: a test double, a proxy), never to a clear-text address."""

    def __init__(self, deps: ChannelDeps) -> None:
        self._deps = deps

    async def fetch(self, account: AccountView, media: MediaRef) -> FetchedMedia:
        if not _GRAPH_ID.fullmatch(media.ref):
            raise ChannelAPIError("not a WhatsApp media id", permanent=True)
        headers = _bearer(account)
        info = await call_json(self._deps.http, "GET", f"{graph_base(account)}/{media.ref}", headers=headers)
        url = info.get("url") if isinstance(info, dict) else None
        if not isinstance(url, str) or not _may_follow(account, url):
            raise ChannelAPIError("the media lookup returned no https download URL", permanent=True)
        # The URL is the Graph API's answer, not one we built: fetched through the outbound guard.
        data, served = await download(self._deps.guarded_http, url, headers=headers)
        # The lookup names the type Meta stored; the download's Content-Type is not always useful.
        reported = info.get("mime_type") if isinstance(info, dict) else None
        mime = _bare(reported) or _bare(media.mime_type) or _bare(served) or "application/octet-stream"
        return FetchedMedia(data, mime)


def _may_follow(account: AccountView, url: str) -> bool:
    base = str(account.config.get("api_base_url") or "").rstrip("/")
    if base and url.startswith(f"{base}/"):
        return True
    parts = urlsplit(url)
    return parts.scheme == "https" and bool(parts.hostname)


def _bare(mime: Any) -> str:
    """``audio/ogg; codecs=opus`` → ``audio/ogg``; a generic or missing type → ``""``."""
    value = str(mime or "").split(";")[0].strip().lower()
    return "" if value in ("", "application/octet-stream") else value
