"""Modality rules every adapter shares (invariant 4): what a customer message becomes in our store.

- Text is normalised (NFC, no control characters, HTML stripped and entities decoded when the
  platform sends markup).
- Images and audio are stored *pending* with a placeholder; a ``prepare_media`` job re-hosts them
  (and transcribes audio), then marks the row ready. The readiness gate holds the turn meanwhile.
- Stickers, videos and files become labelled placeholders the model can read.
- A text message with no text left after normalisation is ignored, not stored. Media that
  cannot be fetched is still stored as ``[image: not available]`` so it can be acknowledged.
"""

from __future__ import annotations

import html
import re
import unicodedata
from html.parser import HTMLParser
from typing import Any, Literal

from frontdesk.ingestion.events import ContentType, IgnoredEvent, InboundMessage, MediaRef

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SPACES = re.compile(r"[ \t\u00a0]+")
_BLANK_LINES = re.compile(r"\n{3,}")

PLACEHOLDER_LABELS: dict[str, str] = {
    "image": "image",
    "audio": "audio message",
    "voice": "voice note",
    "video": "video",
    "sticker": "sticker",
    "file": "file",
}
PENDING_NOTE = {"image": "loading", "audio": "being transcribed", "voice": "being transcribed"}


class _TextOnly(HTMLParser):
    _BREAKS = frozenset({"br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._BREAKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def strip_html(value: str) -> str:
    """Visible text of an HTML fragment, entities decoded, block tags as line breaks."""
    parser = _TextOnly()
    parser.feed(value)
    parser.close()
    return html.unescape("".join(parser.parts))


def normalise_text(value: str | None, *, markup: Literal["plain", "html"] = "plain") -> str:
    """Text as we store it: NFC, no control characters (PostgreSQL refuses NUL), no runs of
    blanks, trimmed."""
    if not value:
        return ""
    text = strip_html(value) if markup == "html" else value
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _CONTROL.sub("", text)
    text = "\n".join(_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", text).strip()


def placeholder(content_type: ContentType, label: str | None = None, note: str | None = None) -> str:
    """``[sticker: 😀]``, ``[file: menu.pdf]``, ``[voice note: being transcribed]``."""
    name = PLACEHOLDER_LABELS.get(content_type, content_type)
    detail = ": ".join(p for p in (normalise_text(label)[:120] if label else "", note or "") if p)
    return f"[{name}: {detail}]" if detail else f"[{name}]"


def message_event(
    *,
    channel_account_id: str,
    contact_external_id: str,
    channel_message_id: str,
    content_type: ContentType = "text",
    text: str | None = None,
    markup: Literal["plain", "html"] = "plain",
    media: MediaRef | None = None,
    label: str | None = None,
    contact_name: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> InboundMessage | IgnoredEvent:
    """Build the stored form of one customer message.

    ``text`` is the message text or the media caption. ``media`` is set for an image or audio we
    can fetch; it makes the row pending. ``label`` names a sticker (its emoji) or a file (its
    name). Returns ``IgnoredEvent`` when nothing usable is left."""
    body = normalise_text(text, markup=markup)
    meta = dict(metadata or {})
    status: Literal["ready", "pending"] = "ready"
    if content_type == "text":
        if not body:
            return IgnoredEvent(reason="empty message")
        content = body
    elif media is not None and content_type in ("image", "audio", "voice"):
        status = "pending"
        if body:
            meta["caption"] = body
        content = _join(placeholder(content_type, note=PENDING_NOTE[content_type]), body)
    elif content_type in ("image", "audio", "voice"):
        # Media we cannot fetch (too large, no link): still stored, so the agent can say it could
        # not open it instead of the customer hearing nothing.
        content = _join(placeholder(content_type, label, note="not available"), body)
    else:
        content = _join(placeholder(content_type, label), body)
    name = normalise_text(contact_name)[:200] or None
    return InboundMessage(
        channel_account_id=channel_account_id,
        contact_external_id=contact_external_id,
        channel_message_id=channel_message_id,
        content_type=content_type,
        text=content,
        contact_name=name,
        status=status,
        media=media,
        metadata=meta,
    )


def _join(head: str, body: str) -> str:
    return f"{head} {body}" if body else head
