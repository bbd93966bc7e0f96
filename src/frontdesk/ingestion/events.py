"""Our own inbound types: adapters parse platform payloads into these, the core sees nothing else."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ContentType = Literal["text", "image", "audio", "voice", "video", "sticker", "file"]


class InboundMessage(BaseModel):
    """One customer message, authenticated and bound to a channel account by the adapter."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["message"] = "message"
    channel_account_id: str
    contact_external_id: str = Field(min_length=1, max_length=200)
    channel_message_id: str = Field(min_length=1, max_length=300)
    content_type: ContentType = "text"
    text: str
    contact_name: str | None = None
    # "pending": media still being prepared; the readiness gate waits for it (invariant 4).
    status: Literal["ready", "pending"] = "ready"
    metadata: dict[str, Any] = Field(default_factory=dict)
