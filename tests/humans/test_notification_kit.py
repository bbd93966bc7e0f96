"""Shared pieces of the notification tests (no tests here): a tenant with a conversation, a task
and operators; loopback doubles for an SMTP server, the Telegram Bot API and a webhook receiver;
running the dispatch jobs; reading the attempt trail."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default as default_policy
from typing import Any, cast

import httpx2
from sqlalchemy import select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route as HttpRoute

from channels.loopback import Call, FakePlatform, serve
from frontdesk.demo import seed_demo
from frontdesk.humans import open_task
from frontdesk.humans.notifications import DISPATCH_NOTIFICATION, Delivery, DeliveryError, Dispatcher, verify
from frontdesk.humans.notifications.dispatch import DeliveriesPending
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.ids import JobId, new_id
from frontdesk.platform.jobs import ClaimedJob
from frontdesk.platform.outbound import GuardedClient, OutboundAllow
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Contact, Conversation, Job
from frontdesk.platform.store.schema_console import Operator
from frontdesk.platform.store.schema_notifications import NotificationAttempt

CLOCK = SystemClock()
# The loopback doubles are "private" to the outbound guard: these tests allow them, as a deployer
# allows a receiver on its own network (outbound_allow).
LOOPBACK = OutboundAllow.parse(["127.0.0.1"])
BOT_TOKEN = "987654321:AAH-notify-token_for-tests"
WEBHOOK_SECRET = "whsec-test-0123456789"


@dataclass
class World:
    tenant_id: str
    conversation_id: str
    task_id: str


async def world(db: Database, contact: str = "alice") -> World:
    """The demo tenant with one web-chat conversation and an open hand-off task in it."""
    accounts = await seed_demo(db, CLOCK)
    now = CLOCK.now()
    async with db.transaction() as session:
        contact_id, conversation_id = new_id("ct"), new_id("conv")
        session.add(
            Contact(
                id=contact_id,
                tenant_id=accounts.tenant_id,
                channel_account_id=accounts.webchat_id,
                external_id=contact,
                created_at=now,
            )
        )
        await session.flush()
        session.add(
            Conversation(
                id=conversation_id,
                tenant_id=accounts.tenant_id,
                channel_account_id=accounts.webchat_id,
                contact_id=contact_id,
                created_at=now,
                updated_at=now,
            )
        )
        await session.flush()
        task = await open_task(
            session,
            tenant_id=accounts.tenant_id,
            conversation_id=conversation_id,
            kind="handoff",
            priority="high",
            title="reprint",
            details={},
            now=now,
        )
    return World(accounts.tenant_id, conversation_id, task.id)


async def add_operator(
    db: Database,
    tenant_id: str,
    name: str,
    *,
    language: str = "en",
    telegram_chat_id: str | None = None,
    active: bool = True,
) -> str:
    operator_id = new_id("op")
    async with db.transaction() as session:
        session.add(
            Operator(
                id=operator_id,
                tenant_id=tenant_id,
                email=f"{name.lower()}.{operator_id[-6:]}@shop.test",
                name=name,
                role="agent",
                password_hash="-",
                language=language,
                telegram_chat_id=telegram_chat_id,
                active=active,
                created_at=CLOCK.now(),
            )
        )
    return operator_id


async def run_dispatch_jobs(db: Database, dispatcher: Dispatcher) -> int:
    """Run every queued dispatch job once, as the job runner would (attempt counted, a
    ``DeliveriesPending`` put back in the queue). Returns how many ran."""
    async with db.transaction() as session:
        jobs = list(
            await session.scalars(
                select(Job).where(Job.kind == DISPATCH_NOTIFICATION, Job.status == "queued").order_by(Job.id)
            )
        )
        for job in jobs:
            job.attempts += 1
    for job in jobs:
        claimed = ClaimedJob(JobId(job.id), job.kind, job.key, job.payload, job.attempts, "test-worker")
        status = "done"
        try:
            await dispatcher.run(claimed)
        except DeliveriesPending:
            status = "queued" if job.attempts < job.max_attempts else "dead"
        async with db.transaction() as session:
            row = await session.get(Job, job.id)
            assert row is not None
            row.status = status
    return len(jobs)


async def the_dispatch_job(db: Database) -> ClaimedJob:
    """The one dispatch job, as a worker would hold it (run it as often as a test likes)."""
    async with db.read() as session:
        (job,) = await session.scalars(select(Job).where(Job.kind == DISPATCH_NOTIFICATION))
    return ClaimedJob(JobId(job.id), job.kind, job.key, job.payload, 1, "test-worker")


async def attempts(db: Database) -> list[NotificationAttempt]:
    async with db.read() as session:
        return list(await session.scalars(select(NotificationAttempt).order_by(NotificationAttempt.id)))


async def trail(db: Database) -> set[tuple[str, str, str]]:
    """(subscriber, route, status) of every attempt row."""
    return {(a.subscriber, a.route, a.status) for a in await attempts(db)}


# -- a recording route (the port's test implementation) ------------------------------------------


@dataclass
class RecordingRoute:
    """Accepts every delivery, or fails with ``failure`` for the next ``failures`` calls."""

    delivered: list[Delivery] = field(default_factory=list)
    failures: int = 0
    failure: DeliveryError | None = None

    async def send(self, delivery: Delivery) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise self.failure or DeliveryError("server said no")
        self.delivered.append(delivery)


# -- SMTP on loopback ------------------------------------------------------------------------------


@dataclass
class SmtpSink:
    """A minimal SMTP server: EHLO (no STARTTLS: loopback), MAIL, RCPT, DATA, QUIT. Addresses in
    ``refuse`` are answered 550."""

    refuse: set[str] = field(default_factory=set)
    messages: list[EmailMessage] = field(default_factory=list)
    port: int = 0

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        def say(line: str) -> None:
            writer.write(line.encode() + b"\r\n")

        say("220 sink.test ESMTP")
        try:
            while line := (await reader.readline()).decode().rstrip("\r\n"):
                verb = line.split(" ", 1)[0].upper()
                if verb == "EHLO":
                    say("250-sink.test")
                    say("250 8BITMIME")
                elif verb == "RCPT":
                    address = line.split(":", 1)[1].strip().strip("<>")
                    say("550 5.1.1 no such mailbox" if address in self.refuse else "250 OK")
                elif verb == "DATA":
                    say("354 end with <CRLF>.<CRLF>")
                    await writer.drain()
                    raw = bytearray()
                    while (chunk := await reader.readline()) not in (b".\r\n", b""):
                        raw += chunk[1:] if chunk.startswith(b"..") else chunk
                    self.messages.append(cast(EmailMessage, message_from_bytes(bytes(raw), policy=default_policy)))
                    say("250 queued")
                elif verb == "QUIT":
                    say("221 bye")
                    await writer.drain()
                    break
                else:  # MAIL, RSET, NOOP, HELO
                    say("250 OK")
                await writer.drain()
        finally:
            writer.close()


@contextlib.asynccontextmanager
async def smtp_sink(sink: SmtpSink, host: str = "127.0.0.1") -> AsyncIterator[SmtpSink]:
    server = await asyncio.start_server(sink._session, host, 0)
    sink.port = server.sockets[0].getsockname()[1]
    try:
        yield sink
    finally:
        server.close()
        await server.wait_closed()


# -- the Telegram Bot API and a webhook receiver on loopback ------------------------------------


@dataclass
class FakeBotApi(FakePlatform):
    def refuse(self, call: Call) -> tuple[int, Any] | None:
        if not call.path.startswith(f"/bot{BOT_TOKEN}/"):
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        return None

    def respond(self, call: Call) -> Any:
        return {"ok": True, "result": {"message_id": len(self.calls), "chat": {"id": call.body["chat_id"]}}}


@dataclass
class WebhookReceiver:
    """Verifies every request's signature the way docs/notifications.md tells receivers to."""

    secret: str = WEBHOOK_SECRET
    status: int = 200
    received: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)
    forged: int = 0
    url: str = ""

    def app(self) -> Starlette:
        async def hook(request: Request) -> Response:
            raw = await request.body()
            if not verify(self.secret, request.headers.get("frontdesk-signature", ""), raw, now=time.time()):
                self.forged += 1
                return Response(status_code=401)
            self.received.append((dict(request.headers), json.loads(raw)))
            return Response(status_code=self.status)

        return Starlette(routes=[HttpRoute("/hook", hook, methods=["POST"])])


def guarded(allow: OutboundAllow = LOOPBACK) -> GuardedClient:
    """The client webhooks go through, allowing the loopback doubles."""
    return GuardedClient(allow, timeout=5, ssl_context=_tls())


@functools.cache
def _tls() -> ssl.SSLContext:
    return httpx2.create_ssl_context()  # once: loading the CA bundle is a tenth of a second


@contextlib.asynccontextmanager
async def receiving(receiver: WebhookReceiver) -> AsyncIterator[WebhookReceiver]:
    async with serve(receiver.app()) as base_url:
        receiver.url = f"{base_url}/hook"
        yield receiver


@contextlib.asynccontextmanager
async def bot_api(api: FakeBotApi) -> AsyncIterator[FakeBotApi]:
    async with serve(api.app()) as base_url:
        api.base_url = base_url
        yield api
