"""Episodic memory: whatever a verbose utility model answers, what reaches later prompts is capped
field by field, holds service names (never ids), and is refreshed on its cadence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic_ai import ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from frontdesk.context.episodic import CAPS, MAX_SERVICE_NAMES, EpisodicCadence, EpisodicSnapshot
from frontdesk.context.summarizer import SNAPSHOT_TOOL, EpisodicSummarizer
from frontdesk.platform.models.gateway import ModelGateway, PydanticAIClient
from frontdesk.platform.store.schema import EpisodicSnapshot as SnapshotRow
from harness import make_runtime, message, reply, reply_texts

T0 = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)
NAMES = ["Business cards", "business-cards", "Flyers", "9b2f0c1de4", "Flyers", "  Flyers  ", "svc_8f3k2p9", "Posters"]
NAMES += [f"Service number {i}" for i in range(42)]
VERBOSE = {
    "summary_text": "The customer wants cards. " * 200,
    "preferred_language": "Spanish (Latin American, informal register)",
    "last_intent": "asking about " + "paper " * 40,
    "interested_service_names": NAMES,
    "contact_preference": "WhatsApp " * 40,
    "unresolved_question": "Whether " + "matte " * 100,
    "next_action": "Send a quote " * 40,
    "turn_count": -7,
    "invented_field": "ignored",
}


def test_a_verbose_model_answer_is_capped_field_by_field():
    snapshot = EpisodicSnapshot.model_validate(VERBOSE)

    for name, limit in CAPS.items():
        value = getattr(snapshot, name)
        assert 0 < len(value) <= limit, name
        assert value.endswith("…"), name
    assert len(VERBOSE["summary_text"]) == 5200
    assert snapshot.summary_text.startswith("The customer wants cards. The customer")
    assert snapshot.turn_count == 0
    assert len(snapshot.interested_service_names) == MAX_SERVICE_NAMES
    assert snapshot.interested_service_names == [
        "Business cards",
        "Flyers",
        "Posters",
        *(f"Service number {i}" for i in range(9)),
    ]
    assert "invented_field" not in snapshot.model_dump()


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param(
            {"summary_text": None, "last_intent": None, "interested_service_names": None},
            {"summary_text": "", "last_intent": "", "interested_service_names": []},
            id="nulls-become-empty",
        ),
        pytest.param(
            {"interested_service_names": "Wedding invitations"},
            {"interested_service_names": ["Wedding invitations"]},
            id="a-string-instead-of-a-list",
        ),
        pytest.param({"interested_service_names": "business-cards"}, {"interested_service_names": []}, id="a-lone-id"),
        pytest.param({"interested_service_names": ""}, {"interested_service_names": []}, id="an-empty-string"),
        pytest.param({"turn_count": "three"}, {"turn_count": 0}, id="a-count-that-is-not-a-number"),
        pytest.param({"turn_count": "5"}, {"turn_count": 5}, id="a-count-as-text"),
        pytest.param({"next_action": "call\n\n   back   tomorrow"}, {"next_action": "call back tomorrow"}, id="spaces"),
        pytest.param(
            {"interested_service_names": ["x" * 200]},
            {"interested_service_names": ["x" * 79 + "…"]},
            id="a-very-long-name",
        ),
    ],
)
def test_odd_model_answers_parse_into_a_usable_snapshot(answer, expected):
    snapshot = EpisodicSnapshot.model_validate(answer)

    assert {k: getattr(snapshot, k) for k in expected} == expected


def test_the_prompt_lines_leave_empty_fields_out():
    snapshot = EpisodicSnapshot(summary_text="Wants 500 cards.", interested_service_names=["Business cards"])

    assert snapshot.lines() == ["Summary: Wants 500 cards.", "Interested in: Business cards"]


@pytest.mark.parametrize(
    ("total", "covered", "updated_ago", "due"),
    [
        pytest.param(0, 0, None, False, id="no-reply-yet"),
        pytest.param(3, 3, timedelta(days=3), False, id="nothing-new-even-when-stale"),
        pytest.param(3, 0, None, False, id="three-replies-never-summarized"),
        pytest.param(4, 0, None, True, id="four-replies-never-summarized"),
        pytest.param(9, 4, timedelta(minutes=1), True, id="five-new-replies"),
        pytest.param(6, 4, timedelta(hours=1), False, id="two-new-on-a-fresh-snapshot"),
        pytest.param(5, 4, timedelta(hours=12), True, id="one-new-on-a-snapshot-twelve-hours-old"),
        pytest.param(5, 4, timedelta(hours=11, minutes=59), False, id="one-new-just-before-stale"),
        pytest.param(2, 5, timedelta(days=1), False, id="covered-more-than-exist"),
    ],
)
def test_memory_refresh_is_due_every_four_replies_or_on_a_stale_snapshot(total, covered, updated_ago, due):
    updated_at = None if updated_ago is None else T0 - updated_ago

    assert EpisodicCadence().due(total, covered, updated_at, T0) is due


class FixedClock:
    def now(self) -> datetime:
        return T0

    def monotonic(self) -> float:
        return 0.0


def utility_model(answer: dict, prompts: list[str]) -> PydanticAIClient:
    def respond(messages, info: AgentInfo) -> ModelResponse:
        assert [t.name for t in info.function_tools] == [SNAPSHOT_TOOL]
        prompts.extend(p.content for m in messages for p in m.parts if isinstance(p, UserPromptPart))
        return ModelResponse(parts=[ToolCallPart(SNAPSHOT_TOOL, answer)])

    return PydanticAIClient(FunctionModel(respond), "function:utility", timeout_s=30)


async def converse(db, texts: list[str]) -> str:
    runtime, accounts = await make_runtime(db, {"default": [reply("Sure: {user_text}")]}, quiet_window_s=0)
    conversation_id = ""
    for text in texts:
        ingested = await runtime.ingestor.ingest(message(accounts.terminal_id, text))
        conversation_id = ingested.conversation_id
        await runtime.assembler.process(conversation_id, "w")
    return conversation_id


async def stored(db, conversation_id: str) -> SnapshotRow:
    async with db.read() as session:
        row = await session.get(SnapshotRow, conversation_id)
    assert row is not None
    return row


async def test_the_summary_job_stores_a_capped_snapshot_covering_the_replies_so_far(db):
    conversation_id = await converse(db, ["hola", "quiero tarjetas de presentación", "500, por favor"])
    assert len(await reply_texts(db)) == 3
    prompts: list[str] = []
    gateway = ModelGateway.with_clients({"utility": utility_model(VERBOSE, prompts)})

    returned = await EpisodicSummarizer(db, gateway, FixedClock()).run(conversation_id)

    row = await stored(db, conversation_id)
    assert (row.replies_covered, row.updated_at) == (3, T0)
    assert row.data == returned.model_dump()
    snapshot = EpisodicSnapshot.model_validate(row.data)
    assert snapshot == returned
    assert snapshot.turn_count == 3
    assert len(snapshot.summary_text) == CAPS["summary_text"]
    assert len(snapshot.interested_service_names) == MAX_SERVICE_NAMES
    assert "business-cards" not in snapshot.interested_service_names
    (prompt,) = prompts
    assert "Previous snapshot: {}" in prompt
    assert "user: quiero tarjetas de presentación\nassistant: Sure: quiero tarjetas de presentación" in prompt


async def test_a_second_summary_replaces_the_first_and_sees_it(db):
    conversation_id = await converse(db, ["hi", "business cards please"])
    first = ModelGateway.with_clients({"utility": utility_model({"summary_text": "Wants cards."}, [])})
    await EpisodicSummarizer(db, first, FixedClock()).run(conversation_id)
    prompts: list[str] = []
    second = ModelGateway.with_clients({"utility": utility_model({"summary_text": "x" * 2000}, prompts)})

    await EpisodicSummarizer(db, second, FixedClock()).run(conversation_id)

    row = await stored(db, conversation_id)
    assert row.replies_covered == 2
    assert len(row.data["summary_text"]) == CAPS["summary_text"]
    assert '"summary_text": "Wants cards."' in prompts[0]
