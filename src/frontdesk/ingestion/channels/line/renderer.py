"""LINE renderer: reply blocks to Messaging API calls, and the media download for customer files.

Every block becomes LINE message objects, in order:

- text → ``{"type": "text"}``, split at 5000 UTF-16 units (how LINE counts) on a sentence boundary;
- an image group → one ``{"type": "image"}`` per URL (LINE has no upload API for message images:
  the URL itself must be public HTTPS), then its caption as a text message (LINE images carry none).

The objects are sent five per call (LINE's maximum), filling calls across blocks: LINE bills a
push per request, not per message object. Each call is one planned ``batch`` part. The
first call answers with the reply token of the message the reply answers, when it is still fresh:
a reply is free, but its token is single-use and lives about a minute. Every other call, and the
first one when the token is stale, refused, or the delivery is a replay, is a push (it counts
against the monthly quota) carrying an ``X-Line-Retry-Key`` derived from the part: a replay of a
push LINE already took is answered 409 and not shown twice. Typing → the loading animation.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from frontdesk.errors import ChannelAPIError
from frontdesk.ingestion.accounts import AccountView
from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.channels._http import call_json, download
from frontdesk.ingestion.events import MediaRef
from frontdesk.ingestion.preparation import FetchedMedia
from frontdesk.output.blocks import Block
from frontdesk.output.rendering import DeliveryTarget, PlannedPart, SentPart, split_text, utf16_units

log = logging.getLogger(__name__)

CHANNEL = "line"
API_BASE = "https://api.line.me"
DATA_API_BASE = "https://api-data.line.me"
TEXT_LIMIT = 5000  # UTF-16 units
MESSAGES_PER_CALL = 5
# LINE guarantees a reply token for one minute after the webhook; past that a reply may be refused
# (and one refused after LINE showed it would be lost), so we push with a margin left.
REPLY_TOKEN_MAX_AGE_S = 50.0
LOADING_SECONDS = 20  # 5-60 in steps of 5; the animation stops by itself when our message lands
TRANSCODING_TRIES = 6
TRANSCODING_WAIT_S = 0.5
# Fixed forever: retry keys must come out the same after a restart or an upgrade.
RETRY_KEY_NAMESPACE = uuid.UUID("6f1c2a1e-5b7d-4c0e-9a53-2f4c8e7d1b90")


def plan(target: DeliveryTarget, blocks: Sequence[Block]) -> list[PlannedPart]:
    """The calls a reply takes. Pure: the reply token and the retry keys are in the requests, so a
    replay hours later sends exactly what was planned (minus the token, by then long dead)."""
    messages = _messages(blocks)
    parts: list[PlannedPart] = []
    for seq, start in enumerate(range(0, len(messages), MESSAGES_PER_CALL)):
        chunk = messages[start : start + MESSAGES_PER_CALL]
        request: dict[str, Any] = {
            "to": target.contact_external_id,
            "messages": [message for _, message in chunk],
            "retry_key": retry_key(target, seq),
        }
        token = target.reply_context.get("reply_token")
        if seq == 0 and isinstance(token, str) and token:
            request["reply_token"] = token
            request["event_timestamp"] = target.reply_context.get("event_timestamp")
        texts = sum(1 for _, m in chunk if m["type"] == "text")
        # A batch can span blocks; it is filed under the block of its first message.
        parts.append(PlannedPart(chunk[0][0], "batch", request, texts=texts, images=len(chunk) - texts))
    return parts


def _messages(blocks: Sequence[Block]) -> list[tuple[int, dict[str, Any]]]:
    out: list[tuple[int, dict[str, Any]]] = []
    for index, block in enumerate(blocks):
        if block.type == "text":
            out += [(index, _text(piece)) for piece in split_text(block.text, TEXT_LIMIT, measure=utf16_units)]
            continue
        for url in map(str, block.urls):
            # No separate preview: LINE shows the original scaled down (a preview over 1 MB may not show).
            out.append((index, {"type": "image", "originalContentUrl": url, "previewImageUrl": url}))
        if block.caption:
            out += [(index, _text(piece)) for piece in split_text(block.caption, TEXT_LIMIT, measure=utf16_units)]
    return out


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def retry_key(target: DeliveryTarget, seq: int) -> str:
    """The same UUID for the same part of the same reply, however often it is sent."""
    name = f"{target.channel_account_id}/{target.conversation_id}/{target.message_id}/{seq}"
    return str(uuid.uuid5(RETRY_KEY_NAMESPACE, name))


def _token_refused(exc: ChannelAPIError) -> bool:
    """LINE's 400 for a used or expired token ("Invalid reply token"); any other 400 is about the
    messages themselves and a push would be refused the same way."""
    return exc.status == 400 and "reply token" in str(exc).lower()


def _sent_ids(body: Any) -> tuple[str, ...]:
    sent = body.get("sentMessages") if isinstance(body, dict) else None
    if not isinstance(sent, list):
        return ()
    return tuple(str(m["id"]) for m in sent if isinstance(m, dict) and m.get("id") is not None)


class LineRenderer:
    def __init__(self, deps: ChannelDeps) -> None:
        self._deps = deps

    def plan(self, target: DeliveryTarget, blocks: Sequence[Block]) -> list[PlannedPart]:
        return plan(target, blocks)

    async def send(self, target: DeliveryTarget, part: PlannedPart, *, replay: bool = False) -> SentPart:
        account = await self._deps.accounts.get(target.channel_account_id, (CHANNEL,))
        request = part.request
        token = request.get("reply_token")
        if isinstance(token, str) and not replay and self._fresh(request.get("event_timestamp")):
            try:
                body = await self._call(
                    account, "message/reply", {"replyToken": token, "messages": request["messages"]}
                )
                return SentPart(_sent_ids(body))
            except ChannelAPIError as exc:
                if not _token_refused(exc):
                    raise  # a 5xx or a timeout may have been shown: never push the same thing blindly
                log.info("LINE refused the reply token of message %s (%s): pushing instead", target.message_id, exc)
        return await self._push(account, request)

    async def typing(self, target: DeliveryTarget) -> None:
        account = await self._deps.accounts.get(target.channel_account_id, (CHANNEL,))
        body = {"chatId": target.contact_external_id, "loadingSeconds": LOADING_SECONDS}
        await self._call(account, "chat/loading/start", body)

    async def _push(self, account: AccountView, request: Mapping[str, Any]) -> SentPart:
        body = {"to": request["to"], "messages": request["messages"]}
        try:
            return SentPart(_sent_ids(await self._call(account, "message/push", body, key=request["retry_key"])))
        except ChannelAPIError as exc:
            if exc.status == 409:  # this retry key was accepted before: the customer has it already
                log.info("LINE already accepted push %s", request["retry_key"])
                return SentPart()
            raise

    async def _call(self, account: AccountView, path: str, body: Mapping[str, Any], *, key: str | None = None) -> Any:
        headers = {"Authorization": f"Bearer {account.credentials.require('channel_access_token')}"}
        if key is not None:
            headers["X-Line-Retry-Key"] = key  # push only: LINE refuses it on reply with a 400
        return await call_json(
            self._deps.http, "POST", f"{api_base(account)}/v2/bot/{path}", json=body, headers=headers
        )

    def _fresh(self, event_timestamp: Any) -> bool:
        if not isinstance(event_timestamp, int | float):
            return False
        age_s = self._deps.clock.now().timestamp() - event_timestamp / 1000
        return age_s < REPLY_TOKEN_MAX_AGE_S


def api_base(account: AccountView) -> str:
    return str(account.config.get("api_base_url") or API_BASE).rstrip("/")


def data_api_base(account: AccountView) -> str:
    """Content downloads live on their own host; an account that points ``api_base_url`` elsewhere
    (a proxy, a test double) and says nothing about this one gets the same base for both."""
    configured = account.config.get("data_api_base_url") or account.config.get("api_base_url")
    return str(configured or DATA_API_BASE).rstrip("/")


class LineMediaFetcher:
    """A customer's image or audio: LINE's content API by message id (audio once LINE has finished
    transcoding it), or the sender's own HTTPS URL when the content provider is ``external``."""

    def __init__(self, deps: ChannelDeps) -> None:
        self._deps = deps

    async def fetch(self, account: AccountView, media: MediaRef) -> FetchedMedia:
        if "://" in media.ref:
            return await self._external(account, media)
        auth = {"Authorization": f"Bearer {account.credentials.require('channel_access_token')}"}
        content = f"{data_api_base(account)}/v2/bot/message/{quote(media.ref, safe='')}/content"
        if media.kind == "audio":
            await self._wait_for_transcoding(content, auth)
        data, mime = await download(self._deps.http, content, headers=auth)
        return FetchedMedia(data, _mime(mime, media))

    async def _external(self, account: AccountView, media: MediaRef) -> FetchedMedia:
        # Never send our token to somebody else's server. Plain http only for the configured bases
        # (a test double, a local proxy): the URL came in a signed body, but it names a third party,
        # so it is fetched through the outbound guard (no loopback, private or link-local host).
        trusted = (f"{api_base(account)}/", f"{data_api_base(account)}/")
        if not (media.ref.startswith("https://") or media.ref.startswith(trusted)):
            raise ChannelAPIError("external LINE content must be an https URL", permanent=True)
        data, mime = await download(self._deps.guarded_http, media.ref)
        return FetchedMedia(data, _mime(mime, media))

    async def _wait_for_transcoding(self, content_url: str, auth: Mapping[str, str]) -> None:
        for attempt in range(TRANSCODING_TRIES):
            body = await call_json(self._deps.http, "GET", f"{content_url}/transcoding", headers=auth)
            status = body.get("status") if isinstance(body, dict) else None
            if status == "succeeded":
                return
            if status == "failed":
                raise ChannelAPIError("LINE could not transcode this audio", permanent=True)
            if attempt + 1 < TRANSCODING_TRIES:
                await asyncio.sleep(TRANSCODING_WAIT_S)
        # Still "processing": the prepare_media job retries later with backoff.
        raise ChannelAPIError("LINE is still transcoding this audio")


def _mime(served: str, media: MediaRef) -> str:
    if served not in ("application/octet-stream", ""):
        return served
    if media.mime_type:
        return media.mime_type
    # What LINE records: photos are JPEG, voice and audio messages M4A.
    return "image/jpeg" if media.kind == "image" else "audio/x-m4a"
