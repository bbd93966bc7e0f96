"""The ``prepare_media`` job: the second half of pending-first media (invariant 4).

Ingest stored the customer's image or audio as a *pending* row with a placeholder and queued
this job in the same transaction. The job downloads the file from the platform (whose URLs
expire: Telegram's after an hour, WhatsApp's after minutes), re-hosts it in our media store, and
for audio asks the transcriber for a verdict. Then it marks the row ready, which pulls the
conversation's turn forward. When the platform keeps failing, the row is resolved with an honest
placeholder after a few attempts: a turn never waits on a file that will not come.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx2

from frontdesk.errors import ChannelAPIError, ModelAPIError
from frontdesk.ingestion.accounts import AccountDirectory, AccountView
from frontdesk.ingestion.events import MediaRef
from frontdesk.ingestion.ingest import PREPARE_MEDIA, Ingestor
from frontdesk.ingestion.modality import placeholder
from frontdesk.ingestion.transcription import Transcriber, TranscriptVerdict, transcript_content
from frontdesk.platform.ids import TenantId
from frontdesk.platform.jobs import ClaimedJob, RetryLater
from frontdesk.platform.media import MediaStore
from frontdesk.platform.outbound import OutboundRefused
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Message

log = logging.getLogger(__name__)

__all__ = ["PREPARE_MEDIA", "FetchedMedia", "MediaFetcher", "MediaPreparer"]

MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class FetchedMedia:
    data: bytes
    mime_type: str


class MediaFetcher(Protocol):
    """A channel's download of one media reference (``MediaRef.ref``), with the account's credentials."""

    async def fetch(self, account: AccountView, media: MediaRef) -> FetchedMedia: ...


class MediaPreparer:
    def __init__(
        self,
        db: Database,
        ingestor: Ingestor,
        accounts: AccountDirectory,
        fetchers: Mapping[str, MediaFetcher],
        store: MediaStore,
        transcriber: Transcriber,
    ) -> None:
        self._db = db
        self._ingestor = ingestor
        self._accounts = accounts
        self._fetchers = dict(fetchers)
        self._store = store
        self._transcriber = transcriber

    async def run(self, job: ClaimedJob) -> None:
        message_id = int(job.payload["message_id"])
        async with self._db.read() as session:
            message = await session.get(Message, message_id)
        if message is None or message.status != "pending":
            return  # already prepared (a re-run after a crash between the two steps)
        meta: dict[str, Any] = dict(message.meta or {})
        media = MediaRef.model_validate(meta.get("media") or {})
        caption = str(meta.get("caption") or "")
        attempts = min(MAX_ATTEMPTS, job.max_attempts)  # a queue allowing fewer must not leave it pending
        final_attempt = job.attempts >= attempts
        try:
            content, updates = await self._prepare(message, media, caption)
        except (ChannelAPIError, ModelAPIError, OutboundRefused, httpx2.TransportError) as exc:
            # Expected (a platform's URL timing out, a CDN's 404): one line per attempt, no
            # traceback. The error's text only: ours never carries a token (``_http._redact``).
            error = _short(exc)
            what = f"media of message {message_id} (conversation {message.conversation_id})"
            # A refused address, a file too big or a platform's "no" fails again on every attempt:
            # given up at once, so the customer is answered now rather than after the retries.
            permanent = isinstance(exc, OutboundRefused) or (isinstance(exc, ChannelAPIError) and exc.permanent)
            if not final_attempt and not permanent:
                raise RetryLater(f"{what}: {error}", max_attempts=attempts) from exc  # retried with backoff
            log.error(
                "job %s (%s) gave up (attempt %d of %d): %s: %s; stored as a placeholder",
                job.id, job.kind, job.attempts, attempts, what, error,
            )  # fmt: skip
            content = " ".join(
                p for p in (placeholder(_content_type(message), note="could not be loaded"), caption) if p
            )
            updates = {"media_error": error[:300]}
        await self._ingestor.mark_ready(message_id, content, meta_updates=updates)

    async def _prepare(self, message: Message, media: MediaRef, caption: str) -> tuple[str, dict[str, Any]]:
        account = await self._accounts.get(message.channel_account_id, tuple(self._fetchers))
        fetched = await self._fetchers[account.channel].fetch(account, media)
        mime_type = fetched.mime_type or media.mime_type or "application/octet-stream"
        stored = await self._store.put(TenantId(account.tenant_id), fetched.data, mime_type)
        updates: dict[str, Any] = {"media_key": stored.key, "media_mime": stored.mime_type, "media_size": stored.size}
        if media.kind == "image":
            return " ".join(p for p in (placeholder("image"), caption) if p), updates
        verdict: TranscriptVerdict = await self._transcriber.transcribe(
            message.conversation_id, fetched.data, stored.mime_type
        )
        updates["transcript"] = verdict.model_dump()
        return transcript_content(verdict, caption), updates


def _short(exc: Exception) -> str:
    # A transport error's own text may quote the URL, and Telegram's file URLs hold the bot token.
    return type(exc).__name__ if isinstance(exc, httpx2.TransportError) else str(exc)


def _content_type(message: Message) -> Any:
    return message.content_type
