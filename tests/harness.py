"""Building blocks for tests: a runtime on a test database with a scripted model, and waits."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from sqlalchemy import func, select

from frontdesk.demo import DEMO_BUSINESS, DEMO_TENANT, DemoAccounts, seed_demo
from frontdesk.ingestion.events import InboundMessage
from frontdesk.platform.clock import Clock, ManualClock, SystemClock
from frontdesk.platform.models.gateway import ModelClient, ModelGateway, PydanticAIClient
from frontdesk.platform.models.script import Script, script_model
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Job, Message, Receipt, Tenant, TurnTrace
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings

FAST = {
    "quiet_window_s": 0.2,
    "quiet_window_cap_s": 3.0,
    "media_ready_timeout_s": 2.0,
    "poll_interval_s": 0.05,
    "sweeper_interval_s": 3600.0,  # tests run sweeps explicitly
    "workers": 2,
    "shutdown_grace_s": 2.0,  # a test that stops its runner mid-job does not wait the default 20 s
}


def script_client(script: dict[str, Any]) -> ModelClient:
    parsed = Script.model_validate(script)
    return PydanticAIClient(script_model(parsed), f"script:{parsed.name}", timeout_s=30)


def reply(text: str, **extra: Any) -> dict[str, Any]:
    return {"reply": text, **extra}


async def make_runtime(
    db: Database, script: dict[str, Any] | ModelClient, *, clock: Clock | None = None, **settings: Any
) -> tuple[Runtime, DemoAccounts]:
    client = script if not isinstance(script, dict) else script_client(script)
    runtime = Runtime.build(
        Settings(**{**FAST, **settings}), gateway=ModelGateway.with_clients({"chat": client}), db=db, clock=clock
    )
    accounts = await seed_demo(db, runtime.clock, runtime.channel_deps.media)
    return runtime, accounts


def message(account: str, text: str, *, session: str = "s1", msg_id: str | None = None, **extra: Any) -> InboundMessage:
    return InboundMessage(
        channel_account_id=account,
        contact_external_id=session,
        channel_message_id=f"{session}:{msg_id or text}",
        text=text,
        **extra,
    )


async def converse(db: Database, script: dict[str, Any], *turns: tuple[str, str], **settings: Any) -> dict[str, str]:
    """Each (session, text) is one web-chat turn, its jobs run to the end before the next (the
    runtime's clock is moved through each quiet window). Returns session -> conversation id."""
    clock = ManualClock()
    runtime, accounts = await make_runtime(db, script, clock=clock, **settings)
    conversations: dict[str, str] = {}
    for session, text in turns:
        clock.advance(5)  # the customer reads the reply and types the next message
        ingested = await runtime.ingestor.ingest(message(accounts.webchat_id, text, session=session))
        conversations[session] = ingested.conversation_id
        await runtime.runner.run_until_idle()
    return conversations


async def demo_prefix(db: Database, policy: dict[str, Any] | None = None, *, compact: bool = False) -> str:
    """The demo tenant's static prompt prefix as the agent builds it: the pack's defaults under
    what the tenant's own data adds, under its stored policy (or ``policy``)."""
    from frontdesk.context.identity import merge_policy, static_prefix
    from frontdesk.packs import PackDeps
    from frontdesk.packs.catalog import PACK

    assert PACK.tenant_data is not None
    data = await PACK.tenant_data(PackDeps(db, SystemClock(), ""), DEMO_TENANT)
    if policy is None:
        async with db.read() as session:
            tenant = await session.get(Tenant, DEMO_TENANT)
            assert tenant is not None
            policy = dict(tenant.policy)
    merged = merge_policy({**PACK.default_policy, **data.policy_defaults}, policy)
    playbook = f"{PACK.playbook}\n{data.playbook_lines}"
    compact_playbook = f"{PACK.compact_playbook}\n{data.playbook_lines}"
    return static_prefix(DEMO_BUSINESS, merged, playbook, compact=compact, compact_playbook=compact_playbook)


def demo_photo_url(photo_id: str, public_url: str) -> str:
    """The URL the catalog tools give for one of the demo's photos (its id and content hash)."""
    from frontdesk.business import Photo
    from frontdesk.demo import demo_business_file
    from frontdesk.platform.media import media_key

    loaded = next(p for item in demo_business_file().items for p in item.photos if p.id == photo_id)
    key = media_key(DEMO_TENANT, loaded.data, loaded.mime_type)
    photo = Photo(id=photo_id, media_key=key, mime_type=loaded.mime_type)
    return f"{public_url}/media/catalog/{DEMO_TENANT}/{photo.file_name}"


async def count(db: Database, model: Any, *where: Any) -> int:
    async with db.transaction() as session:
        return int(await session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


async def replies(db: Database, conversation_id: str | None = None) -> list[Message]:
    async with db.transaction() as session:
        query = select(Message).where(Message.role == "assistant").order_by(Message.id)
        if conversation_id:
            query = query.where(Message.conversation_id == conversation_id)
        return list(await session.scalars(query))


async def traces(db: Database) -> list[TurnTrace]:
    async with db.transaction() as session:
        return list(await session.scalars(select(TurnTrace).order_by(TurnTrace.id)))


async def receipts(db: Database) -> list[Receipt]:
    async with db.transaction() as session:
        return list(await session.scalars(select(Receipt).order_by(Receipt.id)))


async def wait_idle(db: Database, timeout_s: float = 10.0, settle_s: float = 0.3) -> None:
    """Until no job is queued or running and every customer message has been processed."""
    deadline = time.monotonic() + timeout_s
    quiet_since: float | None = None
    while time.monotonic() < deadline:
        busy = await count(db, Job, Job.status.in_(["queued", "running"]))
        pending = await count(db, Message, Message.role == "user", Message.processed_at.is_(None))
        if busy == 0 and pending == 0:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= settle_s:
                return
        else:
            quiet_since = None
        await asyncio.sleep(0.05)
    raise AssertionError(f"not idle after {timeout_s}s: {busy} jobs busy, {pending} messages unprocessed")


class HeldModel:
    """A chat model that answers "re: <the customer's newest words>" and holds its first answer
    until ``release`` is set; ``asked`` is set as soon as a request arrives. ``seen`` keeps what
    each request showed of the conversation: ("customer" | "agent", text) in order."""

    name = "held"

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.release = asyncio.Event()
        self.seen: list[list[tuple[str, str]]] = []

    async def request(self, messages: Any, params: Any) -> Any:
        from pydantic_ai import ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart

        transcript: list[tuple[str, str]] = []
        for m in messages:
            for part in m.parts:
                if isinstance(m, ModelRequest) and isinstance(part, UserPromptPart):
                    transcript.append(("customer", str(part.content)))
                elif isinstance(m, ModelResponse) and isinstance(part, TextPart):  # an earlier reply
                    transcript.append(("agent", part.content))
        self.seen.append(transcript)
        self.asked.set()
        if len(self.seen) == 1:
            await self.release.wait()
        text = f"re: {transcript[-1][1]}"
        return ModelResponse(parts=[ToolCallPart("reply", {"blocks": [{"type": "text", "text": text}]})])


async def reply_texts(db: Database) -> list[str]:
    """What the customer read, one string per assistant message (blocks joined)."""
    from frontdesk.output.transcript import message_text

    return [message_text(m) for m in await replies(db)]
