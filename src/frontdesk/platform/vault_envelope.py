"""The vault's envelope format and master keys (AES-256-GCM). No I/O but reading a key file.

Envelope (version 1), stored as unpadded base64url text::

    b"FDV" | version (1 byte, 0x01) | key id (8 bytes) | nonce (12 bytes) | ciphertext + GCM tag (16 bytes)
    \\_______________ header (12 bytes) ______________/

The associated data is the whole header plus the length-prefixed tenant id and credential name,
so a ciphertext copied to another tenant or name, or a header edited to claim another version or
key, fails authentication instead of decrypting. The key id is a hash of the key (never the key),
so ``rotate`` can tell which rows still use an old key and an unknown id gets a clear error.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from frontdesk.errors import ConfigError

log = logging.getLogger(__name__)

MAGIC = b"FDV"
VERSION = 1
KEY_BYTES = 32
KEY_ID_BYTES = 8
NONCE_BYTES = 12
TAG_BYTES = 16
HEADER_BYTES = len(MAGIC) + 1 + KEY_ID_BYTES
_MIN_ENVELOPE = HEADER_BYTES + NONCE_BYTES + TAG_BYTES
_KEY_ID_DOMAIN = b"frontdesk-vault-key-id\x00"


class VaultError(ConfigError):
    """A credential cannot be opened: wrong or missing key, tampered bytes, moved ciphertext.
    Messages name the tenant and credential, never a value or a key."""

    code = "vault_error"


def generate_key() -> str:
    """A new master key as base64 text (what ``frontdesk vault keygen`` prints)."""
    return base64.b64encode(AESGCM.generate_key(bit_length=256)).decode()


def key_id(key: bytes) -> str:
    return hashlib.sha256(_KEY_ID_DOMAIN + key).digest()[:KEY_ID_BYTES].hex()


@dataclass(frozen=True)
class MasterKeys:
    """The configured keys, newest first: the first one seals, every one of them opens.

    ``repr`` shows key ids only. An empty set is legal (no key configured): nothing can be sealed.
    """

    keys: tuple[bytes, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if any(len(k) != KEY_BYTES for k in self.keys):
            raise ConfigError("a vault key must be exactly 32 bytes")

    @classmethod
    def load(cls, inline: str | None, key_file: Path | None) -> MasterKeys:
        """From ``FRONTDESK_VAULT_KEY`` (one key, or several separated by commas) or
        ``FRONTDESK_VAULT_KEY_FILE`` (one key per line; blank lines and ``#`` comments skipped).
        Newest first in both. Setting both is refused: which one rotates would be a guess."""
        if inline and key_file:
            raise ConfigError("set FRONTDESK_VAULT_KEY or FRONTDESK_VAULT_KEY_FILE, not both")
        if inline:
            return cls(tuple(_decode(part, "FRONTDESK_VAULT_KEY") for part in inline.split(",") if part.strip()))
        if key_file is None:
            return cls()
        try:
            text = key_file.read_text(encoding="utf-8")
            mode = key_file.stat().st_mode
        except OSError as exc:
            raise ConfigError(f"FRONTDESK_VAULT_KEY_FILE: cannot read {key_file}: {exc.strerror}") from exc
        if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning("vault key file %s is readable by other users: chmod 600 it", key_file)
        lines = [line.strip() for line in text.splitlines()]
        keys = tuple(
            _decode(line, f"FRONTDESK_VAULT_KEY_FILE line {n}")
            for n, line in enumerate(lines, 1)
            if line and not line.startswith("#")
        )
        if not keys:
            raise ConfigError(f"FRONTDESK_VAULT_KEY_FILE: {key_file} holds no key")
        return cls(keys)

    @property
    def configured(self) -> bool:
        return bool(self.keys)

    @property
    def current_id(self) -> str | None:
        return key_id(self.keys[0]) if self.keys else None

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(key_id(k) for k in self.keys)

    def __repr__(self) -> str:
        return f"MasterKeys(ids={list(self.ids)})"

    def seal(self, plaintext: str, tenant_id: str, name: str) -> str:
        """A new envelope under the current key (a fresh random nonce every time)."""
        if not self.keys:
            raise VaultError("no vault master key is configured: set FRONTDESK_VAULT_KEY or FRONTDESK_VAULT_KEY_FILE")
        key = self.keys[0]
        header = MAGIC + bytes([VERSION]) + bytes.fromhex(key_id(key))
        nonce = os.urandom(NONCE_BYTES)  # 96-bit random nonce: never reused under one key in practice
        sealed = AESGCM(key).encrypt(nonce, plaintext.encode("utf-8"), _aad(header, tenant_id, name))
        return base64.urlsafe_b64encode(header + nonce + sealed).rstrip(b"=").decode("ascii")

    def open(self, envelope: str, tenant_id: str, name: str) -> str:
        where = f"credential {name!r} of tenant {tenant_id!r}"
        raw = _unb64(envelope)
        if raw is None or len(raw) < _MIN_ENVELOPE or raw[: len(MAGIC)] != MAGIC:
            raise VaultError(f"{where} is not a vault envelope")
        if raw[len(MAGIC)] != VERSION:
            raise VaultError(f"{where} has envelope version {raw[len(MAGIC)]}; this frontdesk reads version {VERSION}")
        header = raw[:HEADER_BYTES]
        wanted = header[len(MAGIC) + 1 :].hex()
        key = next((k for k in self.keys if key_id(k) == wanted), None)
        if key is None:
            raise VaultError(
                f"{where} is sealed with vault key {wanted}, which is not configured"
                f" (configured: {', '.join(self.ids) or 'none'}); add that key back after the current one"
            )
        nonce = raw[HEADER_BYTES : HEADER_BYTES + NONCE_BYTES]
        try:
            plain = AESGCM(key).decrypt(nonce, raw[HEADER_BYTES + NONCE_BYTES :], _aad(header, tenant_id, name))
        except InvalidTag:
            raise VaultError(
                f"{where} does not authenticate: it was altered, or copied from another tenant or name"
            ) from None
        return plain.decode("utf-8")

    @staticmethod
    def envelope_key_id(envelope: str) -> str | None:
        raw = _unb64(envelope)
        if raw is None or len(raw) < HEADER_BYTES or raw[: len(MAGIC)] != MAGIC:
            return None
        return raw[len(MAGIC) + 1 : HEADER_BYTES].hex()


def _aad(header: bytes, tenant_id: str, name: str) -> bytes:
    # Length prefixes: ("ab", "c") and ("a", "bc") must not share associated data.
    t, n = tenant_id.encode("utf-8"), name.encode("utf-8")
    return header + struct.pack(">H", len(t)) + t + struct.pack(">H", len(n)) + n


def _unb64(text: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None


def _decode(text: str, source: str) -> bytes:
    text = text.strip()
    try:
        raw = base64.b64decode(text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != KEY_BYTES:
        # Never echo the text: it may be a key with a typo.
        raise ConfigError(f"{source}: not a base64 32-byte key (make one with `frontdesk vault keygen`)")
    return raw
