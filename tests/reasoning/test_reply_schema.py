"""The ``reply`` tool's schema as hosted models read it is small (it is on every request) and holds
the same rules as the pydantic model the loop validates every call with."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import ValidationError
from pydantic_ai import ModelRequest, UserPromptPart

from frontdesk.capabilities.tools import ToolContext
from frontdesk.context.budget import schema_text
from frontdesk.platform.models.contract import GATE_SCHEMA
from frontdesk.platform.tokens import count_tokens
from frontdesk.reasoning.loop import Outcome, run_generation
from frontdesk.reasoning.terminal import TerminalPayload, reply_tool_definition
from harness import script_client

LEAN = Draft202012Validator(reply_tool_definition().parameters_json_schema)
CONTEXT = ToolContext(tenant_id="t", conversation_id="c")
STRICT = Draft202012Validator(reply_tool_definition().metadata[GATE_SCHEMA])  # the grammar's: every rule
# The keys each tagged member may have (the one rule the lean schema leaves to the server).
OWN_KEYS = {
    "text": {"type", "text"},
    "image_group": {"type", "urls", "caption"},
    "lead_captured": {"type", "follow_up_id"},
    "service_presented": {"type", "service_id"},
    "follow_up_updated": {"type", "follow_up_id"},
    "images_shown": {"type", "photo_ids"},
}
CLAIM_TYPES = [
    "lead_captured", "handoff_triggered", "service_presented", "business_info_stated",
    "follow_up_updated", "customer_info_updated", "images_shown", "price_quoted", "",
]  # fmt: skip

# Texts and ids around their limits; never only whitespace (pydantic's own validator, left to the
# server); URLs well formed (their shape is the server's too).
texts = st.one_of(st.text(min_size=0, max_size=3), st.sampled_from(["x" * 2000, "y" * 2001, "hello"]))
ids = st.one_of(st.none(), st.integers(), st.sampled_from(["", "a", "s" * 200, "s" * 201]))
urls = st.lists(st.sampled_from(["https://shop.example/a.png", "http://shop.example/b.jpg"]), max_size=11)
extra_top = st.dictionaries(st.sampled_from(["note", "blocks2"]), st.integers(), max_size=1)


@st.composite
def blocks(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "image_group", "video", None]))
    block: dict[str, Any] = {} if kind is None else {"type": kind}
    if draw(st.booleans()):
        block["text"] = draw(texts.filter(lambda t: t == "" or t.strip()))
    if draw(st.booleans()):
        block["urls"] = draw(urls)
    if draw(st.booleans()):
        block["caption"] = draw(st.one_of(st.none(), st.sampled_from(["", "c" * 500, "c" * 501, 7])))
    return block


@st.composite
def claims(draw: st.DrawFn) -> dict[str, Any]:
    claim: dict[str, Any] = {}
    if draw(st.integers(0, 9)):  # mostly with a tag
        claim["type"] = draw(st.sampled_from(CLAIM_TYPES))
    for field in ("service_id", "follow_up_id"):
        if draw(st.booleans()):
            claim[field] = draw(ids)
    if draw(st.booleans()):
        claim["photo_ids"] = draw(st.lists(st.sampled_from(["p1", "p2", 3]), max_size=11))
    return claim


@st.composite
def payloads(draw: st.DrawFn) -> Any:
    payload: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        payload["blocks"] = draw(st.lists(blocks(), max_size=9))
    if draw(st.booleans()):
        payload["claims"] = draw(st.one_of(st.lists(claims(), max_size=21), st.none()))
    return {**payload, **draw(extra_top)}


def server_accepts(payload: Any) -> bool:
    try:
        TerminalPayload.model_validate(payload)
    except ValidationError:
        return False
    return True


def has_a_key_of_its_own(payload: Any) -> bool:
    members = [*(payload.get("blocks") or []), *(payload.get("claims") or [])]
    return any(set(m) - OWN_KEYS.get(m.get("type"), {"type"}) for m in members if isinstance(m, dict))


@settings(max_examples=800, deadline=None)
@given(payloads())
def test_the_schemas_accept_exactly_what_the_server_accepts(payload):
    accepted = server_accepts(payload)
    assert STRICT.is_valid(payload) == accepted, json.dumps(payload)[:500]
    if has_a_key_of_its_own(payload):
        assert not accepted  # the server's to refuse; the lean schema may let it through
    else:
        assert LEAN.is_valid(payload) == accepted, json.dumps(payload)[:500]


async def test_a_key_of_its_own_inside_a_block_is_refused_by_the_loop_which_says_why():
    # The one rule the lean schema leaves out (40 tokens on every request): the loop refuses it
    # and the model, told which field, answers again.
    with_extra = {"blocks": [{"type": "text", "text": "hi", "tone": "warm"}]}
    assert LEAN.is_valid(with_extra)
    assert not STRICT.is_valid(with_extra)  # a constrained (local) model cannot even write it
    seen: list[str] = []

    class Recording:
        name = "recording"

        def __init__(self) -> None:
            self._script = script_client(
                {"steps": [{"reply": with_extra}, {"reply": {"blocks": [{"type": "text", "text": "Hi!"}]}}]}
            )

        async def request(self, messages, params):
            seen.append(
                json.dumps([p.content for m in messages for p in m.parts if hasattr(p, "content")], default=str)
            )
            return await self._script.request(messages, params)

    result = await run_generation(Recording(), [ModelRequest(parts=[UserPromptPart("hi")])], [], CONTEXT)

    assert (result.outcome, [b.text for b in result.blocks], result.retries) == (Outcome.REPLIED, ["Hi!"], 1)
    assert "blocks.0.text.tone: Extra inputs are not permitted" in seen[1]


def test_the_reply_tool_costs_at_most_350_tokens_on_every_request():
    # 1,079 tokens before (990 with pydantic's schema as it was), on every request of every turn.
    assert count_tokens(schema_text(reply_tool_definition())) <= 350


def test_hosted_models_see_one_schema_whatever_the_step():
    shown = {json.dumps(reply_tool_definition(photos_fetched=p).parameters_json_schema) for p in (True, False)}
    assert len(shown) == 1  # byte-stable, so a provider's prompt cache keeps it
