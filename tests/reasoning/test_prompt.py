"""Prompt assembly keeps the provider's prompt cache warm: the static prefix is byte-identical for
every turn, customer and time until an operator edits policy, and it always comes before the
dynamic tail, which carries the clock in the business's own time zone."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic_ai import ModelRequest, SystemPromptPart

from frontdesk.capabilities.policy import RoutingDecision
from frontdesk.context.conversation import ContactProfile, ConversationContext
from frontdesk.context.identity import merge_policy, prefix_hash, static_prefix
from frontdesk.context.ledgers import WorkingState
from frontdesk.demo import seed_demo
from frontdesk.packs.printshop import PACK
from frontdesk.platform.models.gateway import ModelGateway
from frontdesk.platform.store.schema import Tenant
from frontdesk.reasoning.prompt import build_prompt, dynamic_tail
from frontdesk.reasoning.turn import Turn, TurnMessage
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from harness import FAST, message, reply, script_client, traces

MARCH = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)  # 10:00 in New York (EST)
JULY = datetime(2026, 7, 1, 2, 30, tzinfo=UTC)  # still June 30th in New York (EDT)
POLICY = merge_policy(PACK.default_policy, {})


def prefix(policy=POLICY) -> str:
    return static_prefix(PACK.business_name, policy, PACK.playbook)


def context(contact: ContactProfile, now: datetime) -> ConversationContext:
    return ConversationContext("demo", "printshop", {}, contact, [], None, WorkingState(now=now), 0, 0, None)


def tail(contact: ContactProfile, now: datetime) -> str:
    decision = RoutingDecision("greeting", frozenset(), 0.9, "discovery")
    return dynamic_tail(now.astimezone(POLICY.zone), context(contact, now), decision, [])


def test_the_prefix_hash_changes_only_when_an_operator_edits_policy():
    edited = merge_policy(PACK.default_policy, {"tone": "Formal and brief."})

    assert prefix_hash(prefix()) == prefix_hash(prefix(merge_policy(PACK.default_policy, {})))
    assert prefix_hash(prefix(edited)) != prefix_hash(prefix())
    assert prefix(edited) == prefix().replace(f"Tone: {POLICY.tone}", "Tone: Formal and brief.")


def test_the_tail_shows_the_clock_in_the_business_time_zone():
    assert POLICY.timezone == "America/New_York"

    assert "Local time at the business: Monday 2026-03-02 10:00 (America/New_York)" in tail(ContactProfile(), MARCH)
    assert "Local time at the business: Tuesday 2026-06-30 22:30 (America/New_York)" in tail(ContactProfile(), JULY)


def test_build_prompt_puts_the_static_prefix_first_and_the_tail_after_the_history():
    at = MARCH
    history = (TurnMessage(1, "user", "text", "hi", at), TurnMessage(2, "assistant", "text", "Hello!", at))
    turn = Turn("demo", PACK.business_name, "conv-1", (TurnMessage(3, "user", "text", "cards?", at),), history)
    the_tail = tail(ContactProfile(name="Ana"), at)

    messages = build_prompt(turn, prefix(), prefix_hash(prefix()), the_tail, []).messages

    system = [(i, p.content) for i, m in enumerate(messages) for p in m.parts if isinstance(p, SystemPromptPart)]
    # Prefix, then the history unchanged, then the tail with the new messages: everything before
    # the tail is the same bytes next turn (prompt cache).
    assert system == [(0, prefix()), (3, the_tail)]
    assert len(messages[0].parts) == 1
    assert [type(m).__name__ for m in messages] == ["ModelRequest", "ModelRequest", "ModelResponse", "ModelRequest"]
    assert [type(p).__name__ for p in messages[-1].parts] == ["SystemPromptPart", "UserPromptPart"]


class ManualClock:
    def __init__(self, now: datetime) -> None:
        self.at = now

    def now(self) -> datetime:
        return self.at

    def monotonic(self) -> float:
        return self.at.timestamp()


class RecordingModel:
    """The scripted model, keeping the system parts of every request it was sent."""

    name = "recording"

    def __init__(self) -> None:
        self._script = script_client({"default": [reply("Hello!")]})
        self.system_parts: list[list[str]] = []

    async def request(self, messages, params):
        parts = [p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts]
        system = [
            p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, SystemPromptPart)
        ]
        assert parts[0] == system[0].content  # the static prefix comes first
        self.system_parts.append([system[0].content, system[-1].content])
        return await self._script.request(messages, params)


async def test_every_customer_and_time_shares_one_prefix_until_the_operator_edits_policy(db):
    clock, model = ManualClock(MARCH), RecordingModel()
    settings = Settings(**{**FAST, "quiet_window_s": 0})
    runtime = Runtime.build(settings, gateway=ModelGateway.with_clients({"chat": model}), db=db, clock=clock)
    accounts = await seed_demo(db, clock)

    async def say(session: str, text: str, name: str) -> None:
        ingested = await runtime.ingestor.ingest(
            message(accounts.terminal_id, text, session=session, contact_name=name)
        )
        await runtime.assembler.process(ingested.conversation_id, "w")

    await say("ana", "Hi, I'm Ana Pérez, 555-123-4567", "Ana Pérez")
    clock.at = JULY
    await say("bao", "xin chào, mình là Bảo", "Bảo Trần")
    async with db.transaction() as session:
        (await session.get(Tenant, accounts.tenant_id)).policy = {"tone": "Formal and brief."}
    await say("ana", "What are your hours?", "Ana Pérez")

    [(march_prefix, march_tail), (july_prefix, july_tail), (edited_prefix, _)] = model.system_parts
    first, second, third = (t.prefix_hash for t in await traces(db))
    assert march_prefix == july_prefix == prefix()
    assert first == second == prefix_hash(march_prefix)
    assert edited_prefix == prefix(merge_policy(PACK.default_policy, {"tone": "Formal and brief."}))
    assert third == prefix_hash(edited_prefix) != first
    for volatile in ("2026", "10:00", "22:30", "Monday", "Tuesday", "Ana", "Bảo", "555-123"):
        assert volatile not in march_prefix, volatile
    assert "Monday 2026-03-02 10:00 (America/New_York)" in march_tail
    assert "Ana Pérez" in march_tail
    assert "Tuesday 2026-06-30 22:30 (America/New_York)" in july_tail
    assert "Bảo Trần" in july_tail
