"""Telegram renderer: reply blocks to Bot API calls, and the media download for customer files.

- text → ``sendMessage`` (plain text, no ``parse_mode``: nothing the model writes can be read as
  markup), split at 4096 characters on a sentence boundary;
- one image → ``sendPhoto``; 2-10 images → one ``sendMediaGroup`` album with the caption on the
  first item (clients show it as the album's caption); a caption over 1024 characters is sent as
  a text message before the images instead;
- typing → ``sendChatAction``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from frontdesk.errors import ChannelAPIError
from frontdesk.ingestion.accounts import AccountView
from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.channels._http import call_json, download
from frontdesk.ingestion.events import MediaRef
from frontdesk.ingestion.preparation import FetchedMedia
from frontdesk.output.blocks import Block
from frontdesk.output.rendering import DeliveryTarget, PlannedPart, SentPart, split_text

CHANNEL = "telegram"
API_BASE = "https://api.telegram.org"
TEXT_LIMIT = 4096
CAPTION_LIMIT = 1024
ALBUM_MAX = 10


def plan(chat_id: int | str, blocks: Sequence[Block]) -> list[PlannedPart]:
    parts: list[PlannedPart] = []
    for index, block in enumerate(blocks):
        if block.type == "text":
            for piece in split_text(block.text, TEXT_LIMIT):
                parts.append(_call(index, "text", "sendMessage", {"chat_id": chat_id, "text": piece}, texts=1))
            continue
        urls = [str(u) for u in block.urls]
        caption = block.caption or None
        if caption and len(caption) > CAPTION_LIMIT:
            for piece in split_text(caption, TEXT_LIMIT):
                parts.append(_call(index, "text", "sendMessage", {"chat_id": chat_id, "text": piece}, texts=1))
            caption = None
        for start in range(0, len(urls), ALBUM_MAX):
            chunk = urls[start : start + ALBUM_MAX]
            first_caption = caption if start == 0 else None
            if len(chunk) == 1:
                body: dict[str, Any] = {"chat_id": chat_id, "photo": chunk[0]}
                if first_caption:
                    body["caption"] = first_caption
                parts.append(_call(index, "image", "sendPhoto", body, images=1))
            else:
                media: list[dict[str, Any]] = [{"type": "photo", "media": url} for url in chunk]
                if first_caption:
                    media[0]["caption"] = first_caption
                body = {"chat_id": chat_id, "media": media}
                parts.append(_call(index, "album", "sendMediaGroup", body, images=len(chunk)))
    return parts


def _call(index: int, kind: str, method: str, body: dict[str, Any], *, texts: int = 0, images: int = 0) -> PlannedPart:
    return PlannedPart(index, kind, {"method": method, "body": body}, texts=texts, images=images)


def _chat_id(target: DeliveryTarget) -> int | str:
    external = target.contact_external_id
    return int(external) if external.lstrip("-").isdigit() else external


def _ok(body: Any) -> bool:
    return isinstance(body, dict) and body.get("ok") is True


class TelegramRenderer:
    def __init__(self, deps: ChannelDeps) -> None:
        self._deps = deps

    def plan(self, target: DeliveryTarget, blocks: Sequence[Block]) -> list[PlannedPart]:
        return plan(_chat_id(target), blocks)

    async def send(self, target: DeliveryTarget, part: PlannedPart, *, replay: bool = False) -> SentPart:
        account = await self._deps.accounts.get(target.channel_account_id, (CHANNEL,))
        body = await self._call(account, str(part.request["method"]), part.request["body"])
        result = body.get("result")
        messages = result if isinstance(result, list) else [result]
        return SentPart(tuple(str(m["message_id"]) for m in messages if isinstance(m, dict) and "message_id" in m))

    async def typing(self, target: DeliveryTarget) -> None:
        account = await self._deps.accounts.get(target.channel_account_id, (CHANNEL,))
        await self._call(account, "sendChatAction", {"chat_id": _chat_id(target), "action": "typing"})

    async def _call(self, account: AccountView, method: str, body: Mapping[str, Any]) -> dict[str, Any]:
        url = f"{api_base(account)}/bot{account.credentials.require('bot_token')}/{method}"
        response: dict[str, Any] = await call_json(self._deps.http, "POST", url, json=body, ok=_ok)
        return response


def api_base(account: AccountView) -> str:
    return str(account.config.get("api_base_url") or API_BASE).rstrip("/")


class TelegramMediaFetcher:
    """``getFile`` for the path, then the file itself (the link lasts an hour; we fetch at once)."""

    def __init__(self, deps: ChannelDeps) -> None:
        self._deps = deps

    async def fetch(self, account: AccountView, media: MediaRef) -> FetchedMedia:
        token = account.credentials.require("bot_token")
        base = api_base(account)
        body = await call_json(
            self._deps.http, "POST", f"{base}/bot{token}/getFile", json={"file_id": media.ref}, ok=_ok
        )
        file_path = (body.get("result") or {}).get("file_path")
        if not isinstance(file_path, str) or not file_path:
            raise ChannelAPIError("getFile returned no file_path")
        data, mime = await download(self._deps.http, f"{base}/file/bot{token}/{file_path}")
        if mime in ("application/octet-stream", "") and media.mime_type:
            mime = media.mime_type  # Telegram serves files without a useful content type
        elif mime in ("application/octet-stream", "") and media.kind == "image":
            mime = "image/jpeg"  # Telegram re-encodes every photo as JPEG
        return FetchedMedia(data, mime)
