"""Our own inbound types: adapters parse platform payloads into these, the core sees nothing else.

An adapter turns one webhook call into a list of ``InboundEvent``s: customer messages to store,
delivery-status updates for our own sends, and events it ignores on purpose (echoes, read
receipts...), each with a reason so the webhook log can say why nothing happened.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# What a platform id must look like before it becomes one of our keys (a contact's external id, a
# message's idempotency key): printable, since PostgreSQL refuses NUL in text and a control
# character in an id is never a platform's, only a forger's. Payload models put it on their ids.
PRINTABLE_ID = r"^[^\x00-\x1f\x7f]*$"  # emptiness is min_length's business

ContentType = Literal["text", "image", "audio", "voice", "video", "sticker", "file"]
MediaKind = Literal["image", "audio"]


class MediaRef(BaseModel):
    """How to fetch a customer's image or audio from the platform later (a job does it).

    ``ref`` is whatever the platform's download needs: a Telegram ``file_id``, a WhatsApp media
    id, a LINE message id, or a CDN URL (Messenger, Instagram, LINE external content)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: MediaKind
    ref: str = Field(min_length=1, max_length=4000)
    mime_type: str | None = Field(default=None, max_length=200)
    size: int | None = Field(default=None, ge=0)
    duration_s: float | None = Field(default=None, ge=0)


class InboundMessage(BaseModel):
    """One customer message, authenticated and bound to a channel account by the adapter."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["message"] = "message"
    channel_account_id: str
    contact_external_id: str = Field(min_length=1, max_length=200)
    channel_message_id: str = Field(min_length=1, max_length=300)
    content_type: ContentType = "text"
    text: str
    contact_name: str | None = Field(default=None, max_length=200)
    # "pending": media still being prepared; the readiness gate waits for it (invariant 4).
    status: Literal["ready", "pending"] = "ready"
    media: MediaRef | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


DeliveryState = Literal["sent", "delivered", "read", "played", "failed"]


class StatusUpdate(BaseModel):
    """The platform reports what happened to one of our own sends (WhatsApp ``statuses[]``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["status"] = "status"
    channel_account_id: str
    platform_message_id: str = Field(min_length=1, max_length=300)
    status: DeliveryState
    error: str | None = Field(default=None, max_length=1000)


class IgnoredEvent(BaseModel):
    """A legitimate event we answer 200 and do nothing with (echo, read receipt, empty message)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["ignored"] = "ignored"
    reason: str = Field(max_length=200)


InboundEvent = Annotated[InboundMessage | StatusUpdate | IgnoredEvent, Field(discriminator="type")]
