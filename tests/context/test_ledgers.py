"""The ledger windows (ARCHITECTURE.md §4): the tool ledger forgets by count, age and replacement
so stale facts are re-fetched; the action ledger keeps what really happened for weeks, whatever the
tool ledger does. Checked in memory and through the real database (both backends)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from frontdesk.capabilities.tools import ToolEvidence, ToolResult
from frontdesk.context.ledgers import LedgerStore, WorkingState
from frontdesk.platform.store.schema import LedgerEntry
from frontdesk.verification.claims import LeadCaptured
from frontdesk.verification.gate import ReplyContent, verify
from harness import count, make_runtime, message, reply

T0 = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)
STORE = LedgerStore()


def detail(service_id: str, price: str = "$45 per 250 cards") -> ToolResult:
    return ToolResult(
        {"id": service_id, "price": price},
        ToolEvidence(frozenset({service_id}), (price,)),
        {"service_id": service_id, "price": price},
        state_key=service_id,
    )


CAPTURE = ToolResult(
    {"follow_up_id": "fu-1"},
    ToolEvidence(frozenset({"business-cards"}), events=(("lead_captured", "fu-1"),)),
    {"follow_up_id": "fu-1"},
    state_key="lead:fu-1",
)


def tool_keys(state: WorkingState) -> list[str | None]:
    return [e.state_key for e in state.tool]


def action_names(state: WorkingState) -> list[str]:
    return [e.tool_name for e in state.action]


def proves_the_capture(state: WorkingState) -> bool:
    """The gate accepts "saved" for follow-up fu-1 (still open) on this state."""
    state.open_references = frozenset({"fu-1"})
    return verify(ReplyContent("Your request is saved."), [LeadCaptured(follow_up_id="fu-1")], state).accepted


async def conversation(db) -> str:
    runtime, accounts = await make_runtime(db, {"default": [reply("hi")]})
    return (await runtime.ingestor.ingest(message(accounts.terminal_id, "hi"))).conversation_id


async def load(db, conversation_id: str, now: datetime) -> WorkingState:
    async with db.read() as session:
        return await STORE.load(session, conversation_id, now)


async def save(db, conversation_id: str, state: WorkingState) -> None:
    async with db.transaction() as session:
        await STORE.save(session, conversation_id, state)


async def rows(db, ledger: str) -> int:
    return await count(db, LedgerEntry, LedgerEntry.ledger == ledger)


def test_a_newer_result_for_the_same_state_key_replaces_the_old_one_and_other_keys_stay():
    state = WorkingState(now=T0)
    state.record("get_service_detail", detail("business-cards", "$45 per 250 cards"))
    state.record("get_service_detail", detail("flyers", "$85 per 500 flyers"))
    state.record("get_service_detail", detail("business-cards", "$50 per 250 cards"))
    state.record("get_service_photos", detail("business-cards"))  # same key, another tool: kept

    assert [(e.tool_name, e.state_key, e.summary["price"]) for e in state.tool] == [
        ("get_service_detail", "flyers", "$85 per 500 flyers"),
        ("get_service_detail", "business-cards", "$50 per 250 cards"),
        ("get_service_photos", "business-cards", "$45 per 250 cards"),
    ]


def test_results_without_a_state_key_are_never_replaced():
    state = WorkingState(now=T0)
    unkeyed = ToolResult({}, ToolEvidence(), {"query": "cards"})
    state.record("search_services", unkeyed)
    state.record("search_services", unkeyed)

    assert [e.tool_name for e in state.tool] == ["search_services", "search_services"]


def test_the_ninth_tool_entry_pushes_out_the_oldest():
    state = WorkingState(now=T0)
    for i in range(1, 10):
        state.record("get_service_detail", detail(f"service-{i}"))

    assert tool_keys(state) == [f"service-{i}" for i in range(2, 10)]
    assert len(state.lines()) == 8


def test_a_capture_is_still_provable_after_thirty_retrievals_in_the_same_turn():
    state = WorkingState(now=T0)
    state.record("capture_lead", CAPTURE)
    for i in range(30):
        state.record("get_service_detail", detail(f"service-{i}"))

    assert "capture_lead" not in [e.tool_name for e in state.tool]
    assert len(state.tool) == 8
    assert action_names(state) == ["__action__lead_captured"]
    assert proves_the_capture(state)


def test_the_action_window_keeps_the_latest_twenty_events():
    state = WorkingState(now=T0)
    for i in range(25):
        state.record("refer_to_human", ToolResult({}, ToolEvidence(events=(("handoff_triggered", f"t{i}"),))))

    assert [e.summary["reference"] for e in state.action] == [f"t{i}" for i in range(5, 25)]


async def test_replacement_and_the_count_window_hold_in_the_database(db):
    conversation_id = await conversation(db)
    first = WorkingState(now=T0)
    first.record("get_service_detail", detail("business-cards", "$45 per 250 cards"))
    first.record("get_service_detail", detail("flyers"))
    await save(db, conversation_id, first)

    second = await load(db, conversation_id, T0 + timedelta(minutes=5))
    second.record("get_service_detail", detail("business-cards", "$50 per 250 cards"))
    await save(db, conversation_id, second)

    loaded = await load(db, conversation_id, T0 + timedelta(minutes=10))
    assert [(e.state_key, e.summary["price"]) for e in loaded.tool] == [
        ("flyers", "$45 per 250 cards"),
        ("business-cards", "$50 per 250 cards"),
    ]
    # What the tool returned comes back too: the gate's closed world reads it on later turns.
    assert loaded.tool[1].evidence == ToolEvidence(
        frozenset({"business-cards"}), ("$50 per 250 cards",), texts=("business-cards", "$50 per 250 cards")
    )
    assert await rows(db, "tool") == 2

    for i in range(1, 8):
        loaded.record("get_service_detail", detail(f"service-{i}"))
    await save(db, conversation_id, loaded)

    final = await load(db, conversation_id, T0 + timedelta(minutes=15))
    assert tool_keys(final) == ["business-cards", *(f"service-{i}" for i in range(1, 8))]
    assert await rows(db, "tool") == 8


async def test_tool_entries_older_than_a_day_fall_out_but_actions_stay(db):
    conversation_id = await conversation(db)
    first = WorkingState(now=T0)
    first.record("get_service_detail", detail("business-cards"))
    first.record("capture_lead", CAPTURE)
    await save(db, conversation_id, first)
    later = await load(db, conversation_id, T0 + timedelta(hours=20))
    later.record("get_service_detail", detail("flyers"))
    await save(db, conversation_id, later)

    next_day = await load(db, conversation_id, T0 + timedelta(hours=25))

    assert tool_keys(next_day) == ["flyers"]
    assert action_names(next_day) == ["__action__lead_captured"]
    assert proves_the_capture(next_day)
    assert await rows(db, "tool") == 3  # nothing saved since: loading deletes nothing

    await save(db, conversation_id, next_day)
    assert await rows(db, "tool") == 3  # a turn that added nothing writes nothing

    next_day.record("get_service_detail", detail("banners"))
    await save(db, conversation_id, next_day)

    assert await rows(db, "tool") == 2  # flyers and banners: the aged-out rows went with this save
    assert await rows(db, "action") == 1


async def test_a_capture_survives_thirty_retrievals_over_later_turns_in_the_database(db):
    conversation_id = await conversation(db)
    capture_turn = WorkingState(now=T0)
    capture_turn.record("capture_lead", CAPTURE)
    await save(db, conversation_id, capture_turn)

    for n in range(3):
        now = T0 + timedelta(minutes=n + 1)
        state = await load(db, conversation_id, now)
        for i in range(10):
            state.record("get_service_detail", detail(f"service-{n}-{i}"))
        await save(db, conversation_id, state)

    loaded = await load(db, conversation_id, T0 + timedelta(hours=1))
    assert tool_keys(loaded) == [f"service-2-{i}" for i in range(2, 10)]
    assert action_names(loaded) == ["__action__lead_captured"]
    assert loaded.action[0].summary == {"reference": "fu-1", "by": "capture_lead"}
    assert proves_the_capture(loaded)
    assert (await rows(db, "tool"), await rows(db, "action")) == (8, 1)


async def test_actions_older_than_thirty_days_fall_out(db):
    conversation_id = await conversation(db)
    first = WorkingState(now=T0)
    first.record("capture_lead", CAPTURE)
    await save(db, conversation_id, first)

    month_later = await load(db, conversation_id, T0 + timedelta(days=31))
    month_later.record("get_service_detail", detail("flyers"))  # the next turn that saves anything
    await save(db, conversation_id, month_later)

    assert month_later.action == []
    assert not proves_the_capture(month_later)
    assert await rows(db, "action") == 0
