"""Pydantic models of the LINE webhook body: ``{"destination": "U…", "events": [...]}``.

Shapes follow ``line/line-openapi`` ``webhook.yml`` (``CallbackRequest``, ``Event``,
``*MessageContent``). We model what we read and let everything else through (``extra="ignore"``):
LINE adds fields, event types and message types over time, and an event type or message type we
do not know lands in a catch-all model instead of failing the whole POST and the customer
messages batched with it.

Limits on ids and URLs are ours, not LINE's: they match what ``InboundMessage`` and ``MediaRef``
accept, so an oversized value is a payload error here rather than a crash later.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from frontdesk.ingestion.events import PRINTABLE_ID

# Ids become our contact and message ids: no control characters (PostgreSQL refuses NUL).
Id = Annotated[str, Field(min_length=1, max_length=200, pattern=PRINTABLE_ID)]
Url = Annotated[str, Field(min_length=1, max_length=4000)]
Millis = Annotated[int, Field(ge=0)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


def _tag(value: Any, known: frozenset[str]) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if isinstance(kind, str) and kind in known else "other"


# -- where an event comes from


class Source(_Model):
    """``user`` (a 1:1 chat), ``group`` or ``room``; ``userId`` can be absent (user not consenting,
    non-message group events). One model rather than a union: we only branch on ``type``."""

    type: Annotated[str, Field(max_length=50)]
    user_id: Id | None = Field(default=None, alias="userId")
    group_id: Id | None = Field(default=None, alias="groupId")
    room_id: Id | None = Field(default=None, alias="roomId")


class DeliveryContext(_Model):
    is_redelivery: bool = Field(alias="isRedelivery")


# -- message contents (``message.type``)


class ContentProvider(_Model):
    """``line``: fetch the bytes from LINE's content API by message id. ``external``: the URLs."""

    type: Annotated[str, Field(max_length=50)]
    original_content_url: Url | None = Field(default=None, alias="originalContentUrl")
    preview_image_url: Url | None = Field(default=None, alias="previewImageUrl")


class ImageSet(_Model):
    """Present only when several images were sent at once; ``index``/``total`` are missing from
    LINE for Android 11.15 and earlier."""

    id: Id
    index: int | None = None
    total: int | None = None


class _Content(_Model):
    id: Id
    mark_as_read_token: str | None = Field(default=None, alias="markAsReadToken")
    # Required by webhook.yml for most types, but absent from older payloads and from audio/file.
    quote_token: str | None = Field(default=None, alias="quoteToken")
    quoted_message_id: Id | None = Field(default=None, alias="quotedMessageId")


class Emoji(_Model):
    index: int
    length: int
    product_id: str = Field(alias="productId")
    emoji_id: str = Field(alias="emojiId")


class TextContent(_Content):
    type: Literal["text"]
    text: str
    # LINE emoji arrive as "(love)"-style placeholders in ``text``; ``emojis`` says where.
    emojis: tuple[Emoji, ...] = ()


class ImageContent(_Content):
    type: Literal["image"]
    content_provider: ContentProvider = Field(alias="contentProvider")
    image_set: ImageSet | None = Field(default=None, alias="imageSet")


class VideoContent(_Content):
    type: Literal["video"]
    duration: Millis | None = None
    content_provider: ContentProvider | None = Field(default=None, alias="contentProvider")


class AudioContent(_Content):
    """Voice notes and audio files alike."""

    type: Literal["audio"]
    duration: Millis | None = None
    content_provider: ContentProvider = Field(alias="contentProvider")


class FileContent(_Content):
    type: Literal["file"]
    file_name: str = Field(alias="fileName")
    file_size: Annotated[int, Field(ge=0)] | None = Field(default=None, alias="fileSize")


class LocationContent(_Content):
    type: Literal["location"]
    title: str | None = None
    address: str | None = None
    latitude: float
    longitude: float


class StickerContent(_Content):
    type: Literal["sticker"]
    package_id: Id = Field(alias="packageId")
    sticker_id: Id = Field(alias="stickerId")
    # An open list in practice (STATIC, ANIMATION, ..., PER_STICKER_TEXT): kept as a string.
    resource_type: str | None = Field(default=None, alias="stickerResourceType")
    keywords: tuple[str, ...] = ()
    # What the customer typed on a message sticker (``MESSAGE``/``PER_STICKER_TEXT``).
    text: str | None = None


_CONTENT_TYPES = frozenset({"text", "image", "video", "audio", "file", "location", "sticker"})


def _none_of(known: frozenset[str]) -> dict[str, Any]:
    # For the JSON schema only (the tag already routes the known types elsewhere): without it a
    # known type would fit both its own model and the catch-all, and a "oneOf" of them would call
    # every real payload invalid.
    return {"not": {"enum": sorted(known)}}


class OtherContent(_Content):
    """A message type we do not model (LINE may add some); ignored, never rejected."""

    type: Annotated[str, Field(max_length=100, json_schema_extra=_none_of(_CONTENT_TYPES))]


MessageContent = Annotated[
    Annotated[TextContent, Tag("text")]
    | Annotated[ImageContent, Tag("image")]
    | Annotated[VideoContent, Tag("video")]
    | Annotated[AudioContent, Tag("audio")]
    | Annotated[FileContent, Tag("file")]
    | Annotated[LocationContent, Tag("location")]
    | Annotated[StickerContent, Tag("sticker")]
    | Annotated[OtherContent, Tag("other")],
    Discriminator(lambda v: _tag(v, _CONTENT_TYPES)),
]


# -- events (``events[].type``)


class _Event(_Model):
    type: Annotated[str, Field(max_length=100)]
    # "active" or "standby" (another channel owns the chat); a string so a new mode is ignored, not rejected.
    mode: Annotated[str, Field(max_length=50)] | None = None
    timestamp: Millis | None = None
    source: Source | None = None
    webhook_event_id: Id | None = Field(default=None, alias="webhookEventId")
    delivery_context: DeliveryContext | None = Field(default=None, alias="deliveryContext")


class MessageEvent(_Event):
    """A customer message: the only event we store. ``webhookEventId`` is our idempotency key, so
    it and ``deliveryContext`` are required here (webhook.yml requires them on every event)."""

    type: Literal["message"]
    mode: Annotated[str, Field(max_length=50)]
    timestamp: Millis
    webhook_event_id: Id = Field(alias="webhookEventId")
    delivery_context: DeliveryContext = Field(alias="deliveryContext")
    # Absent in standby mode.
    reply_token: str | None = Field(default=None, alias="replyToken")
    message: MessageContent


class FollowDetail(_Model):
    is_unblocked: bool = Field(alias="isUnblocked")


class FollowEvent(_Event):
    """The customer added the account as a friend or unblocked it."""

    type: Literal["follow"]
    reply_token: str | None = Field(default=None, alias="replyToken")
    follow: FollowDetail | None = None


class UnfollowEvent(_Event):
    """The customer blocked the account: pushes to them will fail from now on."""

    type: Literal["unfollow"]


class PostbackContent(_Model):
    data: str
    params: dict[str, str] | None = None


class PostbackEvent(_Event):
    type: Literal["postback"]
    reply_token: str | None = Field(default=None, alias="replyToken")
    postback: PostbackContent


class UnsendDetail(_Model):
    message_id: Id = Field(alias="messageId")


class UnsendEvent(_Event):
    """The customer took back one of their messages (``unsend.messageId`` is a ``message.id``)."""

    type: Literal["unsend"]
    unsend: UnsendDetail


_EVENT_TYPES = frozenset({"message", "follow", "unfollow", "postback", "unsend"})


class OtherEvent(_Event):
    """Every other event type (join, leave, beacon, videoPlayComplete, accountLink, ... and types
    LINE adds later): only the common fields, so an unknown type is ignored, never rejected."""

    type: Annotated[str, Field(max_length=100, json_schema_extra=_none_of(_EVENT_TYPES))]


Event = Annotated[
    Annotated[MessageEvent, Tag("message")]
    | Annotated[FollowEvent, Tag("follow")]
    | Annotated[UnfollowEvent, Tag("unfollow")]
    | Annotated[PostbackEvent, Tag("postback")]
    | Annotated[UnsendEvent, Tag("unsend")]
    | Annotated[OtherEvent, Tag("other")],
    Discriminator(lambda v: _tag(v, _EVENT_TYPES)),
]


class CallbackRequest(_Model):
    """The whole webhook body. ``events`` is empty for LINE's "Verify" ping."""

    destination: Id
    events: tuple[Event, ...]
