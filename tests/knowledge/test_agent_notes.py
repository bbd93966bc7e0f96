"""Reference notes through the real pipeline: a turn routed to a note's domain carries it in the
prompt's dynamic tail (never in the cached prefix) and its trace names the exact version; a
greeting carries none; and a note is no evidence: a price quoted from one is still refused."""

from __future__ import annotations

import dataclasses
from datetime import date
from typing import Any

from pydantic_ai import ModelRequest, SystemPromptPart

from frontdesk.context.knowledge import KnowledgeRegistry, Snippet
from frontdesk.packs.catalog import FALLBACK_TEXTS
from frontdesk.reasoning.prompt import NOTES_TITLE
from frontdesk.runtime import Runtime
from harness import make_runtime, message, reply, reply_texts, script_client, traces

CARD_STOCK = Snippet(
    id="card-stock",
    domains=frozenset({"catalog"}),
    text="Business cards are printed on 16 pt card stock; soft-touch lamination is an option.",
    source="Print shop catalog",
    owner="Shop owner",
    reviewed_at=date(2026, 11, 1),
    version=3,
)
PARKING = Snippet(
    id="parking",
    domains=frozenset({"business"}),
    text="Free parking out front.",
    source="business.json",
    owner="Shop owner",
    reviewed_at=date(2026, 11, 1),
    version=1,
)
CARD_PRICE = dataclasses.replace(CARD_STOCK, id="card-price", text="Business cards cost $45 per 250.", version=1)


class RecordingModel:
    """The scripted model, keeping the first and the last system part (prefix, tail) of each request."""

    name = "recording"

    def __init__(self, script: dict[str, Any]) -> None:
        self._script = script_client(script)
        self.prompts: list[tuple[str, str]] = []

    async def request(self, messages: list[Any], params: Any) -> Any:
        system = [
            p.content
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, SystemPromptPart)
        ]
        self.prompts.append((system[0], system[-1]))
        return await self._script.request(messages, params)


async def with_notes(db: Any, model: Any, *notes: Snippet) -> tuple[Runtime, Any]:
    runtime, accounts = await make_runtime(db, model, quiet_window_s=0)
    # The agent reads the runtime's pack table per turn (MCP packs join it the same way at start).
    printshop = runtime.agent_packs["catalog"]
    runtime.agent_packs["catalog"] = dataclasses.replace(printshop, knowledge=KnowledgeRegistry(notes))
    return runtime, accounts


async def say(runtime: Runtime, account: str, text: str) -> None:
    ingested = await runtime.ingestor.ingest(message(account, text, session="ana"))
    await runtime.assembler.process(ingested.conversation_id, "w")


async def test_a_turn_about_a_notes_domain_carries_it_in_the_tail_and_names_it_in_the_trace(db):
    model = RecordingModel({"name": "notes", "default": [reply("Happy to help!")]})
    runtime, accounts = await with_notes(db, model, CARD_STOCK, PARKING)

    await say(runtime, accounts.terminal_id, "Hello!")
    await say(runtime, accounts.terminal_id, "What paper are your business cards on?")

    (greeting_prefix, greeting_tail), (question_prefix, question_tail) = model.prompts
    assert NOTES_TITLE not in greeting_tail
    assert f"# {NOTES_TITLE}\n" in question_tail
    assert "[card-stock v3] Business cards are printed on 16 pt card stock" in question_tail
    assert "[parking v1]" not in question_tail  # another domain's note stays out
    # The prefix is the same bytes on both turns and holds no note (the provider's prompt cache).
    assert greeting_prefix == question_prefix
    assert "card-stock" not in question_prefix
    greeting, question = await traces(db)
    assert (greeting.route["intent"], greeting.route["knowledge"]) == ("greeting", [])
    assert (question.route["domains"], question.route["knowledge"]) == (["catalog"], ["card-stock@3"])
    await runtime.close()


async def test_a_price_read_only_in_a_note_is_refused_by_the_gate(db):
    script = {"name": "from-notes", "default": [reply("Business cards are $45 per 250 cards.")]}
    runtime, accounts = await with_notes(db, script_client(script), CARD_PRICE)

    await say(runtime, accounts.terminal_id, "How much are business cards?")

    (trace,) = await traces(db)
    assert trace.route["knowledge"] == ["card-price@1"]
    assert trace.outcome == "fallback"  # the note was in the prompt, but only a tool result is evidence
    assert await reply_texts(db) == [FALLBACK_TEXTS["en"]]
    await runtime.close()
