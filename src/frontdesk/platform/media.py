"""The media store port: customer images and audio re-hosted from platforms (whose URLs expire).

``LocalMediaStore`` keeps files in a directory (the embedded default); ``media_s3.S3MediaStore``
implements the same port on an S3-compatible bucket for many instances. Objects are addressed by
an opaque key under the tenant's own prefix (``<tenant>/<xx>/<hash>.<ext>``); readers outside the
process (a vision model, a platform fetching an image) get a signed, expiring URL from
``signed_url``. A file's type, and so its extension, comes from its bytes (``media_types``): only
the image and audio types the pipeline uses are stored as themselves. See ``docs/media.md``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from frontdesk.errors import NotFoundError
from frontdesk.platform.ids import TenantId
from frontdesk.platform.media_types import content_type, extension_for, stored_type

if TYPE_CHECKING:
    from frontdesk.settings import Settings

# A tenant id that is already a safe lowercase path segment is used as it is (readable buckets);
# any other id becomes ``_`` + a hash of it. Plain segments never start with ``_``, so two tenants
# can never share a prefix, and none can climb out of its own (no dots, no slashes).
_PLAIN_TENANT = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
TENANT_SEGMENT = r"(?:[a-z0-9][a-z0-9_-]{0,39}|_[a-f0-9]{32})"
KEY_PATTERN = re.compile(rf"{TENANT_SEGMENT}/[a-f0-9]{{2}}/[a-f0-9]{{40}}\.[a-z0-9]{{1,5}}")
# Keys written before media were keyed by tenant (``xx/<sha1>.<ext>``): still read and served from
# a local directory, so an upgrade loses no customer image already stored. New keys never take it.
LEGACY_KEY_PATTERN = re.compile(r"[a-z0-9]{2}/[a-z0-9]{40}\.[a-z0-9]{1,5}")
SIGNING_KEY_FILE = ".signing-key"


def stored_key(key: str) -> bool:
    """A key a local store may hold: the tenant-keyed form, or the legacy one."""
    return bool(KEY_PATTERN.fullmatch(key) or LEGACY_KEY_PATTERN.fullmatch(key))


@dataclass(frozen=True)
class StoredMedia:
    key: str
    mime_type: str  # ``media_types.stored_type``: what the bytes are, never merely what was declared
    size: int


class MediaStore(Protocol):
    async def put(self, tenant_id: TenantId, data: bytes, mime_type: str) -> StoredMedia:
        """Store ``data`` under the tenant's prefix; the same bytes twice get the same key.
        ``mime_type`` is what the sender declared: it names the file only if the bytes bear it out."""
        ...

    async def get(self, key: str) -> tuple[bytes, str]:
        """The bytes of ``key`` and their type, judged from the bytes (``application/octet-stream``
        for anything but an accepted image or audio type, whatever the key's extension says);
        ``NotFoundError`` when there is no such object."""
        ...

    def signed_url(self, key: str, base_url: str, ttl_s: float | None = None) -> str:
        """An absolute URL that serves ``key`` to anyone holding it until it expires.
        ``base_url`` is this service's public URL (used by stores served through our own route)."""
        ...

    def verify(self, key: str, expires: int, signature: str) -> bool:
        """Whether a ``/media/m/`` link is genuine and unexpired (False for stores not served there)."""
        ...

    async def check(self) -> None:
        """Fail with ``ConfigError`` at start-up when the store cannot be used."""
        ...


def tenant_prefix(tenant_id: str) -> str:
    """The key prefix of one tenant's media (no trailing slash)."""
    if _PLAIN_TENANT.fullmatch(tenant_id):
        return tenant_id
    return "_" + hashlib.sha256(tenant_id.encode()).hexdigest()[:32]


def media_key(tenant_id: str, data: bytes, mime_type: str) -> str:
    """``<tenant>/<xx>/<hash>.<ext>``: content-addressed inside the tenant's prefix. The extension
    is the bytes' own (``bin`` for a file of no accepted type), never the declared ``mime_type``'s."""
    digest = hashlib.sha256(data).hexdigest()[:40]
    extension = extension_for(stored_type(data, mime_type))
    return f"{tenant_prefix(tenant_id)}/{digest[:2]}/{digest}.{extension}"


class LocalMediaStore:
    """Files under ``root``, named by content hash (the same bytes twice are stored once per
    tenant), served by the app's ``/media/m/<key>`` route behind an HMAC-signed, expiring link."""

    def __init__(self, root: Path, signing_key: bytes | None = None, *, url_ttl_s: float = 3600) -> None:
        self._root = root
        self._signing_key = signing_key
        self._url_ttl_s = url_ttl_s

    def __repr__(self) -> str:
        return f"LocalMediaStore({str(self._root)!r})"  # never the signing key

    def _key_bytes(self) -> bytes:
        if self._signing_key is None:
            self._signing_key = _load_or_create_key(self._root / SIGNING_KEY_FILE)
        return self._signing_key

    async def put(self, tenant_id: TenantId, data: bytes, mime_type: str) -> StoredMedia:
        key = media_key(tenant_id, data, mime_type)
        path = self._root / key
        if not path.exists():
            await asyncio.to_thread(_write_atomically, path, data)
        return StoredMedia(key, stored_type(data, mime_type), len(data))

    async def get(self, key: str) -> tuple[bytes, str]:
        if not stored_key(key) or not (self._root / key).is_file():
            raise NotFoundError(f"no media {key!r}")
        data = await asyncio.to_thread((self._root / key).read_bytes)
        return data, content_type(data)  # not the key's extension: an older release kept ``.svg``

    def signed_url(self, key: str, base_url: str, ttl_s: float | None = None) -> str:
        return base_url.rstrip("/") + self.signed_path(key, ttl_s)

    def signed_path(self, key: str, ttl_s: float | None = None) -> str:
        """``/media/m/<key>?exp=…&sig=…``: the app's route, relative to the public base URL."""
        expires = int(time.time() + (self._url_ttl_s if ttl_s is None else ttl_s))
        return f"/media/m/{key}?exp={expires}&sig={self._sign(key, expires)}"

    def verify(self, key: str, expires: int, signature: str) -> bool:
        # compare_digest raises TypeError on a str with non-ASCII characters (a 500 for any URL
        # with ``sig=é``); our signatures are base64, so such a one is simply not ours.
        if not signature.isascii() or not stored_key(key) or expires < time.time():
            return False
        return hmac.compare_digest(self._sign(key, expires), signature)

    async def check(self) -> None:
        await asyncio.to_thread(self._root.mkdir, parents=True, exist_ok=True)

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
    """The store the settings name (``media_store``): the local directory by default, an
    S3-compatible bucket with ``media_store = "s3"`` (``ConfigError`` when it cannot be built)."""
    if settings.media_store == "s3":
        from frontdesk.platform.media_s3 import S3MediaStore  # boto3 is an optional extra

        return S3MediaStore.from_settings(settings)
    return LocalMediaStore(
        settings.media_dir,
        settings.media_signing_key.encode() if settings.media_signing_key else None,
        url_ttl_s=settings.media_url_ttl_s,
    )
