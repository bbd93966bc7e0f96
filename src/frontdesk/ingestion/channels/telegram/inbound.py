"""Telegram inbound parsing: one webhook body, which holds one ``Update``, into our events.

Pure functions: no HTTP, no store. The webhook route checks the secret-token header, then hands
the exact body here. Every message goes through ``message_event`` so Telegram obeys the same
modality rules as every other channel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from frontdesk.errors import PayloadError
from frontdesk.ingestion.channels.telegram.payloads import AudioFile, Document, Message, Update, User
from frontdesk.ingestion.events import ContentType, IgnoredEvent, InboundEvent, MediaRef
from frontdesk.ingestion.modality import message_event

# Cloud Bot API bots can download files up to 20 MB (getFile); a bigger file has no usable ref.
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
_NOT_AN_OBJECT = frozenset({"model_type", "model_attributes_type", "dict_type"})


@dataclass(frozen=True)
class _Content:
    content_type: ContentType
    media: MediaRef | None = None
    label: str | None = None


def parse_events(raw: bytes, account_id: str, config: Mapping[str, Any]) -> list[InboundEvent]:
    """The events in one Telegram webhook body (always exactly one: Telegram sends one update
    per request).

    ``config`` is the channel account's configuration; ``bot_id`` (the number before the colon
    in the bot token) lets us drop the bot's own messages. Raises ``PayloadError``, with
    ``malformed`` set when the body is not a JSON object at all."""
    update = _parse_update(raw)
    if update.message is not None:
        return [_message(update.update_id, update.message, account_id, _bot_id(config), edited=False)]
    if update.edited_message is not None:
        return [_message(update.update_id, update.edited_message, account_id, _bot_id(config), edited=True)]
    return [IgnoredEvent(reason=f"unsupported update: {update.update_type}")]


def _parse_update(raw: bytes) -> Update:
    try:
        return Update.model_validate_json(raw)
    except ValidationError as exc:
        raise _payload_error(exc) from exc


def _payload_error(exc: ValidationError) -> PayloadError:
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    if any(e["type"] == "json_invalid" for e in errors):
        return PayloadError("the body is not valid JSON", malformed=True)
    if any(e["type"] in _NOT_AN_OBJECT and not e["loc"] for e in errors):
        return PayloadError("the body must be a JSON object (one Telegram update)", malformed=True)
    details = [{"field": ".".join(map(str, e["loc"])), "problem": e["msg"]} for e in errors]
    summary = "; ".join(f"{d['field']}: {d['problem']}" for d in details[:3])
    more = f" (and {len(details) - 3} more)" if len(details) > 3 else ""
    return PayloadError(f"invalid Telegram update: {summary}{more}", details=details)


def _message(update_id: int, message: Message, account_id: str, bot_id: int | None, *, edited: bool) -> InboundEvent:
    if message.chat.type != "private":
        return IgnoredEvent(reason="group chat")
    sender = message.sender
    if sender is not None and (sender.is_bot or sender.id == bot_id):
        return IgnoredEvent(reason="echo")
    content = _content(message)
    return message_event(
        channel_account_id=account_id,
        contact_external_id=str(message.chat.id),
        # update_id, not message_id: an edit is a new update and is stored as a new message.
        channel_message_id=f"update:{update_id}",
        content_type=content.content_type,
        text=message.text if message.text is not None else message.caption,
        media=content.media,
        label=content.label,
        contact_name=_full_name(sender),
        metadata=_metadata(message, edited=edited),
    )


def _content(message: Message) -> _Content:
    if message.photo:
        largest = max(message.photo, key=lambda size: size.width * size.height)
        return _Content("image", media=_image(largest.file_id, largest.file_size, None))
    if message.animation is not None:
        return _Content("video")  # checked before ``document``, which Telegram also sets on a GIF
    if message.document is not None:
        return _document(message.document)
    if message.voice is not None:
        return _Content("voice", media=_audio(message.voice))
    if message.audio is not None:
        return _Content("audio", media=_audio(message.audio))
    if message.sticker is not None:
        return _Content("sticker", label=message.sticker.emoji)
    if message.video is not None or message.video_note is not None:
        return _Content("video")
    return _Content("text")


def _document(document: Document) -> _Content:
    mime_type = (document.mime_type or "").lower()
    if mime_type.startswith("image/"):
        # "Send as file" keeps a photo uncompressed; to the customer it is still a photo.
        return _Content("image", media=_image(document.file_id, document.file_size, mime_type))
    return _Content("file", label=document.file_name)


def _image(file_id: str, size: int | None, mime_type: str | None) -> MediaRef | None:
    if not _downloadable(size):
        return None
    return MediaRef(kind="image", ref=file_id, mime_type=mime_type, size=size)


def _audio(audio: AudioFile) -> MediaRef | None:
    if not _downloadable(audio.file_size):
        return None
    return MediaRef(
        kind="audio",
        ref=audio.file_id,
        mime_type=audio.mime_type,
        size=audio.file_size,
        duration_s=float(audio.duration),
    )


def _downloadable(size: int | None) -> bool:
    return size is None or size <= MAX_DOWNLOAD_BYTES


def _full_name(user: User | None) -> str | None:
    if user is None:
        return None
    return " ".join(part for part in (user.first_name, user.last_name) if part) or None


def _metadata(message: Message, *, edited: bool) -> dict[str, Any]:
    metadata: dict[str, Any] = {"chat_id": message.chat.id, "message_id": message.message_id}
    if message.media_group_id is not None:
        metadata["media_group_id"] = message.media_group_id
    if edited:
        metadata["edited"] = True
    return metadata


def _bot_id(config: Mapping[str, Any]) -> int | None:
    value = config.get("bot_id")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None
