"""Prompt assembly keeps the provider's prompt cache warm: the static prefix is byte-identical for
every turn, customer and time until an operator edits policy, and it always comes before the
dynamic tail, which carries the clock in the business's own time zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pydantic_ai import ModelRequest, SystemPromptPart, UserPromptPart

from frontdesk.capabilities.policy import RoutingDecision
from frontdesk.context.budget import MESSAGE_OVERHEAD_TOKENS, BudgetConfig
from frontdesk.context.conversation import ContactProfile, ContextLoader, ConversationContext
from frontdesk.context.identity import merge_policy, prefix_hash, static_prefix
from frontdesk.context.ledgers import WorkingState
from frontdesk.demo import DEMO_BUSINESS, demo_playbook, demo_policy, seed_demo
from frontdesk.packs import PackDeps
from frontdesk.packs.catalog import PACK
from frontdesk.platform.clock import ManualClock
from frontdesk.platform.models.gateway import ModelGateway
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Message, Tenant
from frontdesk.platform.tokens import count_tokens
from frontdesk.reasoning.agent import Agent
from frontdesk.reasoning.loop import LoopLimits
from frontdesk.reasoning.prompt import build_prompt, dynamic_tail
from frontdesk.reasoning.turn import Turn, TurnMessage
from frontdesk.runtime import Runtime, agent_packs
from frontdesk.settings import Settings
from harness import FAST, demo_prefix, message, reply, script_client, traces

MARCH = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)  # 10:00 in New York (EST)
JULY = datetime(2026, 7, 1, 2, 30, tzinfo=UTC)  # still June 30th in New York (EDT)
POLICY = merge_policy(PACK.default_policy, demo_policy())


def prefix(policy=POLICY) -> str:
    return static_prefix(DEMO_BUSINESS, policy, demo_playbook())


def context(contact: ContactProfile, now: datetime) -> ConversationContext:
    return ConversationContext("demo", "catalog", {}, contact, [], None, WorkingState(now=now), 0, 0, None)


def tail(contact: ContactProfile, now: datetime) -> str:
    decision = RoutingDecision("greeting", frozenset(), 0.9, "discovery")
    return dynamic_tail(now.astimezone(POLICY.zone), context(contact, now), decision, [])


def test_the_prefix_hash_changes_only_when_an_operator_edits_policy():
    edited = merge_policy(PACK.default_policy, {**demo_policy(), "tone": "Formal and brief."})

    assert prefix_hash(prefix()) == prefix_hash(prefix(merge_policy(PACK.default_policy, demo_policy())))
    assert prefix_hash(prefix(edited)) != prefix_hash(prefix())
    assert prefix(edited) == prefix().replace(f"Tone: {POLICY.tone}", "Tone: Formal and brief.")


def test_the_tail_shows_the_clock_in_the_business_time_zone():
    assert POLICY.timezone == "America/New_York"

    assert "Local time at the business: Monday 2026-03-02 10:00 (America/New_York)" in tail(ContactProfile(), MARCH)
    assert "Local time at the business: Tuesday 2026-06-30 22:30 (America/New_York)" in tail(ContactProfile(), JULY)


def test_a_small_models_prompt_keeps_the_rules_the_catalog_and_this_turns_facts_only():
    compact_prefix = static_prefix(
        DEMO_BUSINESS, POLICY, demo_playbook(), compact=True, compact_playbook=demo_playbook(compact=True)
    )
    decision = RoutingDecision("detail_question", frozenset({"catalog"}), 0.8, "capture", language="es")
    full_tail = dynamic_tail(MARCH.astimezone(POLICY.zone), context(ContactProfile(), MARCH), decision, ["x"])
    compact_tail = dynamic_tail(
        MARCH.astimezone(POLICY.zone), context(ContactProfile(name="Ana"), MARCH), decision, ["x"], compact=True
    )

    # What a small model needs: who it speaks for, never to invent, the owner's rules for saving
    # and handing over, the catalog's ids, the language; the answer format comes with its tools.
    assert "Never invent" in prefix()
    assert "never invent a price" in compact_prefix
    for kept in (POLICY.business_description, POLICY.escalate_when, "business-cards = Business cards"):
        assert kept in compact_prefix, kept
    assert POLICY.tone not in compact_prefix
    assert "Reply in Spanish." in compact_tail
    assert "Ana" in compact_tail
    # Sections with nothing in them are left out instead of saying "None.".
    assert "None." not in compact_tail
    assert "Empty." not in compact_tail
    assert "None." in full_tail
    assert count_tokens(compact_prefix) < 0.6 * count_tokens(prefix())
    assert count_tokens(compact_tail) * 2 < count_tokens(full_tail)


def test_build_prompt_puts_the_static_prefix_first_and_the_tail_after_the_history():
    at = MARCH
    history = (TurnMessage(1, "user", "text", "hi", at), TurnMessage(2, "assistant", "text", "Hello!", at))
    turn = Turn("demo", DEMO_BUSINESS, "conv-1", (TurnMessage(3, "user", "text", "cards?", at),), history)
    the_tail = tail(ContactProfile(name="Ana"), at)

    messages = build_prompt(turn, prefix(), prefix_hash(prefix()), the_tail, []).messages

    system = [(i, p.content) for i, m in enumerate(messages) for p in m.parts if isinstance(p, SystemPromptPart)]
    # Prefix, then the history unchanged, then the tail with the new messages: everything before
    # the tail is the same bytes next turn (prompt cache).
    assert system == [(0, prefix()), (3, the_tail)]
    assert len(messages[0].parts) == 1
    assert [type(m).__name__ for m in messages] == ["ModelRequest", "ModelRequest", "ModelResponse", "ModelRequest"]
    assert [type(p).__name__ for p in messages[-1].parts] == ["SystemPromptPart", "UserPromptPart"]


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
    accounts = await seed_demo(db, clock, runtime.channel_deps.media)

    async def say(session: str, text: str, name: str) -> None:
        ingested = await runtime.ingestor.ingest(
            message(accounts.terminal_id, text, session=session, contact_name=name)
        )
        await runtime.assembler.process(ingested.conversation_id, "w")

    await say("ana", "Hi, I'm Ana Pérez, 555-123-4567", "Ana Pérez")
    clock.set(JULY)
    await say("bao", "xin chào, mình là Bảo", "Bảo Trần")
    async with db.transaction() as session:
        (await session.get(Tenant, accounts.tenant_id)).policy = {"tone": "Formal and brief."}
    await say("ana", "What are your hours?", "Ana Pérez")

    [(march_prefix, march_tail), (july_prefix, july_tail), (edited_prefix, _)] = model.system_parts
    first, second, third = (t.prefix_hash for t in await traces(db))
    assert march_prefix == july_prefix == prefix()
    assert first == second == prefix_hash(march_prefix)
    assert edited_prefix == await demo_prefix(db, {"tone": "Formal and brief."})
    assert third == prefix_hash(edited_prefix) != first
    for volatile in ("2026", "10:00", "22:30", "Monday", "Tuesday", "Ana", "Bảo", "555-123"):
        assert volatile not in march_prefix, volatile
    assert "Monday 2026-03-02 10:00 (America/New_York)" in march_tail
    assert "Ana Pérez" in march_tail
    assert "Tuesday 2026-06-30 22:30 (America/New_York)" in july_tail
    assert "Bảo Trần" in july_tail


# -- the memory budget at the prompt


SMALL_WINDOW = BudgetConfig(context_window=8192)


def burst_turns(count: int, at: datetime) -> list[TurnMessage]:
    """A stored conversation: an operator's opener, then turns of one or two customer messages
    and one or two replies, of varied length."""
    history = [TurnMessage(0, "assistant", "text", "Welcome to the print shop!", at)]
    for n in range(count):
        size = 5 + (n * 37) % 120
        history.append(TurnMessage(len(history), "user", "text", f"turn {n}: " + "cho mình hỏi giá " * size, at))
        if n % 4 == 0:
            history.append(TurnMessage(len(history), "user", "text", f"turn {n}: and flyers too", at))
        history.append(TurnMessage(len(history), "assistant", "text", f"turn {n}: " + "the price is $45. " * size, at))
        if n % 3 == 0:
            history.append(TurnMessage(len(history), "assistant", "text", f"turn {n}: anything else?", at))
    return history


def shown_history(messages) -> list[str]:
    return [p.content for m in messages[1:-1] for p in m.parts]


def test_a_long_history_is_cut_to_whole_turns_and_every_prompt_fits_the_window():
    budget = SMALL_WINDOW.for_model("openai:gpt-4o-mini")
    history = burst_turns(300, MARCH)
    the_tail = tail(ContactProfile(name="Ana"), MARCH)
    tools = PACK.build_tools(PackDeps(Database.from_url("sqlite+aiosqlite:///:memory:"), ManualClock(MARCH), ""))
    schemas = [t.definition() for t in tools]
    batch = (TurnMessage(-1, "user", "text", "cards?", MARCH),)
    for end in range(1, len(history) + 1, 7):
        turn = Turn("demo", DEMO_BUSINESS, "conv-1", batch, tuple(history[:end]))

        prompt = build_prompt(turn, prefix(), prefix_hash(prefix()), the_tail, schemas, budget=budget)

        size = prompt.size
        assert size["total_tokens"] + budget.response_reserve + budget.tool_result_reserve <= budget.window
        assert size["history_tokens"] <= size["history_budget_tokens"] <= 8000
        shown = shown_history(prompt.messages)
        assert shown == [m.text for m in history[end - len(shown) : end]]  # the newest messages, in order
        if shown and end - len(shown) > 0:  # cut: it starts at a customer message that follows a reply
            assert history[end - len(shown)].role == "user"
            assert history[end - len(shown) - 1].role == "assistant"
        assert size["history_messages"] + size["history_dropped_messages"] == end
    assert size["history_dropped_turns"] > 200


def quiet_runtime(db, clock, model) -> Runtime:
    settings = Settings(**{**FAST, "quiet_window_s": 0})
    return Runtime.build(settings, gateway=ModelGateway.with_clients({"chat": model}), db=db, clock=clock)


class TokenCountingModel:
    """Replies through a script and measures every request it is sent, tool schemas included."""

    name = "openai:gpt-4o-mini"  # the budget's family: an exact window, no margin

    def __init__(self) -> None:
        self._script = script_client({"default": [reply("Noted!")]})
        self.request_tokens: list[int] = []
        self.first_history: list[object] = []

    async def request(self, messages, params):
        budget = SMALL_WINDOW.for_model(self.name)
        texts = [p.content for m in messages for p in m.parts if isinstance(p.content, str)]
        overhead = MESSAGE_OVERHEAD_TOKENS * len(messages)
        self.request_tokens.append(
            sum(count_tokens(t) for t in texts) + overhead + budget.schema_tokens(params.function_tools)
        )
        self.first_history.append(messages[1])
        return await self._script.request(messages, params)


async def test_the_agent_keeps_a_long_conversations_prompt_within_a_small_window(db, caplog):
    clock, model = ManualClock(MARCH), TokenCountingModel()
    runtime = Runtime.build(Settings(**FAST), gateway=ModelGateway.with_clients({"chat": model}), db=db, clock=clock)
    accounts = await seed_demo(db, clock)
    ingested = await runtime.ingestor.ingest(message(accounts.webchat_id, "Hi there"))
    budget = SMALL_WINDOW.for_model(model.name)
    agent = Agent(
        ModelGateway.with_clients({"chat": model}),
        clock,
        LoopLimits(),
        agent_packs(runtime.settings, db, clock),
        budget=SMALL_WINDOW,
    )
    history = burst_turns(400, MARCH)
    batch = (TurnMessage(10_000, "user", "text", "How much are business cards?", MARCH),)

    context = await ContextLoader(db).load(ingested.conversation_id, clock.now())
    run = await agent.generate(
        Turn(accounts.tenant_id, "Demo", ingested.conversation_id, batch, tuple(history)), context
    )

    assert run.result.outcome.value == "replied"
    (sent,) = model.request_tokens
    assert run.prompt_size["total_tokens"] == sent
    assert sent + budget.response_reserve + budget.tool_result_reserve <= budget.window == 8192
    assert 0 < run.prompt_size["history_tokens"] <= run.prompt_size["history_budget_tokens"]
    assert run.prompt_size["history_dropped_turns"] > 390
    assert isinstance(model.first_history[0], ModelRequest)
    assert isinstance(model.first_history[0].parts[0], UserPromptPart)  # a whole turn, from its question
    await runtime.close()


async def test_history_beyond_the_old_twenty_messages_reaches_the_model_within_the_budget(db):
    clock, model = ManualClock(MARCH), TokenCountingModel()
    runtime = quiet_runtime(db, clock, model)
    accounts = await seed_demo(db, clock)
    long_text = "Mình cần in 500 tờ rơi, giao thứ sáu, giấy couché. " * 10  # ~200 tokens
    for n in range(45):
        inbound = message(accounts.terminal_id, f"{n}: {long_text}", session="ana", msg_id=str(n))
        ingested = await runtime.ingestor.ingest(inbound)
        await runtime.assembler.process(ingested.conversation_id, "w")

    sizes = [t.prompt_size for t in await traces(db)]
    assert len(sizes) == 45
    for size in sizes:
        assert size["history_tokens"] <= size["history_budget_tokens"] == 8000
        assert (
            size["total_tokens"] + size["response_reserve_tokens"] + size["tool_result_reserve_tokens"]
            <= (size["context_window"])
        )
    assert max(s["history_messages"] for s in sizes) > 60  # far more than the 20 messages of old
    assert sizes[-1]["history_dropped_turns"] > 0  # the budget, not a message count, decided
    for first in model.first_history[1:]:
        assert isinstance(first, ModelRequest)
        assert isinstance(first.parts[0], UserPromptPart)
    await runtime.close()


async def test_a_history_cut_by_the_load_limit_starts_at_a_whole_turn(db):
    clock, model = ManualClock(MARCH), TokenCountingModel()
    runtime = quiet_runtime(db, clock, model)
    accounts = await seed_demo(db, clock)
    first = await runtime.ingestor.ingest(message(accounts.terminal_id, "hello", session="ana"))
    await runtime.assembler.process(first.conversation_id, "w")
    async with db.transaction() as session:  # 84 stored turns of a question and two replies each
        for n in range(84 * 3):
            role = "user" if n % 3 == 0 else "assistant"
            at = MARCH + timedelta(seconds=n + 1)
            session.add(
                Message(
                    conversation_id=first.conversation_id,
                    channel_account_id=accounts.terminal_id,
                    role=role,
                    content_type="text",
                    content=f"{role} {n}",
                    status="ready",
                    processed_at=at,
                    created_at=at,
                )
            )
    clock.set(MARCH + timedelta(hours=1))
    await runtime.ingestor.ingest(message(accounts.terminal_id, "and the price?", session="ana"))
    await runtime.assembler.process(first.conversation_id, "w")

    # 254 answered messages, the newest 200 loaded; the oldest loaded turn lost its question and
    # is left out, so the model's history opens with a customer message.
    shown = model.first_history[-1]
    assert isinstance(shown, ModelRequest)
    assert shown.parts[0].content == "user 54"
    assert (await traces(db))[-1].prompt_size["history_messages"] == 198
    await runtime.close()
