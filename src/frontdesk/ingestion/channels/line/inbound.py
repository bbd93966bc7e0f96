"""One LINE Messaging API webhook body → our inbound events. Pure: no HTTP, no signature, no store.

The signature key (checked on the raw bytes before this runs) is what binds the body to a channel
account; ``destination`` in the body can only narrow it: events for another bot are ignored,
never re-routed. Every event of the batch is read, in order.

Per event, the first rule that applies:

- ``mode`` other than ``active`` (``standby``: another channel owns the chat) → ignored.
- Any type but ``message`` (follow, unfollow, postback, unsend, join, leave, beacon, ... and types
  LINE adds later) → ignored, naming the type.
- A message in a group or room → ignored ("group chat"): we answer one customer at a time.
- A message without ``source.userId`` → ignored (nobody to answer).

What a customer message becomes (always through ``modality.message_event``), keyed on
``webhookEventId`` (a redelivery repeats it) and the sender's ``userId``:

- ``text`` → text; LINE emoji stay as the ``(love)``-style placeholders LINE puts in the text.
- ``image`` → image, pending; fetched later by message id, or from ``originalContentUrl`` when the
  content provider is ``external``. ``imageSet`` (several images sent at once) goes to metadata.
- ``audio`` (voice notes too) → audio, pending, with its duration.
- ``video`` → ``[video]``. ``file`` → ``[file: name]``. ``sticker`` → ``[sticker: text]`` with the
  text typed on a message sticker, else its first keyword.
- ``location`` → text ``[location: title, address (lat, long)]``.
- Any other message type → ignored, naming the type.

Metadata: ``line_message_id``, ``reply_token``, ``event_timestamp`` (ms), ``redelivery``, and when
LINE sends them ``mark_as_read_token``, ``quote_token``, ``quoted_message_id``, ``image_set``.

Errors: not JSON or not an object → ``PayloadError(malformed=True)``; a shape we cannot read →
``PayloadError``. ``events: []`` is LINE's "Verify" ping and gives ``[]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from pydantic import ValidationError

from frontdesk.errors import ConfigError, PayloadError
from frontdesk.ingestion.channels.line.payloads import (
    AudioContent,
    CallbackRequest,
    ContentProvider,
    Event,
    FileContent,
    ImageContent,
    LocationContent,
    MessageEvent,
    StickerContent,
    TextContent,
    VideoContent,
)
from frontdesk.ingestion.events import IgnoredEvent, InboundEvent, MediaRef
from frontdesk.ingestion.modality import message_event

MAX_LISTED_ERRORS = 3


def parse_events(raw: bytes, account_id: str, config: Mapping[str, Any]) -> list[InboundEvent]:
    """Every event of one webhook POST, in order: customer messages, or ``IgnoredEvent``s saying why not.

    ``config["destination"]``, when set, is the bot user id this account answers as (``U`` + 32
    hex); events for any other bot are ignored. Raises ``PayloadError`` (``malformed=True`` when
    the body is not a JSON object) and ``ConfigError`` when that setting is not a string."""
    body = _parse_body(raw)
    expected = config.get("destination")
    if expected is not None and not isinstance(expected, str):
        raise ConfigError(f"LINE destination must be a bot user id string, not {type(expected).__name__}")
    if expected and body.destination != expected:
        return [IgnoredEvent(reason="another bot") for _ in body.events]
    return [_event(event, account_id) for event in body.events]


def _parse_body(raw: bytes) -> CallbackRequest:
    try:
        return CallbackRequest.model_validate_json(raw)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        if any(e["type"] == "json_invalid" or (e["type"] == "model_type" and not e["loc"]) for e in errors):
            raise PayloadError("the body must be a JSON object", malformed=True) from exc
        details = [{"field": ".".join(map(str, e["loc"])), "problem": e["msg"]} for e in errors]
        listed = "; ".join(f"{d['field']}: {d['problem']}" for d in details[:MAX_LISTED_ERRORS])
        more = f" (and {len(details) - MAX_LISTED_ERRORS} more)" if len(details) > MAX_LISTED_ERRORS else ""
        raise PayloadError(f"invalid LINE webhook body: {listed}{more}", details=details) from exc


def _event(event: Event, account_id: str) -> InboundEvent:
    if event.mode is not None and event.mode != "active":
        # Standby: another channel (a module, a chat tool) owns the conversation; we must not answer.
        return IgnoredEvent(reason="standby" if event.mode == "standby" else f"mode {event.mode!r}")
    if not isinstance(event, MessageEvent):
        return IgnoredEvent(reason=f"{event.type} event")
    source = event.source
    if source is not None and source.type in ("group", "room"):
        return IgnoredEvent(reason="group chat")
    if source is None or source.type != "user" or source.user_id is None:
        return IgnoredEvent(reason="message without a user id")
    message = event.message
    build = partial(
        message_event,
        channel_account_id=account_id,
        contact_external_id=source.user_id,
        channel_message_id=event.webhook_event_id,
        metadata=_metadata(event),
    )
    match message:
        case TextContent():
            return build(text=message.text)
        case ImageContent():
            ref = _media_ref(message.id, message.content_provider)
            return build(content_type="image", media=MediaRef(kind="image", ref=ref) if ref else None)
        case AudioContent():
            ref = _media_ref(message.id, message.content_provider)
            seconds = message.duration / 1000 if message.duration is not None else None
            media = MediaRef(kind="audio", ref=ref, duration_s=seconds) if ref else None
            return build(content_type="audio", media=media)
        case VideoContent():
            return build(content_type="video")
        case FileContent():
            return build(content_type="file", label=message.file_name)
        case StickerContent():
            return build(content_type="sticker", label=message.text or next(iter(message.keywords), None))
        case LocationContent():
            return build(text=_location_text(message))
        case _:
            return IgnoredEvent(reason=f"{message.type} message")


def _media_ref(message_id: str, provider: ContentProvider) -> str | None:
    """What the media job fetches: a URL for ``external`` content, else the message id for LINE's
    content API (``line``, and any provider type LINE adds later: trying beats dropping the message)."""
    if provider.type == "external":
        return provider.original_content_url
    return message_id


def _location_text(message: LocationContent) -> str:
    place = ", ".join(p.strip() for p in (message.title, message.address) if p and p.strip())
    coordinates = f"({message.latitude}, {message.longitude})"
    return f"[location: {place} {coordinates}]" if place else f"[location: {coordinates}]"


def _metadata(event: MessageEvent) -> dict[str, Any]:
    message = event.message
    metadata: dict[str, Any] = {
        "line_message_id": message.id,
        "reply_token": event.reply_token,
        "event_timestamp": event.timestamp,
        "redelivery": event.delivery_context.is_redelivery,
    }
    if message.mark_as_read_token:
        metadata["mark_as_read_token"] = message.mark_as_read_token
    if message.quote_token:
        metadata["quote_token"] = message.quote_token
    if message.quoted_message_id:
        metadata["quoted_message_id"] = message.quoted_message_id
    if isinstance(message, ImageContent) and message.image_set is not None:
        image_set = message.image_set
        metadata["image_set"] = {"id": image_set.id, "index": image_set.index, "total": image_set.total}
    return metadata
