"""A tool's own answer: what the customer gets when the model's replies about a lookup are refused.

The print shop's tools write the plain answer their data makes (the prices of the item, the hours
of the day asked, the catalog's names), in the customer's language. After two refused replies the
customer gets that instead of "a person will get back to you"; it is held to the gate like any
reply, and a turn that looked nothing up still gets the hold message.
"""

from __future__ import annotations

from pydantic import BaseModel
from pydantic_ai import ModelRequest, UserPromptPart
from sqlalchemy import select

from frontdesk.capabilities.tools import Tool, ToolContext, ToolEvidence, ToolResult
from frontdesk.platform.store.schema import Task
from frontdesk.reasoning.loop import FALLBACK_TEXT, Outcome, run_generation
from harness import converse, reply_texts, script_client, traces


def text_reply(text: str) -> dict:
    return {"reply": {"blocks": [{"type": "text", "text": text}]}}


async def needs_reply_tasks(db) -> list[Task]:
    async with db.transaction() as session:
        return list(await session.scalars(select(Task).where(Task.kind == "needs_reply")))


async def test_a_price_misquoted_twice_is_answered_with_the_prices_the_tool_looked_up(db):
    # The 1.5B model read "$55 / 250, $85 / 500" and wrote "$275 for 500", twice.
    wrong = text_reply("500 4x6 postcards are $275.")
    detail = {"tool": "get_service_detail", "args": {"service_id": "postcards"}}
    script = {"name": "postcards", "default": [detail, wrong, wrong]}

    await converse(db, script, ("s1", "how much for 500 of the 4x6 postcards?"))

    (text,) = await reply_texts(db)
    assert text == (
        "Prices for Postcards: $55 / 250 4x6 postcards, $85 / 500 4x6 postcards. Ready in 3 days. Minimum order: 250."
    )
    (trace,) = await traces(db)
    assert trace.outcome == "templated"
    assert await needs_reply_tasks(db) == []  # answered: nobody has to pick it up


async def test_a_price_asked_in_vietnamese_and_answered_in_english_twice_is_given_in_vietnamese(db):
    english = text_reply("Business cards are $45 for 250 and $70 for 500.")  # refused: not Vietnamese
    detail = {"tool": "get_service_detail", "args": {"service_id": "business-cards"}}
    script = {"name": "cards-vi", "default": [detail, english, english]}

    await converse(db, script, ("s1", "shop ơi in card visit giá bao nhiêu vậy?"))

    (text,) = await reply_texts(db)
    assert text == "Giá Business cards: $45 / 250 cards, $70 / 500 cards. Thời gian làm: 3 ngày. Đặt tối thiểu: 250."


async def test_a_closed_day_asked_in_vietnamese_is_answered_closed_in_vietnamese(db):
    info = {"tool": "get_business_info", "args": {}}
    english = text_reply("Sorry, we are open Monday to Friday from 9 AM to 6 PM.")  # refused: not Vietnamese
    script = {"name": "sunday", "default": [info, english, english]}

    await converse(db, script, ("s1", "chủ nhật shop có mở cửa không ạ?"))

    (text,) = await reply_texts(db)
    assert text == "Giờ mở cửa của shop: Chủ nhật: nghỉ."


async def test_a_turn_that_looked_nothing_up_still_gets_the_hold_message(db):
    wrong = text_reply("Flyers are $1 each.")
    script = {"name": "nothing", "default": [wrong, wrong]}

    await converse(db, script, ("s1", "how much are flyers?"))

    (trace,) = await traces(db)
    assert trace.outcome == "fallback"


class NoArgs(BaseModel):
    pass


async def test_a_tool_answer_the_gate_refuses_is_not_sent():
    async def quote(_args: NoArgs, _ctx: ToolContext) -> ToolResult:
        evidence = ToolEvidence(references=frozenset({"mug"}), prices_by_reference={"mug": ("$5",)}, prices=("$5",))
        return ToolResult({"id": "mug", "price": "$5"}, evidence, answer="Mugs are $9.")  # a bug in the tool

    wrong = text_reply("Mugs are $7.")
    model = script_client({"steps": [{"tool": "quote", "args": {}}, wrong, wrong]})
    context = ToolContext(tenant_id="t", conversation_id="c")

    result = await run_generation(
        model, [ModelRequest(parts=[UserPromptPart("mug price?")])], [Tool("quote", "a price", NoArgs, quote)], context
    )

    assert result.outcome == Outcome.FALLBACK
    assert [b.text for b in result.blocks] == [FALLBACK_TEXT]
