"""Frozen models of the WhatsApp Cloud API webhook body (Meta's ``whatsapp_business_account`` object).

    {"object": "whatsapp_business_account",
     "entry": [{"id": "<WABA id>", "changes": [{"field": "messages", "value": {
         "messaging_product": "whatsapp",
         "metadata": {"display_phone_number": "15550783881", "phone_number_id": "106540352242922"},
         "contacts": [...], "messages": [...], "statuses": [...], "errors": [...]}}]}]}

Only what we read is modelled and unknown keys are ignored, so a new Meta field never breaks
parsing. A change with another ``field`` (account_update, template updates, calls...) becomes an
``OtherChange`` and a message type we do not model an ``OtherMessage``: one new type must not
fail a whole batch. Shapes follow Meta's per-type webhook references; see channels.md §3.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from frontdesk.ingestion.events import PRINTABLE_ID

OBJECT = "whatsapp_business_account"

# Ids become our contact and message ids: no control characters (PostgreSQL refuses NUL).
MessageId = Annotated[str, Field(min_length=1, max_length=300, pattern=PRINTABLE_ID)]
# A phone number ("16505551234") or a business-scoped user id ("US.13491208655302741918").
UserId = Annotated[str, Field(min_length=1, max_length=200, pattern=PRINTABLE_ID)]


class _Payload(BaseModel):
    # Meta's samples (and some older payloads) send ids and timestamps as JSON numbers.
    model_config = ConfigDict(frozen=True, extra="ignore", coerce_numbers_to_str=True)


class ErrorData(_Payload):
    details: str | None = None


class PlatformError(_Payload):
    """An ``errors[]`` item: on a failed status, an unsupported message, or a whole change."""

    code: int | str | None = None
    title: str | None = None
    message: str | None = None
    error_data: ErrorData | None = None
    href: str | None = None


class Metadata(_Payload):
    """The business number the change is about."""

    display_phone_number: str | None = None
    phone_number_id: Annotated[str, Field(min_length=1, max_length=100)]


class Profile(_Payload):
    name: str | None = None
    username: str | None = None


class Contact(_Payload):
    """``value.contacts[]``: the customer behind the messages.

    ``wa_id`` is omitted when the user hides their phone number behind a username; ``user_id``
    (the business-scoped user id, BSUID) is present from 2026 on."""

    wa_id: str | None = None  # only compared with ``from``, never stored
    user_id: Annotated[str, Field(pattern=PRINTABLE_ID)] | None = None  # may become the contact's id
    profile: Profile | None = None


class Context(_Payload):
    """Set when the message replies to (or was forwarded from) another one."""

    id: str | None = None
    from_: str | None = Field(default=None, alias="from")
    forwarded: bool | None = None
    frequently_forwarded: bool | None = None


# -- message bodies


class Text(_Payload):
    body: str


class Media(_Payload):
    """The media fields every image, audio, sticker, video and document shares."""

    id: Annotated[str, Field(max_length=4000)] | None = None  # the media id to GET from the Graph API
    mime_type: Annotated[str, Field(max_length=200)] | None = None
    sha256: str | None = None


class Image(Media):
    caption: str | None = None


class Audio(Media):
    voice: bool = False  # true for a voice note recorded in the chat, false for a shared audio file


class Sticker(Media):
    animated: bool = False


class Video(Media):
    caption: str | None = None


class Document(Media):
    caption: str | None = None
    filename: str | None = None


class Location(_Payload):
    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)
    name: str | None = None
    address: str | None = None
    url: str | None = None


class ContactName(_Payload):
    formatted_name: str | None = None
    first_name: str | None = None
    last_name: str | None = None


class ContactCard(_Payload):
    """One shared contact card (``type: contacts``); phones, emails... are not read."""

    name: ContactName | None = None


class Reply(_Payload):
    """``button_reply`` / ``list_reply``: what the customer tapped in our interactive message."""

    id: str | None = None
    title: str
    description: str | None = None


class Interactive(_Payload):
    type: str  # button_reply, list_reply, nfm_reply (flows), call_permission_reply...
    button_reply: Reply | None = None
    list_reply: Reply | None = None


class Button(_Payload):
    """A quick-reply button of a template message."""

    text: str
    payload: str | None = None


class Reaction(_Payload):
    message_id: str | None = None
    emoji: str | None = None


class System(_Payload):
    type: str | None = None  # user_changed_number, customer_identity_changed...
    body: str | None = None


class Order(_Payload):
    catalog_id: str | None = None
    text: str | None = None


class Unsupported(_Payload):
    type: str | None = None  # poll_creation, group_invite, ... (Meta's list grows)


# -- messages: one model per type, chosen by ``type``


class _Message(_Payload):
    id: MessageId
    # ``from`` is the sender's phone number; it is left out for users who hide it behind a
    # username, and the business-scoped id is the key then.
    from_: UserId | None = Field(default=None, alias="from")
    from_user_id: UserId | None = None
    group_id: str | None = None  # set when the message was posted in a group (Groups API)
    timestamp: str | None = None
    context: Context | None = None
    errors: tuple[PlatformError, ...] = ()


class TextMessage(_Message):
    type: Literal["text"]
    text: Text


class ImageMessage(_Message):
    type: Literal["image"]
    image: Image


class AudioMessage(_Message):
    type: Literal["audio"]
    audio: Audio


class StickerMessage(_Message):
    type: Literal["sticker"]
    sticker: Sticker


class VideoMessage(_Message):
    type: Literal["video"]
    video: Video


class DocumentMessage(_Message):
    type: Literal["document"]
    document: Document


class LocationMessage(_Message):
    type: Literal["location"]
    location: Location


class ContactsMessage(_Message):
    type: Literal["contacts"]
    contacts: tuple[ContactCard, ...] = ()


class InteractiveMessage(_Message):
    type: Literal["interactive"]
    interactive: Interactive


class ButtonMessage(_Message):
    type: Literal["button"]
    button: Button


class ReactionMessage(_Message):
    type: Literal["reaction"]
    reaction: Reaction | None = None


class SystemMessage(_Message):
    type: Literal["system"]
    system: System | None = None


class OrderMessage(_Message):
    type: Literal["order"]
    order: Order | None = None


class UnsupportedMessage(_Message):
    type: Literal["unsupported"]
    unsupported: Unsupported | None = None


_MESSAGE_TYPES = frozenset(
    {
        "text",
        "image",
        "audio",
        "sticker",
        "video",
        "document",
        "location",
        "contacts",
        "interactive",
        "button",
        "reaction",
        "system",
        "order",
        "unsupported",
    }
)


class OtherMessage(_Message):
    """Any type we do not model: the legacy ``unknown``, ``request_welcome``, newer ones."""

    # The schema says "not a type we model" (the tag routes those elsewhere); without it a known
    # type would fit two branches, and the OpenAPI document's "oneOf" would refuse real payloads.
    type: Annotated[str, Field(json_schema_extra={"not": {"enum": sorted(_MESSAGE_TYPES)}})]


def _message_tag(value: Any) -> str | None:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if not isinstance(kind, str):
        return None  # pydantic reports the missing tag
    return kind if kind in _MESSAGE_TYPES else "other"


Message = Annotated[
    Annotated[TextMessage, Tag("text")]
    | Annotated[ImageMessage, Tag("image")]
    | Annotated[AudioMessage, Tag("audio")]
    | Annotated[StickerMessage, Tag("sticker")]
    | Annotated[VideoMessage, Tag("video")]
    | Annotated[DocumentMessage, Tag("document")]
    | Annotated[LocationMessage, Tag("location")]
    | Annotated[ContactsMessage, Tag("contacts")]
    | Annotated[InteractiveMessage, Tag("interactive")]
    | Annotated[ButtonMessage, Tag("button")]
    | Annotated[ReactionMessage, Tag("reaction")]
    | Annotated[SystemMessage, Tag("system")]
    | Annotated[OrderMessage, Tag("order")]
    | Annotated[UnsupportedMessage, Tag("unsupported")]
    | Annotated[OtherMessage, Tag("other")],
    Discriminator(_message_tag),
]


# -- statuses of our own sends


class ConversationOrigin(_Payload):
    type: str | None = None


class Conversation(_Payload):
    """Conversation-based pricing window (API v23 and lower)."""

    id: str | None = None
    expiration_timestamp: str | None = None
    origin: ConversationOrigin | None = None


class Pricing(_Payload):
    billable: bool | None = None  # deprecated by Meta in favour of type + category
    pricing_model: str | None = None  # CBP, then PMP
    type: str | None = None  # regular, free_customer_service, free_entry_point
    category: str | None = None


class Status(_Payload):
    """``value.statuses[]``: what happened to one message we sent.

    ``status`` stays a plain string: sent, delivered, read, failed, played (voice notes), and
    legacy or future values we ignore."""

    id: MessageId
    status: str
    timestamp: str | None = None
    recipient_id: str | None = None
    recipient_user_id: str | None = None
    biz_opaque_callback_data: str | None = None
    conversation: Conversation | None = None
    pricing: Pricing | None = None
    errors: tuple[PlatformError, ...] = ()


# -- envelope


class MessagesValue(_Payload):
    messaging_product: str | None = None
    metadata: Metadata
    contacts: tuple[Contact, ...] = ()
    messages: tuple[Message, ...] = ()
    statuses: tuple[Status, ...] = ()
    errors: tuple[PlatformError, ...] = ()  # a system- or account-level problem, not one message


class MessagesChange(_Payload):
    field: Literal["messages"]
    value: MessagesValue


class OtherChange(_Payload):
    """A subscribed field other than ``messages``; its value is not read."""

    field: Annotated[str, Field(json_schema_extra={"not": {"const": "messages"}})]  # (see OtherMessage)


def _change_tag(value: Any) -> str | None:
    field = value.get("field") if isinstance(value, dict) else getattr(value, "field", None)
    if not isinstance(field, str):
        return None
    return "messages" if field == "messages" else "other"


Change = Annotated[
    Annotated[MessagesChange, Tag("messages")] | Annotated[OtherChange, Tag("other")],
    Discriminator(_change_tag),
]


class Entry(_Payload):
    id: str | None = None  # the WhatsApp Business Account id
    changes: tuple[Change, ...]


class WebhookPayload(_Payload):
    object: str
    entry: tuple[Entry, ...]
