"""The memory budget (ARCHITECTURE.md §4): windows by model family, the history formula, eviction
by whole turns that keeps every transcript valid over 500 turns, and the schema gate: no route of
any pack offers tool schemas over the chat slot's budget."""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import combinations, product

import pytest
from pydantic_ai import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from frontdesk.capabilities.policy import RoutingDecision, ToolPolicyCatalog
from frontdesk.context.budget import (
    MESSAGE_OVERHEAD_TOKENS,
    BudgetConfig,
    ContextBudget,
    drop_partial_first_turn,
    fit_history,
    group_turns,
    model_family,
)
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.tokens import count_tokens
from frontdesk.reasoning.terminal import reply_tool_definition
from frontdesk.runtime import agent_packs
from frontdesk.settings import Settings
from harness import converse, reply, traces

CHAT = BudgetConfig()
SMALL = BudgetConfig(context_window=8192).for_model("openai:gpt-4o-mini")
WORDS = (
    "business cards flyers price matte gloss 500 copies Friday delivery address phone "
    "xin chào cho mình hỏi giá in tờ rơi khổ A5 giấy giao hàng trong tuần này cảm ơn bạn"
)


# -- windows and the formula


def test_windows_come_from_the_model_family_with_a_margin_for_tokenizers_we_do_not_ship():
    models = [
        "openai:gpt-4o-mini",
        "openai:gpt-4.1-mini",
        "openai:gpt-4",
        "openai:gpt-3.5-turbo",
        "anthropic:claude-haiku-4-5",
        "google:gemini-2.5-flash",
        "openai-compatible:http://127.0.0.1:11434/v1#llama3.2",
        "script:demo",
        "recording",
    ]

    seen = {m: (model_family(m).context_window, CHAT.for_model(m).window, CHAT.for_model(m).encoding) for m in models}

    assert seen == {
        "openai:gpt-4o-mini": (128_000, 128_000, "o200k_base"),
        "openai:gpt-4.1-mini": (1_047_576, 1_047_576, "o200k_base"),
        "openai:gpt-4": (8_192, 8_192, "cl100k_base"),
        "openai:gpt-3.5-turbo": (16_385, 16_385, "cl100k_base"),
        "anthropic:claude-haiku-4-5": (200_000, 160_000, "o200k_base"),
        "google:gemini-2.5-flash": (1_048_576, 838_860, "o200k_base"),
        "openai-compatible:http://127.0.0.1:11434/v1#llama3.2": (16_384, 13_107, "o200k_base"),
        "script:demo": (128_000, 128_000, "o200k_base"),
        "recording": (32_768, 26_214, "o200k_base"),
    }
    assert BudgetConfig(context_window=50_000).for_model("anthropic:claude-haiku-4-5").window == 40_000


def test_the_default_chat_slot_and_a_small_window_budget():
    assert CHAT.for_model("script:demo") == ContextBudget(
        window=128_000, response_reserve=2048, tool_result_reserve=4096, tool_schema_budget=3000, history_max=8000
    )
    # On 8k tokens the reserves shrink to shares of the window, or nothing would be left.
    small = BudgetConfig(context_window=8192).for_model("openai:gpt-4o-mini")
    assert (
        small
        == SMALL
        == ContextBudget(
            window=8192, response_reserve=1024, tool_result_reserve=2048, tool_schema_budget=2048, history_max=8000
        )
    )


def test_history_budget_is_what_the_window_leaves_capped_by_the_history_maximum():
    # prefix 700 + schemas 1300 + tail and new messages 150
    fixed = 700 + 1300 + 150

    assert SMALL.history_budget(fixed) == 8192 - fixed - 1024 - 2048 == 2970
    assert SMALL.history_budget(7000) == 0
    assert CHAT.for_model("openai:gpt-4o-mini").history_budget(fixed) == 8000


# -- whole turns


def test_a_turn_is_a_customer_burst_and_everything_it_caused():
    transcript = ["a:opener", "u:1", "u:2", "a:3", "a:4", "u:5", "a:6", "u:7"]

    def is_customer(m: str) -> bool:
        return m.startswith("u")

    assert group_turns(transcript, is_customer) == [["a:opener"], ["u:1", "u:2", "a:3", "a:4"], ["u:5", "a:6"], ["u:7"]]
    # A window cut from a longer transcript: its first turn may have lost its question.
    assert drop_partial_first_turn(["a:3", "a:4", "u:5", "a:6"], is_customer) == ["u:5", "a:6"]
    assert drop_partial_first_turn(["u:2", "a:3", "u:5"], is_customer) == ["u:5"]


def test_fitting_keeps_the_newest_whole_turns_and_never_leaves_a_gap():
    transcript = ["u" + "x" * 40, "a" + "x" * 40, "u" + "x" * 400, "a" + "x" * 40, "u" + "x" * 40, "a" + "x" * 40]

    def size(m: str) -> int:
        return len(m)

    def is_customer(m: str) -> bool:
        return m.startswith("u")

    fitted = fit_history(transcript, 200, size, is_customer)
    assert (fitted.messages, fitted.tokens, fitted.turns) == (transcript[4:], 82, 1)
    assert (fitted.dropped_turns, fitted.dropped_messages) == (2, 4)  # the small first turn goes too
    assert fit_history(transcript, 10_000, size, is_customer).messages == transcript
    assert fit_history(transcript, 0, size, is_customer).messages == []


def part_text(part: object) -> str:
    if isinstance(part, ToolCallPart):
        return part.args_as_json_str()
    if isinstance(part, ToolReturnPart):
        return part.model_response_str()
    assert isinstance(part, UserPromptPart | TextPart)
    assert isinstance(part.content, str)
    return part.content


def message_tokens(message: ModelMessage) -> int:
    return sum(count_tokens(part_text(p)) for p in message.parts) + MESSAGE_OVERHEAD_TOKENS


def is_customer(message: ModelMessage) -> bool:
    return isinstance(message, ModelRequest) and any(isinstance(p, UserPromptPart) for p in message.parts)


def simulated_turns(rng: random.Random, count: int) -> Iterator[list[ModelMessage]]:
    """Turns as the loop leaves them: a customer message (sometimes a burst), tool rounds (some
    with parallel calls, one now and then with a huge result), then the reply."""

    def text(low: int, high: int) -> str:
        return " ".join(rng.choices(WORDS.split(), k=rng.randint(low, high)))

    for n in range(count):
        turn: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(text(3, 40))])]
        if rng.random() < 0.2:
            turn.append(ModelRequest(parts=[UserPromptPart(text(1, 10))]))
        for step in range(rng.choice([0, 0, 1, 1, 2, 3])):
            calls = [
                ToolCallPart("search_services", {"query": text(1, 4)}, tool_call_id=f"t{n}s{step}c{k}")
                for k in range(rng.choice([1, 1, 2]))
            ]
            turn.append(ModelResponse(parts=calls))
            rows = 200 if rng.random() < 0.02 else rng.randint(0, 6)
            results = [{"id": f"svc-{i}", "name": text(1, 3), "price": f"${i * 5}"} for i in range(rows)]
            turn.append(
                ModelRequest(parts=[ToolReturnPart(c.tool_name, results, tool_call_id=c.tool_call_id) for c in calls])
            )
        turn.append(ModelResponse(parts=[TextPart(text(5, 60))]))
        yield turn


def assert_valid(kept: list[ModelMessage], transcript: list[ModelMessage]) -> None:
    assert kept == transcript[len(transcript) - len(kept) :]  # the newest messages, in order
    open_calls: set[str] = set()
    for message in kept:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                open_calls.add(part.tool_call_id)
            elif isinstance(part, ToolReturnPart):
                assert part.tool_call_id in open_calls, "a result without its call"
                open_calls.remove(part.tool_call_id)
    assert open_calls == set(), "a tool call without its result"
    for turn in group_turns(kept, is_customer):
        assert is_customer(turn[0]), "an answer without its question"


def test_500_turns_of_eviction_keep_every_transcript_valid_and_the_prompt_within_the_window():
    rng = random.Random(5)
    fixed = 2_600  # prefix, routed schemas, tail and new messages of a typical turn
    budget = SMALL.history_budget(fixed)
    transcript: list[ModelMessage] = []
    evicted_turns = empty = 0
    for turn in simulated_turns(rng, 500):
        transcript.extend(turn)
        fitted = fit_history(transcript, budget, message_tokens, is_customer)

        assert_valid(fitted.messages, transcript)
        assert fitted.tokens == sum(message_tokens(m) for m in fitted.messages) <= budget
        assert fixed + fitted.tokens + SMALL.response_reserve + SMALL.tool_result_reserve <= SMALL.window
        if fitted.dropped_turns:  # nothing that would have fit was dropped
            newest_dropped = group_turns(transcript, is_customer)[-fitted.turns - 1]
            assert fitted.tokens + sum(message_tokens(m) for m in newest_dropped) > budget
        evicted_turns = max(evicted_turns, fitted.dropped_turns)
        empty += not fitted.messages
    assert evicted_turns > 450  # the budget really was the limit
    assert 0 < empty < 50  # a turn too large for the budget is dropped whole, never cut


# -- the schema gate


def every_decision(catalog: ToolPolicyCatalog) -> Iterator[RoutingDecision]:
    """Every decision a router could hand this catalog: any set of its domains, in any phase,
    unsure or sure, confirmed or not."""
    policies = [p for t in catalog.tools if (p := catalog.policy(t.name)) is not None]
    domains = sorted({d for p in policies for d in p.domains})
    phases = sorted({"discovery", *(phase for p in policies for phase in p.phases)})
    for size in range(len(domains) + 1):
        for chosen, phase, intent, signals in product(
            combinations(domains, size), phases, ("greeting", "unknown", "capture"), ((), ("confirmed",))
        ):
            yield RoutingDecision(intent, frozenset(chosen), 0.9, phase, signals=signals)


@pytest.mark.parametrize("model", ["script:demo", "local:qwen2.5-coder-1.5b-instruct"])
def test_no_route_of_any_pack_offers_tool_schemas_over_the_chat_slot_budget(model):
    # An embedded model has an 8k window (a 1,638-token schema budget) but reads one line per
    # tool, not its JSON schema: the budget counts what each model really reads.
    budget = BudgetConfig().for_model(model)
    packs = agent_packs(Settings(), Database.from_url("sqlite+aiosqlite:///:memory:"), SystemClock())
    sizes: dict[tuple[str, ...], int] = {}
    offenders: list[str] = []
    checked = 0
    for name, pack in packs.items():
        for decision in every_decision(pack.catalog):
            bundle = pack.catalog.bundle(decision)
            key = (name, *bundle.tool_names)
            if key not in sizes:
                definitions = [*(t.definition() for t in bundle.tools), reply_tool_definition()]
                sizes[key] = budget.schema_tokens(definitions)
            checked += 1
            if sizes[key] > budget.tool_schema_budget:
                domains = ",".join(sorted(decision.domains))
                offenders.append(f"{name}: {decision.intent} [{domains}] in {decision.phase}: {sizes[key]} tokens")

    assert checked > 100
    assert offenders == [], f"over the {budget.tool_schema_budget}-token schema budget"
    assert max(sizes.values()) < budget.tool_schema_budget


def test_an_embedded_model_gets_the_compact_prompt_unless_the_operator_says_otherwise():
    packs = agent_packs(Settings(), Database.from_url("sqlite+aiosqlite:///:memory:"), SystemClock())
    definitions = [t.definition() for t in packs["catalog"].catalog.tools]

    local = BudgetConfig().for_model("local:qwen2.5-coder-1.5b-instruct")
    hosted = BudgetConfig().for_model("openai:gpt-4o-mini")

    assert (local.compact, hosted.compact) == (True, False)
    assert BudgetConfig(prompt_style="full").for_model("local:/models/x.gguf").compact is False
    compact_hosted = BudgetConfig(prompt_style="compact").for_model("openai:gpt-4o-mini")
    assert compact_hosted.compact is True
    # A hosted model is still sent the JSON schemas: they are what its budget counts.
    assert compact_hosted.schema_tokens(definitions) == hosted.schema_tokens(definitions)
    # The print shop's eight tools as lines cost a fraction of their JSON schemas.
    assert local.schema_tokens(definitions) * 3 < hosted.schema_tokens(definitions)


# -- settings


async def test_the_chat_slot_settings_reach_the_prompt(db):
    script = {"name": "hi", "default": [reply("Hello!")]}

    await converse(db, script, ("s1", "hello"), chat_context_window=16_384, chat_history_max_tokens=1_000)

    (trace,) = await traces(db)
    assert (trace.prompt_size["context_window"], trace.prompt_size["history_budget_tokens"]) == (16_384, 1_000)


async def test_the_prompt_style_setting_reaches_the_prompt(db):
    script = {"name": "hi", "default": [reply("Hello!")]}

    await converse(db, script, ("full", "hello"))
    await converse(db, script, ("compact", "hello"), chat_prompt_style="compact")

    full, compact = await traces(db)
    assert compact.prompt_size["static_prefix_tokens"] < 0.6 * full.prompt_size["static_prefix_tokens"]
