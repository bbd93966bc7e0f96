"""The console under test: the real app (``create_app``, which mounts the console), two tenants
with operators, and a signed-in HTTP client."""

from __future__ import annotations

import asyncio
import contextlib
import re
import struct
import time
import zlib
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from fastapi import FastAPI
from sqlalchemy import select

from frontdesk.app import create_app
from frontdesk.business import ItemFields
from frontdesk.business.catalog import item_fields
from frontdesk.cli_operators import add_operator
from frontdesk.demo import seed_demo
from frontdesk.humans.console import ConsoleConfig, ConsoleDeps
from frontdesk.humans.tasks import open_task
from frontdesk.ingestion.events import InboundMessage
from frontdesk.output.blocks import Block
from frontdesk.output.delivery import Deliverer
from frontdesk.output.rendering import DeliveryTarget, PlannedPart, SentPart, one_part_per_block
from frontdesk.platform.ids import TenantId
from frontdesk.platform.models.gateway import ModelGateway
from frontdesk.platform.signals import ConversationSignals
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, ClaimRejection, Receipt, Tenant, TurnTrace
from frontdesk.platform.store.schema_business import CatalogItemRow, CatalogPhotoRow
from frontdesk.platform.store.schema_inbox import SavedScenario
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from harness import FAST, reply, script_client

ECHO = {"name": "echo", "default": [reply("echo: {user_text}")]}
# The model: asked the price of business cards, it reads the item with the catalog pack's tool and
# quotes the price text the tool returned (so the reply is whatever the catalog says right now).
PRICE_SCRIPT = {
    "name": "price-after-edit",
    "rules": [
        {
            "match": r"(?i)\bhow much\b.*\bbusiness cards?\b",
            "responses": [
                {"tool": "get_service_detail", "args": {"service_id": "business-cards"}},
                {
                    "reply": {
                        "blocks": [{"type": "text", "text": "Business cards: {result:get_service_detail.price}."}],
                        "claims": [{"type": "service_presented", "service_id": "business-cards"}],
                    }
                },
            ],
        }
    ],
    "default": [reply("echo: {user_text}")],
}

# The assistant in production: greets, then quotes the catalog's price for business cards (the
# gate proves it) and adds advice nobody asked for, which the gate cannot know is wrong.
BAD_ADVICE = "If you are on a budget, skip business cards and order stickers instead."
BAD_SCRIPT = {
    "name": "bad-advice",
    "rules": [
        {
            "match": r"(?i)\bhow much\b.*\bbusiness cards?\b",
            "responses": [
                {"tool": "get_service_detail", "args": {"service_id": "business-cards"}},
                {
                    "reply": {
                        "blocks": [
                            {"type": "text", "text": "Business cards: {result:get_service_detail.price}."},
                            {"type": "text", "text": BAD_ADVICE},
                        ],
                        "claims": [{"type": "service_presented", "service_id": "business-cards"}],
                    }
                },
            ],
        }
    ],
    "default": [reply("Hello! How can I help?")],
}

PASSWORD = "correct horse battery"
OWNER, AGENT, OTHER = "owner@demo.test", "agent@demo.test", "owner@other.test"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
OTHER_ITEM, OTHER_PHOTO = "other-cards", "other-cards-1"

SHOTS = Path(__file__).parent / "screenshots"  # the browser tests' screenshots


def png(seed: int = 0, size: int = 2) -> bytes:
    """A real PNG (``size`` x ``size`` pixels of one grey, from ``seed``): distinct seeds, distinct files."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 0, 0, 0, 0)
    pixels = b"".join(b"\x00" + bytes([seed % 256]) * size for _ in range(size))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(pixels)) + chunk(b"IEND", b"")


class ShiftedClock:
    """Real time plus an offset a test can move forward (session expiry, rate-limit windows)."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def monotonic(self) -> float:
        return time.monotonic() + self.offset.total_seconds()


@dataclass
class FlakyRenderer:
    """A channel double: plans one call per block, fails every call while ``failing``."""

    signals: ConversationSignals
    failing: bool = True
    calls: list[dict[str, Any]] = field(default_factory=list)

    def plan(self, target: DeliveryTarget, blocks: Sequence[Block]) -> list[PlannedPart]:
        return one_part_per_block(blocks)

    async def send(self, target: DeliveryTarget, part: PlannedPart, *, replay: bool = False) -> SentPart:
        self.calls.append({"conversation": target.conversation_id, "replay": replay, "failed": self.failing})
        if self.failing:
            raise RuntimeError("platform unavailable (test double)")
        self.signals.publish(target.conversation_id)
        return SentPart(("platform-1",))

    async def typing(self, target: DeliveryTarget) -> None:
        return None


@dataclass
class Console:
    runtime: Runtime
    app: FastAPI
    deps: ConsoleDeps
    clock: ShiftedClock
    flaky: FlakyRenderer
    ids: dict[str, str]  # named ids of both tenants' rows

    async def customer_says(self, account: str, session: str, text: str, msg_id: str | None = None) -> str:
        result = await self.runtime.ingestor.ingest(
            InboundMessage(
                channel_account_id=account,
                contact_external_id=session,
                channel_message_id=f"{session}:{msg_id or text}",
                text=text,
            )
        )
        return result.conversation_id

    async def drain(self) -> None:
        while await self.runtime.runner.run_once():
            pass


def console_deps(runtime: Runtime, renderers: Mapping[str, Any] | None = None) -> ConsoleDeps:
    deliverer = runtime.deliverer if renderers is None else Deliverer(runtime.db, runtime.clock, renderers)
    return ConsoleDeps(
        runtime.db,
        runtime.clock,
        runtime.signals,
        deliverer,
        ConsoleConfig.from_settings(runtime.settings),
        runtime.agent_packs,
    )


async def build_console(db: Database, script: dict[str, Any] = ECHO, **settings: Any) -> Console:
    clock = ShiftedClock()
    runtime = Runtime.build(
        Settings(**{**FAST, "quiet_window_s": 0, **settings}),
        gateway=ModelGateway.with_clients({"chat": script_client(script)}),
        db=db,
        clock=clock,
    )
    accounts = await seed_demo(db, clock, runtime.channel_deps.media)
    now = clock.now()
    async with db.transaction() as session:
        session.add(Tenant(id="other", name="Other Shop", pack="catalog", policy={}, created_at=now))
        await session.flush()
        session.add(
            ChannelAccount(
                id="other-webchat",
                tenant_id="other",
                channel="webchat",
                name="Other web chat",
                config={},
                created_at=now,
            )
        )
        session.add(
            ChannelAccount(
                id="demo-flaky",
                tenant_id="demo",
                channel="flaky",
                name="Flaky channel",
                config={},
                secrets={"token": "s3cr3t-never-shown"},
                created_at=now,
            )
        )
    operators = {}
    for email, tenant, role in ((OWNER, "demo", "owner"), (AGENT, "demo", "agent"), (OTHER, "other", "owner")):
        operators[email] = await add_operator(
            db,
            tenant_id=tenant,
            email=email,
            name=email.split("@")[0].title(),
            role=role,
            password=PASSWORD,
            language="en",
            now=now,
        )
    flaky = FlakyRenderer(runtime.signals)
    # Operator sends (and their replays) go through the runtime's deliverer: give it the flaky channel.
    runtime.deliverer = Deliverer(
        runtime.db, runtime.clock, {**runtime.deliverer._renderers, "flaky": flaky}, on_finished=runtime.signals.publish
    )
    deps = console_deps(runtime)
    app = create_app(runtime, run_workers=False)  # the console is mounted by the app itself
    console = Console(runtime, app, deps, clock, flaky, {"webchat": accounts.webchat_id})
    # Rows of the other tenant that every route must refuse.
    other_conv = await console.customer_says("other-webchat", "o1", "hello from the other shop")
    await console.drain()
    async with db.transaction() as session:
        task = await open_task(
            session,
            tenant_id="other",
            conversation_id=other_conv,
            kind="handoff",
            priority="high",
            title="other tenant task",
            details={},
            now=clock.now(),
        )
    async with db.transaction() as session:
        receipt = await session.scalar(select(Receipt.id).where(Receipt.conversation_id == other_conv))
        turn = await session.scalar(select(TurnTrace.id).where(TurnTrace.conversation_id == other_conv))
        assert turn is not None
        session.add(
            ClaimRejection(
                conversation_id=other_conv,
                turn_id=turn,
                attempt=1,
                claims=[],
                failures=[{"rule": "price", "reason": "other tenant rejected reply"}],
                reply_text="other tenant rejected reply",
                created_at=clock.now(),
            )
        )
        session.add(
            SavedScenario(
                tenant_id="other",
                conversation_id=other_conv,
                turn_id=turn,
                note="other tenant scenario",
                sent="other tenant reply",
                checks={},
                content="name: other tenant scenario",
                saved_by="Other",
                created_at=clock.now(),
            )
        )
        await session.flush()
        other_scenario = await session.scalar(select(SavedScenario.id))
    await _other_catalog(console)
    console.ids.update(
        other_turn=str(turn),
        other_scenario=str(other_scenario),
        other_conversation=other_conv,
        other_task=task.id,
        other_receipt=str(receipt),
        other_item=OTHER_ITEM,
        other_photo=OTHER_PHOTO,
        other_operator=operators[OTHER].id,
    )
    return console


async def _other_catalog(console: Console) -> None:
    """The other tenant's catalog: one item with one photo, seeded as data (no audit rows: the
    tests count this tenant's audit trail), for every catalog route to refuse."""
    runtime, now = console.runtime, console.clock.now()
    fields = ItemFields.model_validate(
        {"id": OTHER_ITEM, "name": {"en": "Other shop cards"}, "price": {"currency": "USD", "amount": 9}}
    )
    stored = await runtime.channel_deps.media.put(TenantId("other"), png(200), "image/png")
    async with runtime.db.transaction() as session:
        session.add(
            CatalogItemRow(
                tenant_id="other", id=OTHER_ITEM, position=0, active=True, data=item_fields(fields),
                created_at=now, updated_at=now,
            )
        )  # fmt: skip
        session.add(
            CatalogPhotoRow(
                tenant_id="other", id=OTHER_PHOTO, item_id=OTHER_ITEM, position=0, media_key=stored.key,
                mime_type="image/png", caption={"en": "other tenant photo"}, created_at=now,
            )
        )  # fmt: skip


async def listening(http: httpx2.AsyncClient, url: str, params: Mapping[str, str]) -> asyncio.Task[str]:
    """An SSE stream opened and answering (its first line read), as a task that ends with the
    data of its first ``changed`` event: a test changes something only once the stream listens,
    waiting on that line, not on a sleep."""
    opened = asyncio.Event()

    async def first_change() -> str:
        async with http.stream("GET", url, params=params) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            event = ""
            async for line in stream.aiter_lines():
                opened.set()
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                if line.startswith("data: ") and event == "changed":
                    return line.removeprefix("data: ")
        raise AssertionError("stream ended")

    task = asyncio.create_task(first_change())
    answered = asyncio.create_task(opened.wait())
    await asyncio.wait({task, answered}, return_when=asyncio.FIRST_COMPLETED)
    answered.cancel()
    if task.done():
        task.result()  # it failed before answering: say why
    return task


@asynccontextmanager
async def client(console: Console) -> AsyncIterator[httpx2.AsyncClient]:
    transport = httpx2.ASGITransport(app=console.app, raise_app_exceptions=False)
    async with httpx2.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


async def sign_in(http: httpx2.AsyncClient, email: str = OWNER, password: str = PASSWORD) -> httpx2.Response:
    form = await http.get("/console/login")
    token = CSRF.search(form.text)
    assert token, form.text
    return await http.post("/console/login", data={"csrf": token[1], "email": email, "password": password})


async def csrf_of(http: httpx2.AsyncClient, path: str = "/console/conversations") -> str:
    page = await http.get(path)
    assert page.status_code == 200, page.text
    token = CSRF.search(page.text)
    assert token, page.text
    return token[1]


class _FormReader(HTMLParser):
    """What a browser would post for one form of a page: named inputs (checked boxes and radios
    only), textareas and selected options; disabled fieldsets and file inputs left out."""

    def __init__(self, form_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.fieldsets: list[bool] = []  # open fieldsets inside the form: disabled or not
        self.fields: list[tuple[str, str]] = []
        self._textarea: str | None = None
        self._select: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.inside = a.get("id") == self.form_id
        if not self.inside:
            return
        if tag == "fieldset":
            self.fieldsets.append("disabled" in a)
        if tag == "option" and self._select and "selected" in a:
            self.fields.append((self._select, a.get("value", "")))
        name = a.get("name")
        if any(self.fieldsets) or not name:
            return
        if tag == "input" and a.get("type", "text") not in ("file", "submit", "button"):
            if a.get("type") not in ("checkbox", "radio") or "checked" in a:
                self.fields.append((name, a.get("value", "on" if a.get("type") == "checkbox" else "")))
        elif tag == "textarea":
            self._textarea, self._text = name, []
        elif tag == "select":
            self._select = name

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "fieldset" and self.inside and self.fieldsets:
            self.fieldsets.pop()
        elif tag == "textarea" and self._textarea is not None:
            self.fields.append((self._textarea, "".join(self._text).removeprefix("\n")))
            self._textarea = None
        elif tag == "select":
            self._select = None


def form_fields(html: str, form_id: str) -> dict[str, str]:
    """The fields a browser would post from the form ``form_id`` of ``html`` (one value a name)."""
    reader = _FormReader(form_id)
    reader.feed(html)
    return dict(reader.fields)


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers (pytest owns the process's signals)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@asynccontextmanager
async def served(console: Console, config: uvicorn.Config | None = None) -> AsyncIterator[str]:
    """The app on 127.0.0.1 (a free port) in this event loop, over real HTTP (SSE needs it:
    the in-process transport buffers a streamed body). Yields its base URL. ``config``: how to
    serve it instead (``serve``'s own, say); it must listen on 127.0.0.1, port 0."""
    config = config or uvicorn.Config(console.app, host="127.0.0.1", port=0, log_level="warning")
    config.lifespan = "off"
    server = _QuietServer(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        server.force_exit = True  # open event streams never end by themselves
        await asyncio.wait_for(task, 10)
