"""What every platform webhook does the same way: read the body with a cap, check a signature
against the raw bytes in constant time, and apply the parsed events (store messages, update
receipts, ignore the rest) before answering. Heavy work (media, transcription, the turn) is
queued as jobs inside the same transaction, so the acknowledgement never waits for it."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
from collections import Counter
from collections.abc import Sequence
from typing import Annotated

from fastapi import Path, Request

from frontdesk.errors import AuthError, TooLargeError
from frontdesk.ingestion.accounts import same_secret
from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.events import IgnoredEvent, InboundEvent, InboundMessage, StatusUpdate
from frontdesk.output.receipts import record_platform_status

log = logging.getLogger(__name__)

WEBHOOK_BODY_LIMIT = 1_000_000  # Meta batches up to 1000 events; a real call is far below this
# The per-account part of every webhook URL (``frontdesk accounts add`` refuses other ids).
AccountIdPath = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,40}$", description="a channel account id")]


async def read_capped(request: Request, limit: int = WEBHOOK_BODY_LIMIT) -> bytes:
    """The body, refused once it passes ``limit`` bytes (before it is all in memory)."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise TooLargeError(f"the body is {declared} bytes; the limit is {limit}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLargeError(f"the body is over the {limit}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


def hmac_sha256(key: str, raw: bytes) -> bytes:
    return hmac.new(key.encode(), raw, hashlib.sha256).digest()


def check_hex_signature(header: str | None, key: str | None, raw: bytes, *, prefix: str = "sha256=") -> None:
    """Meta's ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app secret, raw body)>``."""
    if not header or not key or not header.startswith(prefix):
        raise AuthError("missing or malformed signature")
    if not same_secret(header[len(prefix) :].strip().lower(), hmac_sha256(key, raw).hex()):
        raise AuthError("signature does not match")


def check_base64_signature(header: str | None, key: str | None, raw: bytes) -> None:
    """LINE's ``X-Line-Signature: base64(HMAC-SHA256(channel secret, raw body))``."""
    if not header or not key:
        raise AuthError("missing signature")
    if not same_secret(header.strip(), base64.b64encode(hmac_sha256(key, raw)).decode()):
        raise AuthError("signature does not match")


def check_shared_secret(given: str | None, expected: str | None) -> None:
    """Telegram's ``X-Telegram-Bot-Api-Secret-Token``: the value set with ``setWebhook``."""
    if not same_secret(given, expected):
        raise AuthError("missing or wrong secret token")


async def apply_events(deps: ChannelDeps, channel: str, events: Sequence[InboundEvent]) -> dict[str, int]:
    """Store every message (a redelivery changes nothing), apply every status update, count the
    ignored ones. Returns counts for the response body and the log."""
    counts: Counter[str] = Counter()
    for event in events:
        if isinstance(event, InboundMessage):
            result = await deps.ingestor.ingest(event, channel=channel)
            counts["duplicate" if result.duplicate else "stored"] += 1
        elif isinstance(event, StatusUpdate):
            async with deps.db.transaction() as session:
                known = await record_platform_status(
                    session,
                    event.channel_account_id,
                    event.platform_message_id,
                    event.status,
                    event.error,
                    deps.clock.now(),
                )
            counts["status" if known else "status_unknown"] += 1
        elif isinstance(event, IgnoredEvent):
            counts["ignored"] += 1
            log.debug("%s webhook: ignored (%s)", channel, event.reason)
    return dict(counts)
