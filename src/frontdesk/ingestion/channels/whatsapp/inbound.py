"""One WhatsApp Cloud API webhook body → our inbound events. Pure: no I/O, no clock, no database.

The URL secret has already chosen the tenant; the body can only narrow it. A change whose
``metadata.phone_number_id`` is not the number this account answers as is ignored, never
re-routed. Every entry and every change is read (Meta batches them).

What a customer message becomes (always through ``modality.message_event``):

- ``text`` → text. ``interactive`` button_reply / list_reply and a template's quick-reply
  ``button`` → text: the title the customer tapped (its id or payload in ``metadata.reply_id``).
- ``image``, and a ``document`` whose MIME type is ``image/*`` → image, pending, fetched later by
  media id; the caption is kept.
- ``audio`` → ``voice`` when ``audio.voice`` is true (recorded in the chat), else ``audio``.
- ``sticker`` → ``[sticker]``. ``video`` → ``[video]`` plus caption. ``document`` → ``[file: name]``
  plus caption.
- ``location`` → text ``[location: name, address (lat, long)]``.
- ``contacts`` (shared contact cards) → text ``[contact card: Jane Doe]``. The customer did send
  something the agent should acknowledge; the card's phone numbers are left out.
- ``reaction``, ``order``, ``system``, ``unsupported``, the legacy ``unknown`` and any newer type
  → ``IgnoredEvent`` naming the type. Other interactive replies (flows...) too.
- Anything posted in a group (``group_id`` set, Groups API) is ignored: we answer one customer
  at a time, and keying it on ``from`` would pull a group thread into that person's private chat.

Sender: ``from`` (the phone number). When Meta hides it behind a username, the business-scoped
user id (``from_user_id``, else the contact's ``user_id``); the BSUID also goes to
``metadata.user_id`` whenever Meta sends it, so the two keys can be joined later. The contact
name is the profile name of the ``contacts[]`` entry matching the sender, or of the only entry
(``wa_id`` and ``from`` do not always match, e.g. some Mexican and Brazilian numbers).

Statuses: sent, delivered, read, played, failed → ``StatusUpdate``; a failed one carries
``"<code> <title>: <details>"``. Any other value (legacy ``deleted``, ``warning``) is ignored.

Errors: not JSON or not an object → ``PayloadError(malformed=True)``; another ``object`` or a
shape we cannot read → ``PayloadError``. One message without any sender id is ignored rather than
failing the batch (a 4xx would make Meta redeliver the whole POST for days).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import from_json

from frontdesk.errors import PayloadError
from frontdesk.ingestion.channels.whatsapp.payloads import (
    OBJECT,
    AudioMessage,
    ButtonMessage,
    Contact,
    ContactCard,
    ContactsMessage,
    DocumentMessage,
    ImageMessage,
    InteractiveMessage,
    Location,
    LocationMessage,
    Media,
    Message,
    MessagesValue,
    OtherChange,
    PlatformError,
    Status,
    StickerMessage,
    TextMessage,
    UnsupportedMessage,
    VideoMessage,
    WebhookPayload,
)
from frontdesk.ingestion.events import (
    ContentType,
    DeliveryState,
    IgnoredEvent,
    InboundEvent,
    InboundMessage,
    MediaKind,
    MediaRef,
    StatusUpdate,
)
from frontdesk.ingestion.modality import message_event, normalise_text

DELIVERY_STATES: dict[str, DeliveryState] = {
    "sent": "sent",
    "delivered": "delivered",
    "read": "read",
    "played": "played",
    "failed": "failed",
}
MAX_REASON = 200  # IgnoredEvent.reason
MAX_ERROR = 1000  # StatusUpdate.error
MAX_PART = 100  # one name or address inside a placeholder


def parse_events(raw: bytes, account_id: str, config: Mapping[str, Any]) -> list[InboundEvent]:
    """The events in one webhook body, in payload order.

    ``config["phone_number_id"]`` is the business number this account answers as; changes about
    another number are ignored. Without it (an account made before it was required; every start
    warns about it) nothing is filtered."""
    payload = _parse(raw)
    number = config.get("phone_number_id")
    events: list[InboundEvent] = []
    try:
        for entry in payload.entry:
            for change in entry.changes:
                if isinstance(change, OtherChange):
                    events.append(_ignored(f"{change.field} change"))
                elif number and change.value.metadata.phone_number_id != str(number):
                    events.append(_ignored("another phone number"))
                else:
                    events.extend(_value_events(change.value, account_id))
    except ValidationError as exc:  # a value that fits the payload models but not our events
        raise _invalid(exc) from exc
    return events


def _parse(raw: bytes) -> WebhookPayload:
    try:
        # Not json.loads: it lets a lone surrogate escape ("\ud800") through, which no database can
        # store (a 500); pydantic's parser refuses it, like the other channels' parsers do.
        data = from_json(raw)
    except (ValueError, RecursionError) as exc:  # bad JSON, bad UTF-8, absurd nesting
        raise PayloadError("the body is not JSON", malformed=True) from exc
    if not isinstance(data, dict):
        raise PayloadError("the body must be a JSON object", malformed=True)
    if data.get("object") != OBJECT:
        raise PayloadError(f"not a WhatsApp webhook: object must be {OBJECT!r}")
    try:
        return WebhookPayload.model_validate(data)
    except ValidationError as exc:
        raise _invalid(exc) from exc


def _invalid(exc: ValidationError) -> PayloadError:
    details = [
        {"field": ".".join(map(str, e["loc"])), "problem": e["msg"]}
        for e in exc.errors(include_url=False, include_input=False, include_context=False)
    ]
    summary = "; ".join(f"{d['field']}: {d['problem']}" for d in details[:5])
    return PayloadError(f"invalid WhatsApp webhook: {summary}", details=details)


def _value_events(value: MessagesValue, account_id: str) -> list[InboundEvent]:
    events: list[InboundEvent] = [_message(m, value, account_id) for m in value.messages]
    events += [_status(s, account_id) for s in value.statuses]
    events += [_ignored(f"platform error: {_describe(e)}") for e in value.errors]
    return events or [_ignored("no messages or statuses")]


# -- messages


@dataclass(frozen=True)
class _Content:
    content_type: ContentType
    text: str | None = None
    media: MediaRef | None = None
    label: str | None = None
    reply_id: str | None = None


def _message(message: Message, value: MessagesValue, account_id: str) -> InboundMessage | IgnoredEvent:
    if message.group_id:
        return _ignored(f"group message ({message.type})")
    contact = _contact(message, value.contacts)
    user_id = message.from_user_id or (contact.user_id if contact else None)
    sender = message.from_ or user_id
    if not sender:
        return _ignored(f"{message.type} message without a sender id")
    content = _content(message)
    if isinstance(content, IgnoredEvent):
        return content
    metadata: dict[str, Any] = {
        "wamid": message.id,
        "phone_number_id": value.metadata.phone_number_id,
        "timestamp": message.timestamp,
    }
    if user_id:
        metadata["user_id"] = user_id
    if message.context and message.context.id:
        metadata["context_id"] = message.context.id
    if content.reply_id:
        metadata["reply_id"] = content.reply_id
    profile = contact.profile if contact else None
    return message_event(
        channel_account_id=account_id,
        contact_external_id=sender,
        channel_message_id=message.id,
        content_type=content.content_type,
        text=content.text,
        media=content.media,
        label=content.label,
        contact_name=(profile.name or profile.username) if profile else None,
        metadata=metadata,
    )


def _content(message: Message) -> _Content | IgnoredEvent:
    match message:
        case TextMessage():
            return _Content("text", message.text.body)
        case ImageMessage():
            return _Content("image", message.image.caption, _media("image", message.image))
        case AudioMessage():
            return _Content("voice" if message.audio.voice else "audio", media=_media("audio", message.audio))
        case StickerMessage():
            return _Content("sticker")
        case VideoMessage():
            return _Content("video", message.video.caption)
        case DocumentMessage():
            document = message.document
            if (document.mime_type or "").lower().startswith("image/"):
                return _Content("image", document.caption, _media("image", document))
            return _Content("file", document.caption, label=document.filename)
        case InteractiveMessage():
            reply = message.interactive.button_reply or message.interactive.list_reply
            if reply is None:
                return _ignored(f"interactive {message.interactive.type}")
            return _Content("text", reply.title, reply_id=reply.id)
        case ButtonMessage():
            return _Content("text", message.button.text, reply_id=message.button.payload)
        case LocationMessage():
            return _Content("text", _location_text(message.location))
        case ContactsMessage():
            return _Content("text", _contact_cards_text(message.contacts))
        case UnsupportedMessage() if message.unsupported and message.unsupported.type:
            return _ignored(f"unsupported: {message.unsupported.type}")
        case _:
            return _ignored(message.type)


def _contact(message: Message, contacts: tuple[Contact, ...]) -> Contact | None:
    keys = {k for k in (message.from_, message.from_user_id) if k}
    for contact in contacts:
        if contact.wa_id in keys or contact.user_id in keys:
            return contact
    return contacts[0] if len(contacts) == 1 else None


def _media(kind: MediaKind, media: Media) -> MediaRef | None:
    return MediaRef(kind=kind, ref=media.id, mime_type=media.mime_type) if media.id else None


def _location_text(location: Location) -> str:
    place = ", ".join(p for p in (_short(location.name), _short(location.address)) if p)
    coordinates = f"({_coordinate(location.latitude)}, {_coordinate(location.longitude)})"
    return f"[location: {place} {coordinates}]" if place else f"[location: {coordinates}]"


def _contact_cards_text(cards: Iterable[ContactCard]) -> str:
    names = [_short(_card_name(card)) for card in cards]
    shown = ", ".join(n for n in names if n)
    return f"[contact card: {shown}]" if shown else "[contact card]"


def _card_name(card: ContactCard) -> str | None:
    if card.name is None:
        return None
    return card.name.formatted_name or " ".join(p for p in (card.name.first_name, card.name.last_name) if p)


def _short(value: str | None) -> str:
    """One line, at most ``MAX_PART`` characters: a name inside a bracketed placeholder."""
    return " ".join(normalise_text(value).split())[:MAX_PART]


def _coordinate(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")


# -- statuses and errors


def _status(status: Status, account_id: str) -> StatusUpdate | IgnoredEvent:
    state = DELIVERY_STATES.get(status.status)
    if state is None:
        return _ignored(f"status {status.status}")
    error = None
    if state == "failed":
        error = "; ".join(_describe(e) for e in status.errors)[:MAX_ERROR] or None
    return StatusUpdate(channel_account_id=account_id, platform_message_id=status.id, status=state, error=error)


def _describe(error: PlatformError) -> str:
    """``131047 Re-engagement message: More than 24 hours have passed...``"""
    head = " ".join(str(p) for p in (error.code, error.title) if p not in (None, ""))
    detail = (error.error_data.details if error.error_data else None) or error.message
    if detail and detail != error.title:
        return f"{head}: {detail}" if head else detail
    return head or "no details"


def _ignored(reason: str) -> IgnoredEvent:
    return IgnoredEvent(reason=" ".join(reason.split())[:MAX_REASON])
