"""Messenger and Instagram renderer: reply blocks to Send API calls, and the media download.

- text → one message per piece, split at 2000 characters on a sentence boundary;
- image_group → one image message per URL, in order (the Send API takes a single attachment per
  message, and Messenger has no album), then the caption as a text message after the images;
- typing → ``sender_action: typing_on``, in a request of its own (it cannot ride with a message).

Every call is ``POST {graph}/{page_id | instagram_id | me}/messages`` with the Page access token
in the ``Authorization`` header, never in the URL, where access logs and error messages keep it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from frontdesk.errors import ChannelAPIError, ConfigError
from frontdesk.ingestion.accounts import AccountView
from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.channels._http import call_json, download
from frontdesk.ingestion.channels._meta import graph_base
from frontdesk.ingestion.channels.messenger.inbound import CHANNELS, fetchable_url
from frontdesk.ingestion.events import MediaRef
from frontdesk.ingestion.preparation import FetchedMedia
from frontdesk.output.blocks import Block
from frontdesk.output.rendering import DeliveryTarget, PlannedPart, SentPart, split_text

TEXT_LIMIT = 2000
# What the CDN's content type falls back to when it says nothing useful.
DEFAULT_MIME = {"image": "image/jpeg", "audio": "audio/mp4"}


def plan(recipient_id: str, blocks: Sequence[Block]) -> list[PlannedPart]:
    parts: list[PlannedPart] = []
    for index, block in enumerate(blocks):
        if block.type == "text":
            parts.extend(_texts(index, recipient_id, block.text))
            continue
        for url in block.urls:
            attachment = {"type": "image", "payload": {"url": str(url), "is_reusable": True}}
            parts.append(_message(index, "image", recipient_id, {"attachment": attachment}, images=1))
        if block.caption:
            # After the images: the customer reads the caption under what it describes.
            parts.extend(_texts(index, recipient_id, block.caption))
    return parts


def _texts(index: int, recipient_id: str, text: str) -> list[PlannedPart]:
    return [_message(index, "text", recipient_id, {"text": piece}, texts=1) for piece in split_text(text, TEXT_LIMIT)]


def _message(
    index: int, kind: str, recipient_id: str, message: dict[str, Any], *, texts: int = 0, images: int = 0
) -> PlannedPart:
    # RESPONSE: a reply inside the 24-hour window the customer's message opened (no message tag).
    body = {"recipient": {"id": recipient_id}, "messaging_type": "RESPONSE", "message": message}
    return PlannedPart(index, kind, {"body": body}, texts=texts, images=images)


def _accepted(body: Any) -> bool:
    return isinstance(body, dict) and "error" not in body


def sender_id(account: AccountView) -> str:
    """The id the Send API is called on. An Instagram account linked to a Facebook Page sends as
    that Page (``page_id``); an Instagram-Login account as itself (``instagram_id``)."""
    value = str(account.config.get("page_id") or account.config.get("instagram_id") or "me")
    if value != "me" and not value.isdigit():
        raise ConfigError(f"channel account {account.id}: page_id / instagram_id must be a numeric id")
    return value


class MessengerRenderer:
    """Serves both channel names; the account's channel picks nothing but its config keys."""

    def __init__(self, deps: ChannelDeps) -> None:
        self._deps = deps

    def plan(self, target: DeliveryTarget, blocks: Sequence[Block]) -> list[PlannedPart]:
        return plan(target.contact_external_id, blocks)

    async def send(self, target: DeliveryTarget, part: PlannedPart, *, replay: bool = False) -> SentPart:
        body = await self._post(target, part.request["body"])
        message_id = body.get("message_id")
        return SentPart((str(message_id),) if message_id else ())

    async def typing(self, target: DeliveryTarget) -> None:
        await self._post(target, {"recipient": {"id": target.contact_external_id}, "sender_action": "typing_on"})

    async def _post(self, target: DeliveryTarget, body: Mapping[str, Any]) -> dict[str, Any]:
        account = await self._deps.accounts.get(target.channel_account_id, tuple(CHANNELS))
        url = f"{graph_base(account)}/{sender_id(account)}/messages"
        headers = {"Authorization": f"Bearer {account.credentials.require('page_access_token')}"}
        response: dict[str, Any] = await call_json(
            self._deps.http, "POST", url, json=body, headers=headers, ok=_accepted
        )
        return response


class MessengerMediaFetcher:
    """A plain GET of the attachment's CDN URL: the URL is the capability, so no token goes with
    it (the Page token must never reach a host that is not the Graph API)."""

    def __init__(self, deps: ChannelDeps) -> None:
        self._deps = deps

    async def fetch(self, account: AccountView, media: MediaRef) -> FetchedMedia:
        # Checked again here, not only at parse time: the stored ref is what the job follows.
        url = fetchable_url(media.ref, account.config)
        if url is None:
            raise ChannelAPIError("refused: the media URL is not an https URL of Meta's CDN", permanent=True)
        # A redirect must land on a URL that passes the same rule; every hop's address passes the
        # outbound guard too (the URL came in a payload).
        data, mime = await download(
            self._deps.guarded_http, url, allow=lambda target: fetchable_url(target, account.config) is not None
        )
        if mime in ("", "application/octet-stream"):
            mime = media.mime_type or DEFAULT_MIME.get(media.kind, mime)
        return FetchedMedia(data, mime)
