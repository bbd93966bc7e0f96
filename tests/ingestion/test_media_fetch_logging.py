"""What the log says while customer media cannot be fetched: an expected failure (the platform
times out, refuses the connection, answers 404) is one WARNING line per attempt and one ERROR
line when the job gives up, never a traceback and never the bot token; a bug keeps its
traceback. The media job runs on a manual clock, one claim at a time, against a mock platform."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx2
import pytest
from sqlalchemy import select

from frontdesk.cli_accounts import upsert_account
from frontdesk.ingestion.accounts import AccountDirectory, AccountView
from frontdesk.ingestion.channels import CHANNELS, ChannelDeps
from frontdesk.ingestion.events import InboundMessage, MediaRef
from frontdesk.ingestion.ingest import PROCESS_CONVERSATION, Ingestor
from frontdesk.ingestion.modality import message_event
from frontdesk.ingestion.preparation import PREPARE_MEDIA, FetchedMedia, MediaFetcher, MediaPreparer
from frontdesk.platform.clock import ManualClock
from frontdesk.platform.jobs import JobPolicy, JobQueue
from frontdesk.platform.media import LocalMediaStore
from frontdesk.platform.signals import ConversationSignals
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Job, Message, Tenant
from frontdesk.platform.vault import MasterKeys, Vault
from frontdesk.platform.workers import JobRunner

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ACCOUNT = "tg-logging-01"
TOKEN = "7351862094:AAHk-3xVq_SECRET-token-part"
FILE_PATH = "photos/file_7.jpg"
Handler = Callable[[httpx2.Request], httpx2.Response]


def telegram_answering(download: Handler) -> Handler:
    """Telegram's ``getFile`` works; the file download does what ``download`` says."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/getFile"):
            return httpx2.Response(200, json={"ok": True, "result": {"file_path": FILE_PATH}})
        assert request.url.path == f"/file/bot{TOKEN}/{FILE_PATH}"
        return download(request)

    return handle


def timed_out(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ConnectTimeout("timed out", request=request)


def refused(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)


def not_found(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(404, text="Not Found")


class Bug:
    """A fetcher with a bug in it: not a failure anyone expects."""

    async def fetch(self, account: AccountView, media: MediaRef) -> FetchedMedia:
        raise KeyError("file_path")


@dataclass
class MediaJob:
    runner: JobRunner
    clock: ManualClock
    message_id: int
    conversation_id: str

    async def run_until_settled(self) -> None:
        """Claim and run every job that comes due, waiting out each backoff on the clock."""
        for _ in range(20):
            if not await self.runner.run_once():
                self.clock.advance(3600)
                if not await self.runner.run_once():
                    return
        raise AssertionError("the jobs never settled")


async def media_job(
    db: Database, tmp_path, *, download: Handler | None = None, fetcher: MediaFetcher | None = None, max_attempts=5
) -> MediaJob:
    clock = ManualClock(T0)
    queue = JobQueue(db, clock, JobPolicy(max_attempts=max_attempts, backoff_s=1.0))
    ingestor = Ingestor(db, queue, clock)
    vault = Vault(db, MasterKeys(), environ={})
    accounts = AccountDirectory(db, vault)
    async with db.transaction() as session:
        session.add(Tenant(id="shop", name="The Shop", created_at=clock.now()))
    await upsert_account(
        db,
        account_id=ACCOUNT,
        tenant_id="shop",
        channel="telegram",
        name=None,
        config={"bot_id": TOKEN.split(":")[0], "api_base_url": "https://telegram.test"},
        secrets={"bot_token": TOKEN},
        now=clock.now(),
        vault=vault,
        own_id=None,
    )
    media = LocalMediaStore(tmp_path / "media")
    if fetcher is None:
        assert download is not None
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(telegram_answering(download)))
        deps = ChannelDeps(
            db=db, ingestor=ingestor, signals=ConversationSignals(), max_text_chars=4000, model_label="test",
            clock=clock, accounts=accounts, http=http, media=media, public_base_url="", guarded_http=http,
        )  # fmt: skip
        telegram = CHANNELS["telegram"].fetcher
        assert telegram is not None
        fetcher = telegram(deps)
    # No transcriber: a photo is never transcribed.
    preparer = MediaPreparer(db, ingestor, accounts, {"telegram": fetcher}, media, transcriber=None)

    async def no_turn(job) -> None:
        return None

    runner = JobRunner(
        queue,
        {PREPARE_MEDIA: preparer.run, PROCESS_CONVERSATION: no_turn},
        concurrency=1,
        poll_interval_s=30.0,
        sweeps=[],
        sweep_interval_s=3600.0,
        identity="test-host:1:abc",
    )
    photo = message_event(
        channel_account_id=ACCOUNT,
        contact_external_id="6112093847",
        channel_message_id="6112093847:17",
        content_type="image",
        text="our logo on 200 mugs?",
        media=MediaRef(kind="image", ref="AgACAgIAAxkBAAIBZ2jo"),
    )
    assert isinstance(photo, InboundMessage)
    stored = await ingestor.ingest(photo, channel="telegram")
    return MediaJob(runner, clock, stored.message_id, stored.conversation_id)


def ours(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("frontdesk")]


async def media_job_id(db: Database) -> int:
    async with db.read() as session:
        job_id = await session.scalar(select(Job.id).where(Job.kind == PREPARE_MEDIA))
    assert job_id is not None
    return job_id


@pytest.mark.parametrize(
    ("download", "error", "max_attempts", "made", "attempts"),
    [
        (timed_out, "download: ConnectTimeout", 5, 3, 3),
        (refused, "download: ConnectError", 5, 3, 3),
        # The platform's final word: asking again would get the same 404, so it gives up at once.
        (not_found, "download: HTTP 404", 5, 1, 3),
        # A queue that allows fewer attempts than the media job would make: it still gives up in time.
        (timed_out, "download: ConnectTimeout", 2, 2, 2),
    ],
)
async def test_media_that_cannot_be_downloaded_logs_a_line_per_attempt_without_a_traceback(
    db, tmp_path, caplog, download, error, max_attempts, made, attempts
):
    caplog.set_level(logging.INFO)  # not DEBUG: driver logs print SQL parameters (docs/channels.md)
    job = await media_job(db, tmp_path, download=download, max_attempts=max_attempts)
    job_id = await media_job_id(db)
    caplog.clear()  # setting up said things of its own (no vault key)

    await job.run_until_settled()

    what = f"media of message {job.message_id} (conversation {job.conversation_id})"
    lines = [(r.levelname, r.getMessage()) for r in ours(caplog) if r.levelno >= logging.WARNING]
    assert lines == [
        *(
            ("WARNING", f"job {job_id} ({PREPARE_MEDIA}) will be retried (attempt {n} of {attempts}): {what}: {error}")
            for n in range(1, made)
        ),
        (
            "ERROR",
            f"job {job_id} ({PREPARE_MEDIA}) gave up (attempt {made} of {attempts}): {what}: {error};"
            " stored as a placeholder",
        ),
    ]
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    assert TOKEN.split(":")[1] not in caplog.text
    async with db.read() as session:
        row = await session.get(Message, job.message_id)
        assert row is not None
        assert (row.status, row.content) == ("ready", "[image: could not be loaded] our logo on 200 mugs?")
        assert row.meta["media_error"] == error


async def test_a_bug_in_the_media_job_still_logs_its_traceback(db, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    job = await media_job(db, tmp_path, fetcher=Bug())
    caplog.clear()

    assert await job.runner.run_once()

    (failed,) = [r for r in ours(caplog) if r.levelno >= logging.WARNING]
    assert failed.levelname == "ERROR"
    assert failed.exc_info is not None
    assert failed.exc_info[0] is KeyError
    assert "Traceback" in caplog.text
