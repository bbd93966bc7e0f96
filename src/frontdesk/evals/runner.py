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

from frontdesk.demo import seed_demo
from frontdesk.errors import ConfigError
from frontdesk.evals.scenario import Expect, Scenario
from frontdesk.ingestion.events import InboundMessage
from frontdesk.output.blocks import blocks_adapter
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
}


@dataclass
class Observation:
    """What one turn did, read back from the store."""

    replies: list[str] = field(default_factory=list)
    images: int = 0
    outcome: str | None = None
    route: dict[str, Any] = field(default_factory=dict)
    tools_offered: set[str] = field(default_factory=set)
    tools_called: list[str] = field(default_factory=list)
    tools_refused: list[str] = field(default_factory=list)
    claims_accepted: list[str] = field(default_factory=list)
    claims_rejected: list[str] = field(default_factory=list)
    tasks_open: dict[str, int] = field(default_factory=dict)
    notifications: dict[str, int] = field(default_factory=dict)
    ai_enabled: bool = True


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
    """Play ``scenario`` in a fresh database. ``inspect`` (benchmarks) reads the store before it
    is thrown away."""
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
        runtime: Runtime | None = None
        try:
            client = _model(scenario, base_settings or settings)
            runtime = Runtime.build(settings, gateway=ModelGateway.with_clients({"chat": client}))
            await upgrade(runtime.db)
            accounts = await seed_demo(runtime.db, runtime.clock)
            async with runtime.db.transaction() as session:
                tenant = await session.get(Tenant, accounts.tenant_id)
                assert tenant is not None
                tenant.pack, tenant.policy = scenario.pack, scenario.policy
            account = accounts.webchat_id if scenario.channel == "webchat" else accounts.terminal_id
            runtime.runner.start()
            await _play(runtime, scenario, account, result)
            if inspect is not None:
                await inspect(runtime)
        except ConfigError as exc:
            result.error = exc.message
        except Exception as exc:  # a crash is a failed scenario with its reason, not a dead run
            result.error = f"{type(exc).__name__}: {exc}"
        finally:
            if runtime is not None:
                await runtime.close()
    result.seconds = time.monotonic() - started
    return result


async def _play(runtime: Runtime, scenario: Scenario, account: str, result: ScenarioResult) -> None:
    session_id = "eval-customer"
    last_trace = last_message = 0
    conversation_id: str | None = None
    for number, turn in enumerate(scenario.turns, start=1):
        for index, text in enumerate(turn.say):
            ingested = await runtime.ingestor.ingest(
                InboundMessage(
                    channel_account_id=account,
                    contact_external_id=session_id,
                    channel_message_id=f"{session_id}:{number}:{index}",
                    text=text,
                )
            )
            conversation_id = ingested.conversation_id
        assert conversation_id is not None
        await _wait_idle(runtime, conversation_id)
        seen, last_trace, last_message = await _observe(runtime, conversation_id, last_trace, last_message)
        failures, checks = check(turn.expect, seen)
        result.checks += checks
        result.failures.extend(f"turn {number}: {f}" for f in failures)
        result.turns = number


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


def check(expect: Expect, seen: Observation) -> tuple[list[str], int]:
    """Every expectation the turn set, checked against what it did. Returns (failures, checks)."""
    failures: list[str] = []
    checks = 0

    def need(ok: bool, message: str) -> None:
        nonlocal checks
        checks += 1
        if not ok:
            failures.append(message)

    text = "\n".join(seen.replies)
    if expect.no_reply:
        need(not seen.replies, f"expected no reply, got {text[:200]!r}")
    elif not seen.replies:
        need(False, "expected a reply, none was sent")
    if expect.route_intent is not None:
        need(
            seen.route.get("intent") == expect.route_intent,
            f"route intent {seen.route.get('intent')!r}, expected {expect.route_intent!r}",
        )
    if expect.route_domains is not None:
        got = sorted(seen.route.get("domains", []))
        need(got == sorted(expect.route_domains), f"route domains {got}, expected {sorted(expect.route_domains)}")
    for name in expect.tools_called:
        need(name in seen.tools_called, f"tool {name} was not called (called: {seen.tools_called or 'none'})")
    for name in expect.tools_not_called:
        need(name not in seen.tools_called, f"tool {name} was called")
    for name in expect.tools_refused:
        need(name in seen.tools_refused, f"a call to {name} was not refused (refused: {seen.tools_refused or 'none'})")
    for name in expect.tools_offered:
        need(name in seen.tools_offered, f"tool {name} was not offered (offered: {sorted(seen.tools_offered)})")
    for name in expect.tools_not_offered:
        need(name not in seen.tools_offered, f"tool {name} was offered")
    for fragment in expect.reply_contains:
        need(fragment.lower() in text.lower(), f"reply does not contain {fragment!r}: {text[:300]!r}")
    for fragment in expect.reply_not_contains:
        need(fragment.lower() not in text.lower(), f"reply contains {fragment!r}: {text[:300]!r}")
    for claim in expect.claims_accepted:
        need(
            claim in seen.claims_accepted,
            f"claim {claim} was not accepted (accepted: {seen.claims_accepted or 'none'})",
        )
    for claim in expect.claims_rejected:
        need(
            claim in seen.claims_rejected,
            f"claim {claim} was not rejected (rejected: {seen.claims_rejected or 'none'})",
        )
    if expect.outcome is not None:
        need(seen.outcome == expect.outcome, f"outcome {seen.outcome!r}, expected {expect.outcome!r}")
    if expect.fallback is not None:
        need(
            (seen.outcome == "fallback") == expect.fallback,
            f"fallback {'not ' if expect.fallback else ''}shipped (outcome {seen.outcome!r})",
        )
    if expect.images is not None:
        need(seen.images == expect.images, f"{seen.images} images sent, expected {expect.images}")
    if expect.tasks_open is not None:
        for kind, count in expect.tasks_open.items():
            need(
                seen.tasks_open.get(kind, 0) == count,
                f"{seen.tasks_open.get(kind, 0)} open {kind} tasks, expected {count}",
            )
    if expect.notifications is not None:
        for note_kind, count in expect.notifications.items():
            need(
                seen.notifications.get(note_kind, 0) == count,
                f"{seen.notifications.get(note_kind, 0)} {note_kind} notifications, expected {count}",
            )
    if expect.ai_enabled is not None:
        need(seen.ai_enabled == expect.ai_enabled, f"AI is {'on' if seen.ai_enabled else 'off'} for the thread")
    return failures, checks
