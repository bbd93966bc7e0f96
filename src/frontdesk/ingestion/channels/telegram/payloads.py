"""The Telegram Bot API ``Update`` as it reaches our webhook, reduced to the fields we read.

Unknown fields are ignored: nearly every Bot API release adds some. The fields we do read are
strict (an id is a JSON integer, never a string) and bounded like the ``MediaRef`` they feed (an
integer to 64 bits, as the Bot API promises), so a payload that passes here cannot fail later when
we build our own events.
Reference: https://core.telegram.org/bots/api#update
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator


def _whole(value: object) -> object:
    # JSON has one number type: 42.0 is the integer 42 to JSON Schema (and so to our OpenAPI
    # document). Strings and booleans stay refused by the strict int that follows.
    return int(value) if isinstance(value, float) and value.is_integer() else value


# Ids and counts fit a signed 64-bit integer (the Bot API's promise); a longer one would overflow
# our own ids (``update:<n>`` is at most 300 characters, a contact id 200).
# (The validator after the bounds still runs first; in this order the schema keeps the bounds.)
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1), BeforeValidator(_whole)]
NonNegative = Annotated[int, Field(ge=0, le=2**63 - 1), BeforeValidator(_whole)]
FileId = Annotated[str, Field(min_length=1, max_length=4000)]
MimeType = Annotated[str, Field(max_length=200)]

_UPDATE_TYPE = re.compile(r"[a-z_]{1,40}")


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)


class User(_Payload):
    id: Int64
    is_bot: bool
    first_name: str
    last_name: str | None = None


class Chat(_Payload):
    id: Int64
    # "private", "group", "supergroup" or "channel"; a plain str so a new kind is not a 422.
    type: str


class File(_Payload):
    """Any downloadable file: video, video note and animation need no more than this."""

    file_id: FileId
    file_size: NonNegative | None = None


class PhotoSize(File):
    width: NonNegative
    height: NonNegative


class AudioFile(File):
    """Both ``voice`` (a recorded note) and ``audio`` (a music file) carry these."""

    duration: NonNegative
    mime_type: MimeType | None = None


class Document(File):
    file_name: str | None = None
    mime_type: MimeType | None = None


class Sticker(File):
    emoji: str | None = None


class Message(_Payload):
    message_id: Int64
    chat: Chat
    # Absent for channel posts; present in every private chat.
    sender: User | None = Field(default=None, alias="from")
    text: str | None = None
    caption: str | None = None
    photo: list[PhotoSize] | None = None
    voice: AudioFile | None = None
    audio: AudioFile | None = None
    document: Document | None = None
    # Telegram also sets ``document`` on an animation, for clients that predate GIFs.
    animation: File | None = None
    sticker: Sticker | None = None
    video: File | None = None
    video_note: File | None = None
    media_group_id: str | None = None


class Update(_Payload):
    """One webhook delivery. Besides ``update_id`` Telegram sets exactly one optional field, whose
    name is the update's type; ``update_type`` records that name for the kinds we do not model
    (``callback_query``, ``my_chat_member``, ``channel_post``...)."""

    update_id: Int64
    message: Message | None = None
    edited_message: Message | None = None
    update_type: str = "empty"

    @model_validator(mode="before")
    @classmethod
    def _name_update_type(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data  # pydantic reports the wrong type
        present = [key for key, value in data.items() if key not in ("update_id", "update_type") and value is not None]
        name = str(present[0]) if present else "empty"
        return {**data, "update_type": name if _UPDATE_TYPE.fullmatch(name) else "unknown"}
