"""Meta's webhook body for Messenger (``object: "page"``) and Instagram (``object: "instagram"``).

Only the fields we read are modelled; everything else is ignored, so a new field from Meta never
breaks parsing. Events we recognise but do not read are ``Opaque``: present or absent is all we
need to name them in the webhook log.

Shapes follow Meta's webhook references (messages, message_echoes, message_deliveries,
message_reads, messaging_seen, messaging_postbacks, message_reactions, standby) and the Instagram
webhook examples.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from frontdesk.ingestion.events import PRINTABLE_ID

# Ids become our contact and message ids: no control characters (PostgreSQL refuses NUL).
Id = Annotated[str, Field(min_length=1, max_length=200, pattern=PRINTABLE_ID)]
# Our channel_message_id is ``mid`` or ``f"{mid}#{i}"`` and holds at most 300 characters.
Mid = Annotated[str, Field(min_length=1, max_length=290, pattern=PRINTABLE_ID)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Opaque(_Model):
    """An event object we recognise but do not read (optin, referral, handover...)."""


class Party(_Model):
    """``sender`` / ``recipient``. A checkbox-plugin optin names the person by ``user_ref``, not ``id``."""

    id: Id | None = None
    user_ref: str | None = None


class Coordinates(_Model):
    lat: float
    long: float


class AttachmentPayload(_Model):
    url: str | None = None
    title: str | None = None
    # Meta sends it as a JSON number; accept a string too.
    sticker_id: int | str | None = None
    coordinates: Coordinates | None = None


class Attachment(_Model):
    """``type`` is image, audio, video, file, sticker, reel, ig_reel, post, ig_post, share,
    story_mention, fallback, location, template, appointment_booking, like_heart... (open set)."""

    type: str = Field(min_length=1, max_length=100)
    # "For unsupported shares ... a fallback with no payload might be sent."
    payload: AttachmentPayload | None = None


class Story(_Model):
    id: str | None = None
    url: str | None = None


class ReplyTo(_Model):
    """An inline reply to one message (``mid``), or on Instagram a reply to a story (``story``)."""

    mid: str | None = None
    story: Story | None = None


class QuickReply(_Model):
    payload: str | None = None


class Message(_Model):
    mid: Mid
    text: str | None = None
    attachments: tuple[Attachment, ...] = ()
    is_echo: bool = False
    # A JSON number in Meta's examples.
    app_id: int | str | None = None
    is_deleted: bool = False
    is_unsupported: bool = False
    reply_to: ReplyTo | None = None
    quick_reply: QuickReply | None = None
    # Legacy: sticker messages also carried the sticker id at message level.
    sticker_id: int | str | None = None


class Delivery(_Model):
    """Messenger ``message_deliveries``: ``watermark`` always, ``mids`` sometimes."""

    mids: tuple[str, ...] = ()
    watermark: int | None = None


class Read(_Model):
    """Messenger ``message_reads`` carries ``watermark``; Instagram ``messaging_seen`` carries ``mid``."""

    watermark: int | None = None
    mid: str | None = None


class Reaction(_Model):
    mid: str | None = None
    action: str | None = None
    reaction: str | None = None
    emoji: str | None = None


class Postback(_Model):
    mid: str | None = None
    title: str | None = None
    payload: str | None = None


class MessagingEvent(_Model):
    """One item of ``entry[].messaging[]`` or ``entry[].standby[]``; exactly one of the event
    objects is set."""

    sender: Party | None = None
    recipient: Party | None = None
    timestamp: int | None = None
    message: Message | None = None
    delivery: Delivery | None = None
    read: Read | None = None
    reaction: Reaction | None = None
    postback: Postback | None = None
    referral: Opaque | None = None
    optin: Opaque | None = None
    message_edit: Opaque | None = None
    account_linking: Opaque | None = None
    pass_thread_control: Opaque | None = None
    take_thread_control: Opaque | None = None
    request_thread_control: Opaque | None = None
    app_roles: Opaque | None = None
    policy_enforcement: Opaque | None = None
    game_play: Opaque | None = None
    response_feedback: Opaque | None = None


class Change(_Model):
    """``entry[].changes[]``: feed, comments, mentions... (not messaging; we only name the field)."""

    field: str | None = Field(default=None, max_length=100)


class Entry(_Model):
    """``id`` is the Page id (Messenger) or the Instagram professional account id (Instagram)."""

    id: Id
    time: int | None = None
    messaging: tuple[MessagingEvent, ...] = ()
    standby: tuple[MessagingEvent, ...] = ()
    changes: tuple[Change, ...] = ()


class Envelope(_Model):
    """The whole POST body. Meta batches: several entries, each with several events."""

    object: str
    entry: tuple[Entry, ...] = Field(min_length=1)
