"""Messenger and Instagram webhook bodies -> our ``InboundEvent``s. Pure: no I/O, no clock.

The tenant was chosen before this runs (by the secret in the webhook URL); the body never picks
it. We only filter: an entry for another Page (or Instagram account) than the one configured is
ignored, never routed elsewhere.

One POST can carry several entries with several events each; every event yields at least one
``InboundEvent``. A customer message with N attachments yields N messages with stable ids (``mid``,
``mid#1``, ``mid#2``...), so a redelivery yields the same ids and deduplication holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pydantic import ValidationError
from pydantic_core import from_json

from frontdesk.errors import ConfigError, PayloadError
from frontdesk.ingestion.channels.messenger.payloads import (
    Attachment,
    Coordinates,
    Entry,
    Envelope,
    Message,
    MessagingEvent,
)
from frontdesk.ingestion.events import IgnoredEvent, InboundEvent, MediaRef
from frontdesk.ingestion.modality import message_event

# Channel name -> (the webhook's ``object``, the account-config key holding the id we answer as).
CHANNELS: dict[str, tuple[str, str]] = {
    "messenger": ("page", "page_id"),
    "instagram": ("instagram", "instagram_id"),
}

# Event objects we recognise and ignore, in the order we look for them, with the reason we log.
IGNORED_EVENTS: tuple[tuple[str, str], ...] = (
    ("delivery", "delivery receipt"),
    ("read", "read receipt"),
    ("reaction", "reaction"),
    ("postback", "postback"),
    ("referral", "referral"),
    ("optin", "optin"),
    ("message_edit", "message edit"),
    ("account_linking", "account linking"),
    ("pass_thread_control", "handover"),
    ("take_thread_control", "handover"),
    ("request_thread_control", "handover"),
    ("app_roles", "handover"),
    ("policy_enforcement", "policy enforcement"),
    ("game_play", "game play"),
    ("response_feedback", "response feedback"),
)

VIDEO_TYPES = frozenset({"video", "reel", "ig_reel"})
# Attachments that point somewhere rather than carry media: stored as text the model can read.
LINK_LABELS: dict[str, str] = {
    "fallback": "shared link",
    "share": "shared post",
    "post": "shared post",
    "ig_post": "shared post",
    "story_mention": "story mention",
    "location": "location",
}
# Where Meta serves message attachments (Messenger: scontent/video *.fbcdn.net, cdn.fbsbx.com;
# Instagram: lookaside.fbsbx.com, *.cdninstagram.com). A new CDN domain fails safe: the row is
# stored as "[image: not available]" and the agent says so.
MEDIA_HOSTS = ("fbcdn.net", "fbsbx.com", "cdninstagram.com", "facebook.com", "instagram.com")
# Facebook wraps outbound links in a redirect; the customer shared the target.
_REDIRECT_HOSTS = frozenset({"l.facebook.com", "lm.facebook.com", "l.messenger.com", "l.instagram.com"})
_MAX_REF = 4000  # MediaRef.ref
_MAX_TITLE = 200


def parse_events(raw: bytes, account_id: str, config: Mapping[str, Any], *, channel: str) -> list[InboundEvent]:
    """Every event of one webhook body, in order.

    ``channel`` is "messenger" (``object: "page"``) or "instagram" (``object: "instagram"``).
    ``config`` is the channel account's config; its "page_id" / "instagram_id", when set, is the
    only entry id we accept. Raises ``PayloadError`` (``malformed=True`` when the body is not a
    JSON object) for a body we cannot accept."""
    if channel not in CHANNELS:
        raise ConfigError(f"unknown Meta channel {channel!r}; expected one of {sorted(CHANNELS)}")
    expected_object, id_key = CHANNELS[channel]
    envelope = _load(raw)
    if envelope.object != expected_object:
        raise PayloadError(
            f"this {channel} webhook takes object {expected_object!r}, not {envelope.object[:50]!r}",
            details=[{"field": "object", "problem": f"expected {expected_object!r}"}],
        )
    own_id = _configured_id(config, id_key)
    events: list[InboundEvent] = []
    try:
        for entry in envelope.entry:
            events.extend(_entry_events(entry, own_id, account_id, config))
    except ValidationError as exc:  # a value our own event types refuse: still the sender's payload
        raise PayloadError(f"invalid {channel} event: {_problems(exc)}") from exc
    return events


def _load(raw: bytes) -> Envelope:
    try:
        # Not json.loads: it lets a lone surrogate escape ("\ud800") through, which no database can
        # store (a 500); pydantic's parser refuses it, like the other channels' parsers do.
        data = from_json(raw)
    except (ValueError, RecursionError) as exc:  # bad JSON, bad UTF-8, absurd nesting
        raise PayloadError("the body must be a JSON object", malformed=True) from exc
    if not isinstance(data, dict):
        raise PayloadError("the body must be a JSON object", malformed=True)
    try:
        return Envelope.model_validate(data)
    except ValidationError as exc:
        details = [
            {"field": ".".join(map(str, e["loc"])), "problem": e["msg"]}
            for e in exc.errors(include_url=False, include_input=False)
        ]
        raise PayloadError(f"invalid webhook body: {_problems(exc)}", details=details) from exc


def _problems(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_input=False)
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors[:5])


def _configured_id(config: Mapping[str, Any], key: str) -> str | None:
    value = config.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ConfigError(f"channel config {key!r} must be a string id, not {type(value).__name__}")
    return str(value)


def _entry_events(entry: Entry, own_id: str | None, account_id: str, config: Mapping[str, Any]) -> list[InboundEvent]:
    count = len(entry.messaging) + len(entry.standby) + len(entry.changes)
    if own_id is not None and entry.id != own_id:
        return [IgnoredEvent(reason="another page") for _ in range(count)]
    events: list[InboundEvent] = []
    for event in entry.messaging:
        events.extend(_messaging_events(event, entry.id, account_id, config))
    # Handover protocol: another app owns the thread, we only listen.
    events.extend(IgnoredEvent(reason="standby") for _ in entry.standby)
    events.extend(IgnoredEvent(reason=f"{change.field or 'unknown'} change") for change in entry.changes)
    return events


def _messaging_events(
    event: MessagingEvent, entry_id: str, account_id: str, config: Mapping[str, Any]
) -> list[InboundEvent]:
    message = event.message
    if message is None:
        for name, reason in IGNORED_EVENTS:
            if getattr(event, name) is not None:
                return [IgnoredEvent(reason=reason)]
        return [IgnoredEvent(reason="unknown event")]
    sender_id = event.sender.id if event.sender else None
    # Instagram has no separate echo subscription; the sender being the account itself is an echo too.
    if message.is_echo or sender_id == entry_id:
        return [IgnoredEvent(reason="echo")]
    if message.is_deleted:
        return [IgnoredEvent(reason="deleted message")]
    if message.is_unsupported:
        return [IgnoredEvent(reason="unsupported message")]
    if sender_id is None:
        return [IgnoredEvent(reason="message without a sender id")]
    metadata = _metadata(event, message)
    attachments = _distinct(message)
    if not attachments:
        return [
            message_event(
                channel_account_id=account_id,
                contact_external_id=sender_id,
                channel_message_id=message.mid,
                text=message.text,
                metadata=metadata,
            )
        ]
    return [
        _attachment_event(
            attachment,
            message,
            config,
            caption=message.text if index == 0 else None,
            channel_account_id=account_id,
            contact_external_id=sender_id,
            channel_message_id=message.mid if index == 0 else f"{message.mid}#{index}",
            metadata=metadata,
        )
        for index, attachment in enumerate(attachments)
    ]


def _metadata(event: MessagingEvent, message: Message) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "mid": message.mid,
        "recipient_id": event.recipient.id if event.recipient else None,
        "timestamp": event.timestamp,
    }
    if message.reply_to is not None:
        if message.reply_to.mid:
            metadata["reply_to_mid"] = message.reply_to.mid
        if message.reply_to.story is not None:
            metadata["reply_to_story_id"] = message.reply_to.story.id
            metadata["reply_to_story_url"] = message.reply_to.story.url
    if message.quick_reply is not None and message.quick_reply.payload:
        metadata["quick_reply_payload"] = message.quick_reply.payload
    return metadata


def _sticker_id(attachment: Attachment, message: Message) -> int | str | None:
    """A sticker's id when the attachment is a sticker: the new ``sticker`` type, or the legacy
    ``image`` that carries ``sticker_id``."""
    if attachment.type not in ("sticker", "image"):
        return None
    payload_id = attachment.payload.sticker_id if attachment.payload else None
    return payload_id if payload_id is not None else message.sticker_id


def _distinct(message: Message) -> list[Attachment]:
    """The attachments, each sticker once. Until 2026-08-30 Meta sends a sticker twice: as a
    ``sticker`` attachment and as the legacy ``image`` carrying ``sticker_id``; after that date,
    only the first. The legacy image is dropped whenever a ``sticker`` attachment is present, so
    the sticker keeps the same id before and after the transition."""
    if not any(a.type == "sticker" for a in message.attachments):
        return list(message.attachments)
    return [a for a in message.attachments if not (a.type == "image" and _sticker_id(a, message) is not None)]


def _attachment_event(
    attachment: Attachment,
    message: Message,
    config: Mapping[str, Any],
    *,
    caption: str | None,
    channel_account_id: str,
    contact_external_id: str,
    channel_message_id: str,
    metadata: dict[str, Any],
) -> InboundEvent:
    kind = attachment.type
    payload = attachment.payload
    url = payload.url if payload else None
    title = payload.title if payload else None
    meta = {**metadata, "attachment_type": kind}
    emit = partial(
        message_event,
        channel_account_id=channel_account_id,
        contact_external_id=contact_external_id,
        channel_message_id=channel_message_id,
        metadata=meta,
    )
    sticker_id = _sticker_id(attachment, message)
    if kind == "sticker" or sticker_id is not None:
        if sticker_id is not None:
            meta["sticker_id"] = str(sticker_id)
        return emit(content_type="sticker", text=caption)
    if kind == "like_heart":  # Instagram's heart "sticker": no payload at all
        return emit(content_type="sticker", text=caption, label="\u2764\ufe0f")
    if kind == "image":
        media_url = fetchable_url(url, config)
        media = MediaRef(kind="image", ref=media_url) if media_url else None
        return emit(content_type="image", text=caption, media=media)
    if kind == "audio":  # voice notes arrive as audio too
        media_url = fetchable_url(url, config)
        media = MediaRef(kind="audio", ref=media_url) if media_url else None
        return emit(content_type="audio", text=caption, media=media)
    if kind in VIDEO_TYPES or kind == "file":
        kept_url = fetchable_url(url, config)
        if kept_url:
            meta["attachment_url"] = kept_url
        if kind == "file":
            return emit(content_type="file", text=caption, label=title or _file_name(url))
        return emit(content_type="video", text=caption, label=title)
    if kind in LINK_LABELS:
        line = _link_line(LINK_LABELS[kind], title, url, payload.coordinates if payload else None, caption)
        if line is not None:
            return emit(content_type="text", text="\n".join(part for part in (caption, line) if part))
    if caption:
        # The attachment is beyond us but the customer's words are not: keep them.
        return emit(content_type="text", text=caption)
    return IgnoredEvent(reason=f"unsupported attachment: {kind[:60]}")


def fetchable_url(url: str | None, config: Mapping[str, Any]) -> str | None:
    """The URL when a job may GET it, else None. A signed body can still name any URL, and the
    fetch runs inside our network (SSRF): only https on Meta's CDN hosts is followed, plus the
    account's own ``api_base_url`` (the test double, a proxy), which the operator chose."""
    if not url or len(url) > _MAX_REF:
        return None
    base = str(config.get("api_base_url") or "").rstrip("/")
    if base and url.startswith(f"{base}/"):
        return url
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # an unparsable netloc or port
        return None
    host = parts.hostname or ""
    on_cdn = any(host == domain or host.endswith(f".{domain}") for domain in MEDIA_HOSTS)
    return url if parts.scheme == "https" and on_cdn and port in (None, 443) and not parts.username else None


def _file_name(url: str | None) -> str | None:
    """Meta's file URLs end with the customer's file name: ``.../123_n.pdf/Menu%202026.pdf?...``."""
    if not url:
        return None
    segment = unquote(urlsplit(url).path.rsplit("/", 1)[-1]).strip()
    stem, dot, extension = segment.rpartition(".")
    if not (stem and dot and extension.isalnum() and len(extension) <= 8 and len(segment) <= 200):
        return None
    return segment


def _link_line(
    label: str, title: str | None, url: str | None, coordinates: Coordinates | None, caption: str | None
) -> str | None:
    """``[shared link: Title] https://...``; None when there is nothing to show."""
    target = _unwrap_redirect(url) if url else None
    if target is not None and not target.startswith(("https://", "http://")):
        target = None
    if target is not None and caption and target in caption:
        target = None  # the customer pasted the link; no need to say it twice
    where = f"{coordinates.lat}, {coordinates.long}" if coordinates is not None else None
    name = (title or "").strip()[:_MAX_TITLE]
    if not (name or target or where):
        return None
    head = f"[{label}: {name}]" if name else f"[{label}]"
    return " ".join(part for part in (head, where, target) if part)


def _unwrap_redirect(url: str) -> str:
    parts = urlsplit(url)
    if parts.hostname in _REDIRECT_HOSTS and parts.path == "/l.php":
        target = parse_qs(parts.query).get("u")
        if target and target[0]:
            return target[0]
    return url
