"""What a stored file is, judged from its bytes, and how it may be served from our own origin.

Only the types the pipeline uses are stored and served as themselves: the photos a vision model
reads (JPEG, PNG, GIF, WebP) and the voice notes and audio files the transcriber hears (Ogg, MP3,
AAC, MP4/M4A, AMR, WAV, FLAC: what Telegram, WhatsApp, Messenger and LINE send). Each is
recognised by its magic number. A declared type (a platform's ``Content-Type``, a document's
``mime_type``, a file name) never decides anything: it is kept only as the name of what the bytes
are (``audio/x-m4a`` for an MP4 container). Anything else (SVG, HTML, PDF, a "PNG" that is a
script) is ``application/octet-stream``, stored as ``.bin`` and served only as a download.

Serving decides from the bytes again, so a file stored by an earlier release under a dangerous
extension (``.svg``, ``.html``) is served safely too. See ``docs/media.md``.
"""

from __future__ import annotations

from typing import Final

NEUTRAL: Final = "application/octet-stream"
NEUTRAL_EXTENSION: Final = "bin"

# canonical type -> (extension, the other names platforms give it)
_ACCEPTED: Final[dict[str, tuple[str, frozenset[str]]]] = {
    "image/jpeg": ("jpg", frozenset({"image/jpg", "image/pjpeg"})),
    "image/png": ("png", frozenset()),
    "image/gif": ("gif", frozenset()),
    "image/webp": ("webp", frozenset()),
    "audio/ogg": ("ogg", frozenset({"audio/opus", "audio/x-ogg"})),
    "audio/mpeg": ("mp3", frozenset({"audio/mp3", "audio/mpeg3", "audio/x-mpeg"})),
    "audio/aac": ("aac", frozenset({"audio/x-aac", "audio/aacp"})),
    "audio/mp4": ("m4a", frozenset({"audio/x-m4a", "audio/m4a", "audio/3gpp", "audio/3gpp2"})),
    "audio/amr": ("amr", frozenset()),
    "audio/wav": ("wav", frozenset({"audio/x-wav", "audio/wave", "audio/vnd.wave"})),
    "audio/flac": ("flac", frozenset({"audio/x-flac"})),
}
ACCEPTED_TYPES: Final = frozenset(_ACCEPTED)
_CANONICAL: Final = {name: mime for mime, (_, aliases) in _ACCEPTED.items() for name in (mime, *aliases)}
_EXTENSION_TYPE: Final = {extension: mime for mime, (extension, _) in _ACCEPTED.items()}
# ISO base media (``ftyp``) brands of audio and video files; HEIC and AVIF photos share the box but
# no vision model here takes them, so they are not on the list.
_MP4_BRANDS: Final = frozenset(
    {b"M4A ", b"M4B ", b"M4P ", b"mp41", b"mp42", b"isom", b"iso2", b"iso4", b"iso5", b"iso6", b"dash"}
    | {b"3gp4", b"3gp5", b"3gp6", b"3gp7", b"3gg6", b"3ge6", b"3ge7", b"3g2a", b"MSNV", b"F4A ", b"F4B "}
)

# Every response under /media: the browser never guesses a type (nosniff), and whatever it shows
# runs nothing and loads nothing but the file itself, in an opaque origin (sandbox) that cannot
# read our cookies or storage. img-src/media-src 'self' let a browser's own viewer show a photo
# or play a voice note opened in a tab (that viewer is a document loading this very URL).
MEDIA_CSP: Final = "default-src 'none'; img-src 'self'; media-src 'self'; sandbox"
MEDIA_HEADERS: Final = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": MEDIA_CSP}


def sniff(data: bytes) -> str | None:
    """The canonical type of an accepted image or audio file, from its first bytes; None otherwise."""
    head = data[:16]
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"ID3"):
        return "audio/mpeg"
    if head.startswith(b"#!AMR\n"):
        return "audio/amr"
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head[4:8] == b"ftyp" and head[8:12] in _MP4_BRANDS:
        return "audio/mp4"
    return _audio_frame(head)


def _audio_frame(head: bytes) -> str | None:
    """A raw MP3 or ADTS AAC stream (no container): a frame header whose fields are all valid,
    so that any other file that happens to start with 0xFF (a UTF-16 text's byte-order mark) is not."""
    if len(head) < 3 or head[0] != 0xFF:
        return None
    if head[1] & 0xF6 == 0xF0:  # 12 sync bits, layer 00: ADTS
        return "audio/aac" if (head[2] >> 2) & 0x0F < 13 else None
    version, layer = (head[1] >> 3) & 0x03, (head[1] >> 1) & 0x03
    bitrate, rate = head[2] >> 4, (head[2] >> 2) & 0x03
    if head[1] & 0xE0 == 0xE0 and version != 0x01 and layer != 0 and bitrate not in (0, 0x0F) and rate != 0x03:
        return "audio/mpeg"
    return None


def content_type(data: bytes) -> str:
    """The type ``data`` is stored and served as: an accepted type, else ``application/octet-stream``."""
    return sniff(data) or NEUTRAL


def stored_type(data: bytes, declared: str | None) -> str:
    """What to record for ``data`` that a platform declared as ``declared``: the bytes' own type,
    under the declared name when that is another name for it (``audio/x-m4a``, ``audio/ogg;
    codecs=opus`` -> ``audio/ogg``); ``application/octet-stream`` when the bytes are none of ours."""
    actual = sniff(data)
    if actual is None:
        return NEUTRAL
    bare = (declared or "").split(";")[0].strip().lower()
    return bare if _CANONICAL.get(bare) == actual else actual


def extension_for(mime_type: str) -> str:
    """The key extension of an accepted type (by any of its names); ``bin`` for anything else."""
    canonical = _CANONICAL.get(mime_type.split(";")[0].strip().lower())
    return _ACCEPTED[canonical][0] if canonical else NEUTRAL_EXTENSION


def type_for_extension(extension: str) -> str:
    """The type a key's extension stands for: an accepted type, else ``application/octet-stream``."""
    return _EXTENSION_TYPE.get(extension.lower(), NEUTRAL)


def inline(mime_type: str) -> bool:
    """Whether a file of this type may be shown by a browser (an accepted image or audio type)."""
    return mime_type in ACCEPTED_TYPES


def attachment(file_stem: str) -> str:
    """The ``Content-Disposition`` of a file that is none of our types: a download named ``.bin``,
    never the name or extension it arrived with."""
    safe = "".join(c for c in file_stem if c.isascii() and (c.isalnum() or c in "-_")) or "file"
    return f'attachment; filename="{safe[:80]}.{NEUTRAL_EXTENSION}"'
