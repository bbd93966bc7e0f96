"""Running scenarios through the real pipeline: a fresh SQLite file per scenario, the pack and
channel the scenario names, the ingestor, the job runner, the assembler, the gate and delivery.
Only the model is chosen by the scenario (a script, or the configured slot)."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from frontdesk.business import Actor, Importer, read_business_file
from frontdesk.business.files import business_from_mapping
from frontdesk.demo import DEMO_TENANT, seed_demo
from frontdesk.errors import ConfigError
from frontdesk.evals.checks import Observation, check
from frontdesk.evals.mcp_packs import connect_service, open_drafts, service_checks
from frontdesk.evals.scenario import Scenario, ScenarioTurn
from frontdesk.ingestion.events import InboundMessage
from frontdesk.output.blocks import blocks_adapter
from frontdesk.platform.clock import Clock, ClockFrom
from frontdesk.platform.models.gateway import ModelClient, ModelGateway, PydanticAIClient
from frontdesk.platform.models.script import Script, read_script, script_model
from frontdesk.platform.store.migrate import upgrade
from frontdesk.platform.store.schema import (
    ClaimRejection,
    Conversation,
    Job,
    Message,
    Notification,
    Task,
    Tenant,
    TurnTrace,
)
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings

TURN_TIMEOUT_S = 60.0
EVAL_SETTINGS: dict[str, Any] = {
    "quiet_window_s": 0.05,
    "quiet_window_cap_s": 2.0,
    "poll_interval_s": 0.02,
    "sweeper_interval_s": 3600.0,
    "workers": 1,
    "public_url": "http://frontdesk.eval",
    "mcp_servers": {},  # a pack's service is the scenario's own (evals/mcp_packs.py), never a configured one
}


@dataclass
class ScenarioResult:
    name: str
    path: str
    failures: list[str] = field(default_factory=list)
    checks: int = 0
    turns: int = 0
    seconds: float = 0.0
    error: str | None = None

    @property
    def passed(self) -> bool:
        return not self.failures and self.error is None


def _model(scenario: Scenario, settings: Settings) -> ModelClient:
    choice = scenario.model
    if choice.configured:
        if not settings.model_chat:
            raise ConfigError("scenario asks for the configured model, but FRONTDESK_MODEL_CHAT is not set")
        return ModelGateway({"chat": settings.model_chat}, timeout_s=settings.model_timeout_s).client("chat")
    if isinstance(choice.script, dict):
        script = Script.model_validate(choice.script)
    else:
        base = scenario.path.parent if scenario.path else Path.cwd()
        reference = str(base / str(choice.script)) if (base / str(choice.script)).is_file() else str(choice.script)
        script = read_script(reference)
    return PydanticAIClient(script_model(script), f"script:{script.name}", timeout_s=settings.model_timeout_s)


Inspector = Callable[[Runtime], Awaitable[None]]


async def run_scenario(
    scenario: Scenario, base_settings: Settings | None = None, *, inspect: Inspector | None = None
) -> ScenarioResult:
    """Play ``scenario`` in a fresh database (and, for a pack with its own service, a fresh service
    database). ``inspect`` (benchmarks) reads the store before it is thrown away."""
    result = ScenarioResult(scenario.name, str(scenario.path or ""))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="frontdesk-eval-") as tmp:
        settings = Settings(
            **{
                **(base_settings.model_dump() if base_settings else {}),
                **EVAL_SETTINGS,
                "database_url": f"sqlite+aiosqlite:///{tmp}/eval.db",
                "media_dir": Path(tmp) / "media",
            }
        )
        play = _Play(scenario, settings, Path(tmp), result)
        try:
            await play.run(_model(scenario, base_settings or settings), inspect)
        except ConfigError as exc:
            result.error = exc.message
        except Exception as exc:  # a crash is a failed scenario with its reason, not a dead run
            result.error = f"{type(exc).__name__}: {exc}"
        finally:
            await play.close()
    result.seconds = time.monotonic() - started
    return result


@dataclass
class _Play:
    """One scenario being played: the runtime (replaced on a ``restart`` turn) and where the
    conversation's traces and replies were last read."""

    scenario: Scenario
    settings: Settings
    folder: Path
    result: ScenarioResult
    runtime: Runtime | None = None
    account: str = ""
    conversation_id: str | None = None
    last_trace: int = 0
    last_message: int = 0
    clock: Clock = field(init=False)

    def __post_init__(self) -> None:
        # One clock for the whole play: a ``restart`` turn's runtime goes on from the same time.
        self.clock = ClockFrom(self.scenario.at)

    async def boot(self, client: ModelClient, *, fresh: bool) -> Runtime:
        gateway = ModelGateway.with_clients({"chat": client})
        runtime = Runtime.build(self.settings, gateway=gateway, clock=self.clock)
        self.runtime = runtime
        if fresh:
            await upgrade(runtime.db)
            business = self.scenario.business
            media = runtime.channel_deps.media
            accounts = await seed_demo(runtime.db, runtime.clock, media if business is None else None)
            async with runtime.db.transaction() as session:
                tenant = await session.get(Tenant, accounts.tenant_id)
                assert tenant is not None
                tenant.pack = self.scenario.pack
                # The scenario's own policy fields over the business's (time zone included).
                tenant.policy = {**(tenant.policy if business is None else {}), **self.scenario.policy}
                if business is not None:
                    tenant.name, tenant.languages = "Sample business", list(self.scenario.languages)
            if business is not None:
                await self.import_business(runtime, business)
            self.account = accounts.webchat_id if self.scenario.channel == "webchat" else accounts.terminal_id
        await connect_service(runtime, self.scenario.pack, self.folder)
        runtime.runner.start()
        return runtime

    async def import_business(self, runtime: Runtime, business: str | dict[str, Any]) -> None:
        """The scenario's business file, imported the way ``frontdesk catalog import`` does it."""
        base = self.scenario.path.parent if self.scenario.path is not None else Path(".")
        languages = list(self.scenario.languages)
        if isinstance(business, dict):
            loaded = business_from_mapping(business, base, languages)
        else:
            loaded = read_business_file(base / business, languages)
        importer = Importer(runtime.db, runtime.clock, runtime.channel_deps.media)
        await importer.apply(DEMO_TENANT, loaded, Actor(via="import"))
        if loaded.profile is not None:
            async with runtime.db.transaction() as session:
                tenant = await session.get(Tenant, DEMO_TENANT)
                assert tenant is not None
                tenant.name = loaded.profile.name

    async def close(self) -> None:
        if self.runtime is not None:
            runtime, self.runtime = self.runtime, None
            await runtime.close()

    async def run(self, client: ModelClient, inspect: Inspector | None) -> None:
        runtime = await self.boot(client, fresh=True)
        for number, turn in enumerate(self.scenario.turns, start=1):
            if turn.restart:
                await self.close()
                runtime = await self.boot(client, fresh=False)
            await self.turn(runtime, number, turn)
            self.result.turns = number
        if inspect is not None:
            await inspect(runtime)

    async def turn(self, runtime: Runtime, number: int, turn: ScenarioTurn) -> None:
        session_id = "eval-customer"
        for index, text in enumerate(turn.say):
            ingested = await runtime.ingestor.ingest(
                InboundMessage(
                    channel_account_id=self.account,
                    contact_external_id=session_id,
                    channel_message_id=f"{session_id}:{number}:{index}",
                    text=text,
                )
            )
            self.conversation_id = ingested.conversation_id
        assert self.conversation_id is not None
        await _wait_idle(runtime, self.conversation_id)
        seen, self.last_trace, self.last_message = await _observe(
            runtime, self.conversation_id, self.last_trace, self.last_message
        )
        pack = self.scenario.pack
        seen.write_tools_offered = _writes(runtime, pack, seen.tools_offered)
        if turn.expect.needs_service():
            seen.drafts = await open_drafts(runtime, pack, self.conversation_id)
        failures, checks = check(turn.expect, seen)
        service_failures, service_count = await service_checks(runtime, pack, turn.expect.service)
        self.result.checks += checks + service_count
        self.result.failures.extend(f"turn {number}: {f}" for f in [*failures, *service_failures])


def _writes(runtime: Runtime, pack: str, offered: set[str]) -> set[str]:
    """The offered tools that change something, by the pack's policy catalog."""
    agent_pack = runtime.agent_packs.get(pack)
    if agent_pack is None:
        return set()
    return {name for name in offered if (policy := agent_pack.catalog.policy(name)) is not None and policy.writes}


async def _wait_idle(runtime: Runtime, conversation_id: str) -> None:
    deadline = time.monotonic() + TURN_TIMEOUT_S
    while time.monotonic() < deadline:
        async with runtime.db.read() as session:
            busy = await session.scalar(
                select(func.count()).select_from(Job).where(Job.status.in_(["queued", "running"]))
            )
            pending = await session.scalar(
                select(func.count())
                .select_from(Message)
                .where(
                    Message.conversation_id == conversation_id,
                    Message.role == "user",
                    Message.processed_at.is_(None),
                )
            )
        if not busy and not pending:
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"the turn did not finish within {TURN_TIMEOUT_S:.0f} s")


async def _observe(
    runtime: Runtime, conversation_id: str, after_trace: int, after_message: int
) -> tuple[Observation, int, int]:
    seen = Observation()
    async with runtime.db.read() as session:
        traces = list(
            await session.scalars(
                select(TurnTrace)
                .where(TurnTrace.conversation_id == conversation_id, TurnTrace.id > after_trace)
                .order_by(TurnTrace.id)
            )
        )
        replies = list(
            await session.scalars(
                select(Message)
                .where(
                    Message.conversation_id == conversation_id,
                    Message.role == "assistant",
                    Message.id > after_message,
                )
                .order_by(Message.id)
            )
        )
        rejections = list(
            await session.scalars(select(ClaimRejection).where(ClaimRejection.turn_id.in_([t.id for t in traces])))
        )
        tasks = list(await session.scalars(select(Task).where(Task.conversation_id == conversation_id)))
        notes = list(await session.scalars(select(Notification).where(Notification.conversation_id == conversation_id)))
        conversation = await session.get(Conversation, conversation_id)
    for trace in traces:
        seen.outcome = trace.outcome
        seen.route = trace.route
        seen.tools_offered.update(trace.tools_offered)
        seen.claims_accepted.extend(str(c.get("type")) for c in trace.claims)
        for call in trace.tool_calls:
            name = str(call.get("resolved") or call.get("name"))
            if call.get("ok"):
                seen.tools_called.append(name)
            elif call.get("error") == "not offered this turn":
                seen.tools_refused.append(name)
            else:
                seen.tools_failed.append(name)
    for rejection in rejections:
        seen.claims_rejected.extend(
            str(f.get("claim", {}).get("type") if f.get("claim") else f["rule"]) for f in rejection.failures
        )
    for reply in replies:
        blocks = blocks_adapter.validate_json(reply.content)
        seen.replies.append("\n".join(b.text if b.type == "text" else (b.caption or "") for b in blocks))
        seen.images += sum(len(b.urls) for b in blocks if b.type == "image_group")
    seen.tasks_open = dict(Counter(t.kind for t in tasks if t.status == "open"))
    seen.notifications = dict(Counter(n.kind for n in notes))
    seen.ai_enabled = bool(conversation.ai_enabled) if conversation else True
    last_trace = traces[-1].id if traces else after_trace
    last_message = replies[-1].id if replies else after_message
    return seen, last_trace, last_message
