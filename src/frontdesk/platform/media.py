"""The media store port: customer images and audio re-hosted from platforms (whose URLs expire).

``LocalMediaStore`` keeps files in a directory (the embedded default); an S3-compatible store
implements the same port for many instances. Objects are addressed by an opaque key; readers
outside the process (a vision model, a platform fetching an image) get a signed, expiring URL.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import mimetypes
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from frontdesk.errors import NotFoundError

if TYPE_CHECKING:
    from frontdesk.settings import Settings

KEY_PATTERN = re.compile(r"[a-z0-9]{2}/[a-z0-9]{40}\.[a-z0-9]{1,5}")
SIGNING_KEY_FILE = ".signing-key"


@dataclass(frozen=True)
class StoredMedia:
    key: str
    mime_type: str
    size: int


class MediaStore(Protocol):
    async def put(self, data: bytes, mime_type: str) -> StoredMedia: ...

    async def get(self, key: str) -> tuple[bytes, str]: ...

    def signed_path(self, key: str, ttl_s: float | None = None) -> str:
        """``/media/m/<key>?exp=…&sig=…``: append to the public base URL."""
        ...

    def verify(self, key: str, expires: int, signature: str) -> bool: ...


def extension_for(mime_type: str) -> str:
    guessed = mimetypes.guess_extension(mime_type.split(";")[0].strip()) or ".bin"
    return {".jpe": ".jpg", ".oga": ".ogg"}.get(guessed, guessed).lstrip(".")[:5] or "bin"


class LocalMediaStore:
    """Files under ``root``, named by content hash (the same bytes twice are stored once)."""

    def __init__(self, root: Path, signing_key: bytes | None = None, *, url_ttl_s: float = 3600) -> None:
        self._root = root
        self._signing_key = signing_key
        self._url_ttl_s = url_ttl_s

    def _key_bytes(self) -> bytes:
        if self._signing_key is None:
            self._signing_key = _load_or_create_key(self._root / SIGNING_KEY_FILE)
        return self._signing_key

    async def put(self, data: bytes, mime_type: str) -> StoredMedia:
        digest = hashlib.sha256(data).hexdigest()[:40]
        key = f"{digest[:2]}/{digest}.{extension_for(mime_type)}"
        path = self._root / key
        if not path.exists():
            await asyncio.to_thread(_write_atomically, path, data)
        return StoredMedia(key, mime_type, len(data))

    async def get(self, key: str) -> tuple[bytes, str]:
        if not KEY_PATTERN.fullmatch(key) or not (self._root / key).is_file():
            raise NotFoundError(f"no media {key!r}")
        data = await asyncio.to_thread((self._root / key).read_bytes)
        return data, mimetypes.guess_type(key)[0] or "application/octet-stream"

    def signed_path(self, key: str, ttl_s: float | None = None) -> str:
        expires = int(time.time() + (self._url_ttl_s if ttl_s is None else ttl_s))
        return f"/media/m/{key}?exp={expires}&sig={self._sign(key, expires)}"

    def verify(self, key: str, expires: int, signature: str) -> bool:
        if expires < time.time():
            return False
        return hmac.compare_digest(self._sign(key, expires), signature)

    def _sign(self, key: str, expires: int) -> str:
        mac = hmac.new(self._key_bytes(), f"{key}\n{expires}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac[:18]).decode()


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(path.suffix + f".{secrets.token_hex(4)}.part")
    partial.write_bytes(data)
    partial.replace(path)


def _load_or_create_key(path: Path) -> bytes:
    """One random key per media directory, so signed URLs survive a restart; instances sharing
    a directory share the key."""
    if path.is_file():
        return path.read_bytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    partial = path.with_suffix(f".{secrets.token_hex(4)}.part")
    partial.write_bytes(key)
    try:
        partial.rename(path) if not path.exists() else partial.unlink()
    except FileExistsError:
        partial.unlink()
    path.chmod(0o600)
    return path.read_bytes()


def build_media_store(settings: Settings) -> MediaStore:
    """The store the settings name (``media_store``): the local directory by default."""
    return LocalMediaStore(
        settings.media_dir,
        settings.media_signing_key.encode() if settings.media_signing_key else None,
        url_ttl_s=settings.media_url_ttl_s,
    )
