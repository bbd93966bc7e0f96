"""The console under test: the real app (``create_app``, which mounts the console), two tenants
with operators, and a signed-in HTTP client."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx2
import uvicorn
from fastapi import FastAPI
from sqlalchemy import select

from frontdesk.app import create_app
from frontdesk.cli_operators import add_operator
from frontdesk.demo import seed_demo
from frontdesk.humans.console import ConsoleConfig, ConsoleDeps
from frontdesk.humans.tasks import open_task
from frontdesk.ingestion.events import InboundMessage
from frontdesk.output.blocks import Block
from frontdesk.output.delivery import Deliverer
from frontdesk.output.rendering import DeliveryTarget, PlannedPart, SentPart, one_part_per_block
from frontdesk.platform.models.gateway import ModelGateway
from frontdesk.platform.signals import ConversationSignals
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, ClaimRejection, Receipt, Tenant, TurnTrace
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from harness import FAST, reply, script_client

ECHO = {"name": "echo", "default": [reply("echo: {user_text}")]}
PASSWORD = "correct horse battery"
OWNER, AGENT, OTHER = "owner@demo.test", "agent@demo.test", "owner@other.test"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


class ManualClock:
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
    clock: ManualClock
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
    clock = ManualClock()
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
    for email, tenant, role in ((OWNER, "demo", "owner"), (AGENT, "demo", "agent"), (OTHER, "other", "owner")):
        await add_operator(
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
    runtime.deliverer = Deliverer(runtime.db, runtime.clock, {**runtime.deliverer._renderers, "flaky": flaky})
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
    console.ids.update(other_conversation=other_conv, other_task=task.id, other_receipt=str(receipt))
    return console


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


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers (pytest owns the process's signals)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@asynccontextmanager
async def served(console: Console) -> AsyncIterator[str]:
    """The app on 127.0.0.1 (a free port) in this event loop, over real HTTP (SSE needs it:
    the in-process transport buffers a streamed body). Yields its base URL."""
    server = _QuietServer(uvicorn.Config(console.app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
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
