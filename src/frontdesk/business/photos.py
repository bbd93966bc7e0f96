"""Gallery photos as they arrive (a console upload, a file named by an import): the type is read
from the bytes, never from a file name or a browser's word for it, and the size is capped."""

from __future__ import annotations

from frontdesk.errors import PayloadError, TooLargeError
from frontdesk.platform.media_types import sniff

MAX_PHOTO_BYTES = 5 * 1024 * 1024  # a product photo for a chat: larger is a camera original
PHOTO_TYPES = "PNG, JPEG, WebP or GIF"


def photo_type(data: bytes) -> str | None:
    """The MIME type of an image we accept, judged from its first bytes; None for anything else."""
    mime = sniff(data)
    return mime if mime is not None and mime.startswith("image/") else None


def checked_photo(data: bytes, what: str, max_bytes: int = MAX_PHOTO_BYTES) -> str:
    """The photo's MIME type, or a ``PayloadError`` saying what is wrong with ``what``."""
    if len(data) > max_bytes:
        raise TooLargeError(f"{what}: {len(data):,} bytes, over the limit of {max_bytes:,} bytes per photo")
    if not data:
        raise PayloadError(f"{what}: the file is empty")
    mime = photo_type(data)
    if mime is None:
        raise PayloadError(f"{what}: not a {PHOTO_TYPES} image (judged from its content)")
    return mime
