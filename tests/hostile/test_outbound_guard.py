"""The outbound guard (``platform/outbound.py``) against a server-side request forgery: a tenant's
webhook URL, a customer's media URL or a LINE message's external content URL aimed at this
machine, its private network or the cloud's metadata address is refused before any connection,
redirects and DNS rebinding included, and an address ``outbound_allow`` names is still reached.

A real TCP listener on loopback records every connection it accepts: where a test says it got
nothing, nothing connected. Host names resolve through a stub (``NAMES``), never the internet.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpcore2
import httpx2
import pytest
from sqlalchemy import select

from frontdesk.cli_accounts import upsert_account
from frontdesk.errors import PayloadError
from frontdesk.humans.notifications import Delivery, DeliveryError, Dispatcher, Event, MappingSecrets, notify
from frontdesk.humans.notifications.build import build_routes
from frontdesk.humans.notifications.dispatch import DeliveriesPending
from frontdesk.humans.notifications.events import ClaimRejectedSpike, Recipient
from frontdesk.humans.notifications.templates import render
from frontdesk.humans.notifications.webhook import WebhookRoute, check_webhook_url
from frontdesk.ingestion.accounts import AccountDirectory, AccountView, Credentials
from frontdesk.ingestion.channels import ChannelDeps
from frontdesk.ingestion.channels._http import download
from frontdesk.ingestion.channels.line.renderer import LineMediaFetcher
from frontdesk.ingestion.events import InboundMessage, MediaRef
from frontdesk.ingestion.ingest import Ingestor
from frontdesk.ingestion.modality import message_event
from frontdesk.ingestion.preparation import PREPARE_MEDIA, MediaPreparer
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.ids import JobId
from frontdesk.platform.jobs import ClaimedJob, JobPolicy, JobQueue
from frontdesk.platform.media import LocalMediaStore
from frontdesk.platform.outbound import GuardedClient, OutboundAllow, OutboundRefused, refusal, system_resolver
from frontdesk.platform.signals import ConversationSignals
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Job, Message, Tenant
from frontdesk.platform.store.schema_notifications import NotificationAttempt, NotificationWebhook
from frontdesk.platform.vault import MasterKeys, Vault
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings

CLOCK = SystemClock()
NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
TENANT = "shop"
LINE_ACCOUNT = "line-shop-01"
PHOTO = b"\xff\xd8\xff\xe0jpeg"
OK = b"HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (
    len(PHOTO),
    PHOTO,
)
TLS = httpx2.create_ssl_context()  # once: loading the CA bundle is a tenth of a second
# What the stub resolver answers (everything else: the system's, used here for ``localhost`` only).
NAMES = {"cdn.example.test": ["127.0.0.1"], "hooks.shop.test": ["127.0.0.1"]}


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


# -- a loopback listener that records every connection -------------------------------------------


@dataclass
class Listener:
    """Accepts TCP connections on ``host``, records each one, and answers an HTTP request with
    ``answer`` (a small JPEG unless told otherwise); a TLS handshake is recorded and dropped."""

    host: str
    answer: bytes = OK
    port: int = 0
    peers: list[str] = field(default_factory=list)

    def url(self, host: str | None = None, *, scheme: str = "https", path: str = "/photo.jpg") -> str:
        shown = host or self.host
        return f"{scheme}://{f'[{shown}]' if ':' in shown else shown}:{self.port}{path}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.peers.append(str(writer.get_extra_info("peername")[0]))
        try:
            data = await reader.read(65536)
            if data.split(b" ", 1)[0] in (b"GET", b"POST"):
                while b"\r\n\r\n" not in data and (more := await reader.read(65536)):
                    data += more
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in head.lower().split(b"\r\n")
                        if line.startswith(b"content-length:")
                    ),
                    0,
                )
                while len(body) < length and (more := await reader.read(65536)):
                    body += more
                writer.write(self.answer)
                await writer.drain()
        finally:
            writer.close()


@contextlib.asynccontextmanager
async def listening(host: str = "127.0.0.1", answer: bytes = OK) -> AsyncIterator[Listener]:
    listener = Listener(host, answer)
    server = await asyncio.start_server(listener._handle, host, 0)
    listener.port = server.sockets[0].getsockname()[1]
    try:
        yield listener
    finally:
        server.close()
        await server.wait_closed()


async def stub_resolver(host: str, port: int) -> list[str]:
    return NAMES[host] if host in NAMES else await system_resolver(host, port)


def guarded(allow: Iterable[str] = (), **options: Any) -> GuardedClient:
    options = {"resolver": stub_resolver, "timeout": 2, "ssl_context": TLS, **options}
    return GuardedClient(OutboundAllow.parse(allow), **options)


# -- the three fetches a tenant or a customer can aim ---------------------------------------------

SECRETS = MappingSecrets({(TENANT, "hook"): "whsec-outbound-guard"})


async def send_webhook(http: GuardedClient, url: str) -> None:
    message = render("handoff", {}, "A customer asks for a person", language="en", business="Shop", link=None)
    await WebhookRoute(http, SECRETS, timeout_s=2).send(Delivery(1, TENANT, url, message, {"kind": "handoff"}, "hook"))


async def fetch_media(http: GuardedClient, url: str) -> None:
    await download(http, url)


def line_account(api_base_url: str = "https://api.line.test") -> AccountView:
    return AccountView(
        LINE_ACCOUNT, TENANT, "line", {"api_base_url": api_base_url}, Credentials({"channel_access_token": "tok"})
    )


def channel_deps(db: Database, guarded_http: GuardedClient, media_dir: Path) -> ChannelDeps:
    """What the composition root hands a channel, with ``guarded_http`` as the guarded client."""
    queue = JobQueue(db, CLOCK, JobPolicy(max_attempts=3, backoff_s=1.0))
    accounts = AccountDirectory(db, Vault(db, MasterKeys(), environ={}))
    return ChannelDeps(
        db, Ingestor(db, queue, CLOCK), ConversationSignals(), 4000, "test", CLOCK, accounts, guarded_http,
        LocalMediaStore(media_dir), "", guarded_http,
    )  # fmt: skip


async def fetch_line_external(http: GuardedClient, url: str, account: AccountView | None = None) -> None:
    # The deps' database is never opened: an external image is fetched without a query.
    deps = channel_deps(Database.from_url("sqlite+aiosqlite://"), http, Path("/nonexistent"))
    await LineMediaFetcher(deps).fetch(account or line_account(), MediaRef(kind="image", ref=url))


Fetch = Callable[[GuardedClient, str], Awaitable[None]]
FETCHES: dict[str, Fetch] = {
    "notification webhook": send_webhook,
    "customer media download": fetch_media,
    "LINE external content": fetch_line_external,
}


async def refused(fetch: Fetch, http: GuardedClient, url: str) -> str:
    """How the fetch ended: the refusal's message (a webhook's must be a permanent failure, never
    retried), or what happened instead."""
    try:
        await fetch(http, url)
    except OutboundRefused as exc:
        return str(exc)
    except DeliveryError as exc:
        return str(exc) if exc.permanent else f"retried: {exc}"
    except Exception as exc:  # today's code: a TLS error from the listener, a timeout...
        return f"not refused: {type(exc).__name__}: {exc}"
    return "fetched"


# -- refused: loopback in every spelling, the metadata address, a private network ----------------

LOOPBACK_SPELLINGS = {
    "127.0.0.1": "127.0.0.1",
    "IPv4-mapped IPv6": "::ffff:127.0.0.1",
    "localhost": "localhost",
    "a name resolving to loopback": "cdn.example.test",
    "decimal": "2130706433",
    "hex and short": "0x7f.1",
}


@pytest.mark.parametrize("spelling", LOOPBACK_SPELLINGS)
@pytest.mark.parametrize("fetch", FETCHES)
async def test_loopback_in_any_spelling_receives_nothing(fetch, spelling):
    async with listening() as listener, guarded() as http:
        reason = await refused(FETCHES[fetch], http, listener.url(LOOPBACK_SPELLINGS[spelling]))

    assert (listener.peers, "loopback" in reason or "this machine" in reason) == ([], True), reason


@pytest.mark.parametrize("fetch", FETCHES)
async def test_ipv6_loopback_receives_nothing(fetch):
    if not has_ipv6_loopback():  # no listener can exist: the refusal alone is shown
        async with guarded() as http:
            assert "loopback" in await refused(FETCHES[fetch], http, "https://[::1]:8443/photo.jpg")
        return
    async with listening("::1") as listener, guarded() as http:
        reason = await refused(FETCHES[fetch], http, listener.url())

    assert (listener.peers, "loopback" in reason) == ([], True), reason


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("https://169.254.169.254/latest/meta-data/iam/security-credentials/", "link-local"),
        ("https://10.0.0.1/photo.jpg", "private"),
        ("https://0.0.0.0/photo.jpg", "unspecified"),
    ],
)
@pytest.mark.parametrize("fetch", FETCHES)
async def test_the_metadata_address_and_private_networks_are_refused_before_any_connection(fetch, url, kind):
    async with guarded() as http:
        reason = await refused(FETCHES[fetch], http, url)

    assert kind in reason
    assert "meta-data" not in reason  # the host and why, never the path


# -- redirects and DNS rebinding -------------------------------------------------------------------


@pytest.mark.parametrize("fetch", ["customer media download", "LINE external content"])
async def test_a_redirect_from_an_allowed_server_to_loopback_receives_nothing(fetch):
    async with listening() as listener:
        hop = f"HTTP/1.1 302 Found\r\nLocation: {listener.url()}\r\nContent-Length: 0\r\n\r\n".encode()
        # 127.0.0.2 plays a public server: allowed, while the listener's 127.0.0.1 is not.
        async with listening("127.0.0.2", hop) as public, guarded(["127.0.0.2"]) as http:
            start = public.url(scheme="http")
            # LINE takes plain http only from the account's configured base: the public server's.
            account = line_account(public.url(scheme="http", path=""))

            async def line(http: GuardedClient, url: str) -> None:
                await fetch_line_external(http, url, account)

            reason = await refused(line if fetch == "LINE external content" else fetch_media, http, start)

    assert (len(public.peers), listener.peers, reason) == (
        1,
        [],
        "refused to connect to 127.0.0.1: a loopback address, not in outbound_allow",
    )


@dataclass
class RecordingNetwork(httpcore2.AsyncNetworkBackend):
    """Opens no socket: records where each connection was asked to go, the TLS name it would
    send and the request bytes, and answers 200."""

    connects: list[tuple[str, int]] = field(default_factory=list)
    tls_names: list[str | None] = field(default_factory=list)
    sent: bytearray = field(default_factory=bytearray)

    async def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        self.connects.append((host, port))
        return _RecordingStream(self)


class _RecordingStream(httpcore2.AsyncNetworkStream):
    # The overrides keep httpcore2's own signatures, ``timeout`` parameters included: ruff's
    # ASYNC109 (prefer a timeout context) is about APIs we design, not one we implement.
    def __init__(self, network: RecordingNetwork) -> None:
        self._network = network
        self._answer = [OK]

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109  # overrides httpcore2's method: its timeout parameter stays
        return self._answer.pop() if self._answer else b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109  # overrides httpcore2's method: its timeout parameter stays
        self._network.sent += buffer

    async def aclose(self) -> None:
        return None

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None):  # noqa: ASYNC109  # overrides httpcore2's method: its timeout parameter stays
        self._network.tls_names.append(server_hostname)
        return self


async def test_dns_rebinding_cannot_move_a_connection_to_loopback():
    answers = [["93.184.216.34"], ["127.0.0.1"]]  # public when checked, loopback for whoever asks next

    async def rebinding(host: str, port: int) -> list[str]:
        return answers.pop(0) if answers else ["127.0.0.1"]

    network = RecordingNetwork()
    async with guarded(resolver=rebinding, network=network) as http:
        response = await http.get("https://rebind.example.test/photo.jpg")
        with pytest.raises(OutboundRefused, match=r"rebind\.example\.test \(127\.0\.0\.1\): a loopback address"):
            await http.get("https://rebind.example.test/again.jpg")  # the first connection closed: a new one

    assert (response.content, network.connects, network.tls_names) == (
        PHOTO,
        [("93.184.216.34", 443)],  # the checked address, not the name resolved again
        ["rebind.example.test"],  # while TLS still verifies the name
    )
    assert b"\r\nHost: rebind.example.test\r\n" in network.sent


# -- allowed: what outbound_allow names is reached ---------------------------------------------


@pytest.mark.parametrize("allow", ["127.0.0.1", "127.0.0.0/8", "cdn.example.test"])
@pytest.mark.parametrize("fetch", FETCHES)
async def test_an_allowed_host_is_reached(fetch, allow):
    async with listening() as listener, guarded([allow]) as http:
        host = "cdn.example.test" if allow == "cdn.example.test" else "127.0.0.1"
        url = listener.url(host, scheme="http")
        if fetch == "LINE external content":
            await fetch_line_external(http, url, line_account(listener.url(host, scheme="http", path="")))
        else:
            await FETCHES[fetch](http, url)

    assert listener.peers == ["127.0.0.1"]


# -- at save time: the URL an owner types ------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1:8443/hook",
        "https://[::1]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://localhost/hook",
        "https://2130706433/hook",
        "https://0x7f.1/hook",
        "https://169.254.169.254/latest/meta-data/",
        "https://10.0.0.1/hook",
        "https://192.168.1.20/hook",
        "https://[fd00::5]/hook",
        "http://127.0.0.1:9000/hook",
    ],
)
def test_a_webhook_url_naming_a_non_public_address_is_refused_when_saved(url):
    with pytest.raises(PayloadError, match=r"may not point at|plain http only"):
        check_webhook_url(url)


def test_a_webhook_url_to_an_allowed_address_is_taken_and_plain_http_only_there():
    allow = OutboundAllow.parse(["10.0.0.0/24", "hooks.internal"])
    for url in (
        "https://10.0.0.5/hook",
        "http://10.0.0.5:8080/hook",
        "http://hooks.internal/hook",
        "https://crm.test/h",
    ):
        check_webhook_url(url, allow)
    with pytest.raises(PayloadError, match="plain http only to a host in outbound_allow"):
        check_webhook_url("http://crm.test/hook", allow)


def test_every_kind_of_non_public_address_is_named_and_public_ones_pass():
    addresses = [
        "8.8.8.8", "2001:4860:4860::8888", "::ffff:8.8.8.8", "2002:808:808::1", "64:ff9b::808:808",
        "127.0.0.2", "0.0.0.0", "10.1.2.3", "172.16.0.1", "192.168.0.1", "169.254.169.254", "100.64.0.1",
        "224.0.0.251", "240.0.0.1", "::", "::1", "::ffff:10.0.0.1", "fe80::1", "fd12::1", "ff02::1",
        "2002:7f00:1::", "64:ff9b::a9fe:a9fe", "64:ff9b:1::1",
    ]  # fmt: skip
    assert {a: refusal(ipaddress.ip_address(a)) for a in addresses} == {
        "8.8.8.8": None,
        "2001:4860:4860::8888": None,
        "::ffff:8.8.8.8": None,
        "2002:808:808::1": None,
        "64:ff9b::808:808": None,
        "127.0.0.2": "a loopback address",
        "0.0.0.0": "an unspecified address",
        "10.1.2.3": "a private address",
        "172.16.0.1": "a private address",
        "192.168.0.1": "a private address",
        "169.254.169.254": "a link-local address",
        "100.64.0.1": "a shared (carrier-grade NAT) address",
        "224.0.0.251": "a multicast address",
        "240.0.0.1": "a private address",
        "::": "an unspecified address",
        "::1": "a loopback address",
        "::ffff:10.0.0.1": "a private address",
        "fe80::1": "a link-local address",
        "fd12::1": "a private address",
        "ff02::1": "a multicast address",
        "2002:7f00:1::": "an address carrying 127.0.0.1 (a loopback address)",
        "64:ff9b::a9fe:a9fe": "an address carrying 169.254.169.254 (a link-local address)",
        "64:ff9b:1::1": "a NAT64 address of a private translator",
    }


# -- what the owner sees: a failed delivery, a media message resolved at once ----------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "hooks.shop.test"])
async def test_a_webhook_aimed_at_loopback_is_recorded_failed_at_once_with_the_reason(db, host):
    async with db.transaction() as session:
        session.add(Tenant(id=TENANT, name="The Shop", created_at=NOW))
    async with listening() as listener, guarded() as hooks, guarded() as http:
        async with db.transaction() as session:
            # Written as a webhook saved before the guard existed would be: the save-time check is
            # not the only line of defence.
            session.add(
                NotificationWebhook(
                    id="whk_1", tenant_id=TENANT, name="CRM", url=listener.url(host, path="/hook"),
                    secret_name="hook", active=True, created_at=NOW,
                )
            )  # fmt: skip
            event = ClaimRejectedSpike(count=3, window_minutes=10)
            await notify(
                session, Event(tenant_id=TENANT, payload=event, recipients=(Recipient(webhook_id="whk_1"),)), now=NOW
            )
        routes = build_routes(
            http=http, guarded_http=hooks, secrets=SECRETS, clock=CLOCK, smtp_url=None, sender=None, timeout_s=2
        )
        async with db.read() as session:
            (job,) = await session.scalars(select(Job))
        retried = False
        try:
            await Dispatcher(db, CLOCK, routes, timeout_s=2).run(
                ClaimedJob(JobId(job.id), job.kind, job.key, job.payload, 1, "test-worker")
            )
        except DeliveriesPending:
            retried = True

    async with db.read() as session:
        (attempt,) = await session.scalars(select(NotificationAttempt))
    expected = {
        "127.0.0.1": "a webhook URL may not point at 127.0.0.1: a loopback address, not in outbound_allow",
        "hooks.shop.test": "webhook: refused to connect to hooks.shop.test (127.0.0.1): a loopback address,"
        " not in outbound_allow",
    }
    assert (attempt.status, attempt.attempts, attempt.error, retried, listener.peers) == (
        "failed",
        1,
        expected[host],
        False,
        [],
    )


async def test_line_external_content_aimed_at_loopback_is_given_up_at_once_with_the_reason(db, tmp_path):
    async with db.transaction() as session:
        session.add(Tenant(id=TENANT, name="The Shop", created_at=NOW))
    async with listening() as listener, guarded() as http:
        deps = channel_deps(db, http, tmp_path / "media")
        await upsert_account(
            db, account_id=LINE_ACCOUNT, tenant_id=TENANT, channel="line", name=None,
            config={"destination": "U0123456789abcdef0123456789abcdef"}, secrets={"channel_access_token": "tok"},
            now=NOW, vault=deps.accounts.vault, own_id=None,
        )  # fmt: skip
        photo = message_event(
            channel_account_id=LINE_ACCOUNT,
            contact_external_id="U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            channel_message_id="600000000000000042",
            content_type="image",
            media=MediaRef(kind="image", ref=listener.url()),
        )
        assert isinstance(photo, InboundMessage)
        stored = await deps.ingestor.ingest(photo, channel="line")
        preparer = MediaPreparer(
            db, deps.ingestor, deps.accounts, {"line": LineMediaFetcher(deps)}, deps.media, transcriber=None
        )
        async with db.read() as session:
            job = await session.scalar(select(Job).where(Job.kind == PREPARE_MEDIA))
        assert job is not None
        retried = False
        try:  # the first of three attempts
            await preparer.run(ClaimedJob(JobId(job.id), job.kind, job.key, job.payload, 1, "test-worker"))
        except Exception:  # what the job raises to be run again, whatever its type
            retried = True

    async with db.read() as session:
        row = await session.get(Message, stored.message_id)
    assert row is not None
    assert (row.status, row.content, row.meta.get("media_error"), retried, listener.peers) == (
        "ready",
        "[image: could not be loaded]",
        "refused to connect to 127.0.0.1: a loopback address, not in outbound_allow",
        False,
        [],
    )


async def test_the_runtime_guards_with_the_outbound_allow_setting(db):
    runtime = Runtime.build(Settings(outbound_allow=["127.0.0.2"]), db=db)
    try:
        async with listening() as loopback, listening("127.0.0.2") as allowed:
            http = runtime.channel_deps.guarded_http
            with pytest.raises(OutboundRefused, match="loopback"):
                await http.get(loopback.url(scheme="http"))
            assert (await http.get(allowed.url(scheme="http"))).content == PHOTO
    finally:
        await runtime.close()

    assert (loopback.peers, allowed.peers) == ([], ["127.0.0.1"])
