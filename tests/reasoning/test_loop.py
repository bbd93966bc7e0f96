"""The generation loop's recovery paths for arguments models really send."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel
from pydantic_ai import ModelRequest, UserPromptPart

from frontdesk.capabilities.tools import Tool, ToolContext, ToolEvidence, ToolResult
from frontdesk.context.truncation import ResultAllowance
from frontdesk.output.blocks import ImageGroupBlock, TextBlock
from frontdesk.platform.models.contract import GATE_SCHEMA
from frontdesk.reasoning.loop import FALLBACK_TEXT, Outcome, run_generation
from frontdesk.reasoning.salvage import salvage_reply
from harness import script_client

CONTEXT = ToolContext(tenant_id="t", conversation_id="c")
PAYLOAD = {"blocks": [{"type": "text", "text": "Happy to help with that."}]}


def ask(text: str = "hours?") -> list[ModelRequest]:
    return [ModelRequest(parts=[UserPromptPart(text)])]


def texts(result) -> list[str]:
    return [b.text for b in result.blocks if isinstance(b, TextBlock)]


async def test_reply_arguments_encoded_twice_are_accepted():
    model = script_client({"steps": [{"tool": "reply", "raw_args": json.dumps(json.dumps(PAYLOAD))}]})

    result = await run_generation(model, ask(), [], CONTEXT)

    assert (result.outcome, texts(result), result.retries) == (Outcome.REPLIED, ["Happy to help with that."], 0)


@pytest.mark.parametrize("raw", ["null", "[1, 2]", '"just a string"', "42"])
async def test_reply_arguments_that_are_not_an_object_get_one_retry(raw):
    model = script_client({"steps": [{"tool": "reply", "raw_args": raw}, {"reply": PAYLOAD}]})

    result = await run_generation(model, ask(), [], CONTEXT)

    assert (result.outcome, texts(result), result.retries) == (Outcome.REPLIED, ["Happy to help with that."], 1)


class Query(BaseModel):
    q: str = "all"


@pytest.mark.parametrize("raw", ["null", "[]", "{broken"])
async def test_tool_arguments_that_are_not_an_object_never_run_the_tool(raw):
    calls: list[Query] = []

    async def search(args: Query, _ctx: ToolContext) -> dict[str, str]:
        calls.append(args)
        return {"found": "nothing"}

    tool = Tool("search", "search the catalog", Query, search)
    model = script_client({"steps": [{"tool": "search", "raw_args": raw}, {"reply": PAYLOAD}]})

    result = await run_generation(model, ask(), [tool], CONTEXT)

    assert calls == []
    assert result.outcome == Outcome.REPLIED
    assert result.tool_calls[0]["ok"] is False


async def test_prose_twice_is_salvaged_from_the_first_answer_when_the_second_is_empty():
    model = script_client({"steps": [{"text": "Happy to help with your order."}, {"text": "   "}]})

    result = await run_generation(model, ask(), [], CONTEXT)

    assert (result.outcome, texts(result)) == (Outcome.SALVAGED, ["Happy to help with your order."])


@pytest.mark.parametrize(
    ("prose", "expected"),
    [
        (
            "[Our hours](https://example.com/hours): we open at 9.",
            ["[Our hours](https://example.com/hours): we open at 9."],
        ),
        ('```json\n{"blocks": [{"type": "text", "text": "Hi!"}]}\n```', ["Hi!"]),
        ('Sure: {"text": "We close at six."}', ["We close at six."]),
        ('{"blocks": [{"type": "text", "text": "cut off', None),
        ('{"blocks": [{"type": "text", "text": "Half"}, {"type": "imag', ["Half"]),
        ("   ", None),
    ],
)
def test_salvage_keeps_what_a_customer_could_read(prose, expected):
    salvaged = salvage_reply(prose)
    assert (None if salvaged is None else [b.text for b in salvaged]) == expected


async def test_model_that_never_calls_reply_ends_in_the_fallback_within_the_step_ceiling():
    model = script_client({"default": [{"tool": "nonexistent", "args": {}}]})

    result = await run_generation(model, ask(), [], CONTEXT)

    assert (result.outcome, texts(result), result.steps) == (Outcome.FALLBACK, [FALLBACK_TEXT], 8)


# -- a truncated result proves only what the model read


class Everything(BaseModel):
    pass


def catalog_tool(rows: int) -> Tool:
    async def list_all(args: Everything, _ctx: ToolContext) -> ToolResult:
        items = [{"id": f"svc-{n:03d}", "name": f"Service number {n}", "price": f"${n}.00"} for n in range(rows)]
        references = frozenset(item["id"] for item in items)
        prices = {item["id"]: (item["price"],) for item in items}
        return ToolResult({"items": items}, ToolEvidence(references=references, prices_by_reference=prices))

    return Tool("list_all", "every service", Everything, list_all)


def presenting(service_id: str) -> dict:
    return {
        "blocks": [{"type": "text", "text": "Here is the one you asked about."}],
        "claims": [{"type": "service_presented", "service_id": service_id}],
    }


@pytest.mark.parametrize(("cited", "outcome"), [("svc-001", Outcome.REPLIED), ("svc-250", Outcome.FALLBACK)])
async def test_a_reply_may_cite_only_rows_the_truncated_result_still_showed(cited, outcome):
    steps = [{"tool": "list_all", "args": {}}, {"reply": presenting(cited)}, {"reply": presenting(cited)}]
    model = script_client({"steps": steps})

    result = await run_generation(model, ask("everything"), [catalog_tool(300)], CONTEXT, results=ResultAllowance(400))

    assert result.tool_calls[0]["truncated_from_tokens"] > 400  # the model saw a shortened list
    assert result.outcome == outcome
    if outcome == Outcome.FALLBACK:
        assert "svc-250" in json.dumps(result.rejections[0]["failures"])


async def test_a_result_that_fits_keeps_all_its_evidence():
    steps = [{"tool": "list_all", "args": {}}, {"reply": presenting("svc-009")}]
    model = script_client({"steps": steps})

    result = await run_generation(model, ask("everything"), [catalog_tool(10)], CONTEXT, results=ResultAllowance(4000))

    assert "truncated_from_tokens" not in result.tool_calls[0]
    assert result.outcome == Outcome.REPLIED


# -- what a constraining client is told at each step


async def test_the_reply_may_show_images_only_once_a_tool_returned_a_photo():
    async def photos(args: Everything, _ctx: ToolContext) -> ToolResult:
        url = "https://shop.example/cards.png"
        return ToolResult({"photos": [{"id": "cards-1", "url": url}]}, ToolEvidence(photos={"cards-1": url}))

    seen: list[tuple[dict, dict]] = []

    class Recording:
        name = "recording"

        def __init__(self) -> None:
            self._script = script_client({"steps": [{"tool": "photos", "args": {}}, {"reply": PAYLOAD}]})

        async def request(self, messages, params):
            reply = next(t for t in params.function_tools if t.name == "reply")
            seen.append(((reply.metadata or {})[GATE_SCHEMA], reply.parameters_json_schema))
            return await self._script.request(messages, params)

    result = await run_generation(Recording(), ask("photos?"), [Tool("photos", "photos", Everything, photos)], CONTEXT)

    assert result.outcome == Outcome.REPLIED
    # Step 1: no photo yet, so the gate's schema is text-only; step 2: the photo is there.
    assert ["ImageGroupBlock" in gate["$defs"] for gate, _ in seen] == [False, True]
    assert seen[0][1] == seen[1][1]  # the schema hosted models cache never changes within a turn


def test_salvage_trims_a_photo_group_of_eleven_to_ten_instead_of_dropping_every_photo():
    urls = [f"https://shop.example/p/{n}.jpg" for n in range(11)]
    raw = json.dumps({"blocks": [{"type": "text", "text": "Our flyers:"}, {"type": "image_group", "urls": urls}]})

    salvaged = salvage_reply(raw)

    assert salvaged is not None
    text, photos = salvaged
    assert isinstance(text, TextBlock)
    assert text.text == "Our flyers:"
    assert isinstance(photos, ImageGroupBlock)
    assert [str(u) for u in photos.urls] == urls[:10]
