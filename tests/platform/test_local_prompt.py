"""What the embedded model reads and may write: the turn's tools as a short list, and one grammar
schema that admits exactly a call of an offered tool with valid arguments, or the reply."""

from __future__ import annotations

import json
from collections.abc import Sequence

import jsonschema
import pytest
from pydantic_ai import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters

from frontdesk.packs import PackDeps
from frontdesk.packs.catalog.tools import build_tools
from frontdesk.platform.models.local_prompt import call_schema, chat_messages, parse_output, tool_section
from frontdesk.reasoning.terminal import reply_tool_definition


def params_for(*names: str, tool_first: bool = False, first_step: tuple[str, ...] = ()) -> ModelRequestParameters:
    tools = {t.name: t for t in build_tools(PackDeps(None, None, "http://127.0.0.1/media"))}  # type: ignore[arg-type]  # definitions only
    return ModelRequestParameters(
        function_tools=[
            *(tools[n].definition() for n in names),
            reply_tool_definition(tool_first=tool_first, first_step=first_step),
        ],
        allow_text_output=True,
    )


PARAMS = params_for("search_services", "get_service_detail", "refer_to_human")


def valid(schema: dict, payload: object) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(payload)


def test_the_schema_admits_a_call_of_each_offered_tool_and_the_reply():
    schema = call_schema(PARAMS.function_tools)

    assert valid(schema, {"tool": "get_service_detail", "args": {"service_id": "flyers"}})
    assert valid(schema, {"tool": "refer_to_human", "args": {"reason_for_team": "asked for a person"}})
    assert valid(schema, {"reply": "Hello!"})


@pytest.mark.parametrize(
    "payload",
    [
        {"tool": "capture_lead", "args": {"name": "Ana", "phone": "555 123 4567"}},  # not offered this turn
        {"tool": "get_service_detail", "args": {}},  # a required argument missing
        {"tool": "get_service_detail", "args": {"service_id": "flyers", "discount": 50}},  # an invented one
        {"reply": ""},  # an empty reply
        {"reply": "hi", "extra": 1},
        {"tool": "reply", "args": {"blocks": [{"type": "text", "text": "hi"}], "claims": []}},  # the long form
        "just some prose",
    ],
)
def test_the_schema_refuses_anything_else(payload):
    assert not valid(call_schema(PARAMS.function_tools), payload)


def test_before_a_photo_was_fetched_the_reply_can_hold_text_only():
    with_image = {"reply": "Here!", "photos": ["business-cards-1"]}
    text = {"reply": "Hello!"}

    before = call_schema([reply_tool_definition(photos_fetched=False)], ["business-cards-1"])
    after = call_schema([reply_tool_definition(photos_fetched=True)], ["business-cards-1"])

    # An image nothing fetched can only be refused by the gate: the grammar does not offer one.
    assert valid(before, text)
    assert not valid(before, with_image)
    assert valid(after, with_image)
    assert not valid(after, {"reply": "Here!", "photos": ["flyers-9"]})  # only a photo this turn fetched
    # Photos fetched (the customer asked to see them) are shown: a reply without them is not offered.
    assert not valid(after, text)
    assert valid(call_schema([reply_tool_definition(photos_fetched=True)]), text)  # none fetched this turn
    # What hosted models see (and cache) is the same either way.
    assert (
        reply_tool_definition(photos_fetched=False).parameters_json_schema
        == reply_tool_definition().parameters_json_schema
    )


def test_definitions_of_different_tools_cannot_collide():
    schema = call_schema(PARAMS.function_tools)
    refs = json.dumps(schema)

    assert all(name.startswith("t") and "_" in name for name in schema.get("$defs", {}))
    for ref in (part.split('"')[0] for part in refs.split('"$ref": "#/$defs/')[1:]):
        assert ref in schema["$defs"]


def test_the_tool_list_is_short_and_names_arguments():
    section = tool_section(PARAMS.function_tools)

    assert "- get_service_detail(service_id)" in section
    assert '{"reply": "..."}' in section  # the reply's short form is in the rules, not a tool line
    assert "- reply(" not in section
    assert "capture_lead" not in section
    assert len(section) < 2000  # names and first sentences, not three JSON schemas


def test_messages_become_chat_turns_with_the_tools_in_the_last_system_message():
    history = [
        ModelRequest(parts=[SystemPromptPart("You are the print shop's assistant.")]),
        ModelRequest(
            parts=[UserPromptPart(["How much are these?", BinaryContent(b"\x89PNG", media_type="image/png")])]
        ),
        ModelResponse(parts=[ToolCallPart("search_services", {"query": "cards"}, tool_call_id="c1")]),
        ModelRequest(
            parts=[ToolReturnPart("search_services", {"services": [{"id": "business-cards"}]}, tool_call_id="c1")]
        ),
        ModelRequest(parts=[SystemPromptPart("Now: Monday 10:00"), UserPromptPart("and flyers?")]),
    ]

    chat = chat_messages(history, PARAMS.function_tools)

    assert [m["role"] for m in chat] == ["system", "user", "assistant", "tool", "system", "user"]
    assert chat[0]["content"] == "You are the print shop's assistant."  # the cached prefix, unchanged
    assert chat[4]["content"].startswith("Now: Monday 10:00")
    assert "# Tools" in chat[4]["content"]
    assert "cannot see images" in chat[1]["content"]
    assert json.loads(chat[2]["content"]) == {"tool": "search_services", "args": {"query": "cards"}}
    assert chat[3]["content"].startswith("search_services result: ")
    assert "business-cards" in chat[3]["content"]


def test_an_offered_call_is_parsed_and_anything_else_is_text_the_loop_asks_again_about():
    call = parse_output(
        '{"tool": "get_service_detail", "args": {"service_id": "flyers"}}', PARAMS.function_tools, "local-1"
    )
    cut_off = parse_output(
        '{"tool": "reply", "args": {"blocks": [{"type": "text", "text": "Our fly', PARAMS.function_tools, "x"
    )
    not_offered = parse_output('{"tool": "capture_lead", "args": {}}', PARAMS.function_tools, "x")

    assert isinstance(call, ToolCallPart)
    assert (call.tool_name, call.args, call.tool_call_id) == ("get_service_detail", {"service_id": "flyers"}, "local-1")
    assert isinstance(cut_off, TextPart)
    assert isinstance(not_offered, TextPart)


def test_the_grammar_keeps_union_tags_required_and_drops_what_llama_cpp_cannot_expand():
    from frontdesk.platform.models.contract import GATE_SCHEMA
    from frontdesk.platform.models.local_prompt import grammar_schema

    # A tool whose arguments hold a tagged union and long bounds (the reply's full payload does).
    schema = grammar_schema((reply_tool_definition().metadata or {})[GATE_SCHEMA])
    text = json.dumps(schema)
    text_block = next(d for name, d in schema["$defs"].items() if name.endswith("TextBlock"))

    assert "type" in text_block["required"]  # a block without its tag would fail validation after the call
    assert '"maxLength"' not in text
    assert '"maxItems"' not in text
    assert not valid(schema, {"blocks": [{"text": "hi"}], "claims": []})
    assert valid(schema, {"blocks": [{"type": "text", "text": "hi"}], "claims": []})


def test_a_question_for_a_fact_starts_with_a_lookup_then_may_reply():
    from frontdesk.platform.models.local_prompt import allowed_tools

    asking = params_for("search_services", "get_service_detail", tool_first=True)
    question = [ModelRequest(parts=[SystemPromptPart("prefix")]), ModelRequest(parts=[UserPromptPart("price?")])]
    looked_up = [
        *question,
        ModelResponse(parts=[ToolCallPart("search_services", {"query": "cards"}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("search_services", {"services": []}, tool_call_id="c1")]),
    ]

    assert [t.name for t in allowed_tools(question, asking)] == ["search_services", "get_service_detail"]
    assert [t.name for t in allowed_tools(looked_up, asking)][-1] == "reply"
    assert [t.name for t in allowed_tools(question, PARAMS)][-1] == "reply"  # not a question for a fact
    assert [t.name for t in allowed_tools(question, params_for(tool_first=True))] == ["reply"]  # nothing to look up


def test_a_turn_the_router_read_as_a_hand_over_starts_with_it():
    from frontdesk.platform.models.local_prompt import allowed_tools

    params = params_for("search_services", "refer_to_human", tool_first=True, first_step=("refer_to_human",))
    question = [ModelRequest(parts=[UserPromptPart("my order arrived damaged, I want a refund")])]
    handed_over = [
        *question,
        ModelResponse(parts=[ToolCallPart("refer_to_human", {"reason_for_team": "refund"}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("refer_to_human", {"ok": True}, tool_call_id="c1")]),
    ]

    assert [t.name for t in allowed_tools(question, params)] == ["refer_to_human"]
    assert [t.name for t in allowed_tools(handed_over, params)] == ["search_services", "refer_to_human", "reply"]


def test_background_work_gets_the_call_format_without_the_conversation_rules():
    only_lookup = params_for("get_business_info").function_tools[:1]

    section = tool_section(only_lookup)

    assert "reply" not in section
    assert '{"tool": "<name>", "args": {...}}' in section
    assert call_schema(only_lookup)["anyOf"][0]["properties"]["tool"] == {"const": "get_business_info"}


def _bound_to(items: tuple[str, ...], *names: str) -> list:
    """The definitions of ``names`` as the loop hands them to a constraining client: item fields
    held to ``items`` (the ones the customer's message named)."""
    from dataclasses import replace

    from frontdesk.packs.catalog.tools import ITEM_BOUND
    from frontdesk.platform.models.contract import GATE_SCHEMA
    from frontdesk.reasoning.binding import Bindings, narrowed

    bindings = Bindings(items=items)
    return [
        replace(d, metadata={GATE_SCHEMA: narrowed(d.parameters_json_schema, ITEM_BOUND, bindings)})
        for d in params_for(*names).function_tools
        if d.name != "reply"
    ]


def test_a_call_with_nothing_left_to_choose_is_settled_without_the_model():
    from frontdesk.platform.models.local_prompt import settled_call

    def settled(tools: list) -> dict | None:
        return settled_call(call_schema(tools))

    hours = params_for("get_business_info").function_tools[:1]
    assert settled(hours) == {"tool": "get_business_info", "args": {}}
    assert settled(_bound_to(("flyers",), "get_service_detail")) == {
        "tool": "get_service_detail",
        "args": {"service_id": "flyers"},
    }
    # A photo count has its default; the item is the only one the message named.
    assert settled(_bound_to(("flyers",), "get_service_photos")) == {
        "tool": "get_service_photos",
        "args": {"service_id": "flyers"},
    }
    # Something to choose: which item, what to search for, which tool, what to write.
    assert settled(_bound_to(("flyers", "business-cards"), "get_service_detail")) is None
    assert settled(params_for("get_service_detail").function_tools[:1]) is None
    assert settled(params_for("search_services").function_tools[:1]) is None
    assert settled(_bound_to(("flyers",), "get_service_detail", "get_business_info")) is None
    assert settled(params_for("refer_to_human").function_tools[:1]) is None
    assert settled(params_for().function_tools) is None  # the reply alone: its words are the model's


def test_the_short_reply_becomes_the_reply_tools_arguments_and_is_shown_back_short():
    from frontdesk.platform.models.local_prompt import turn_photos
    from frontdesk.reasoning.terminal import TerminalPayload

    offered = params_for("get_service_photos").function_tools
    url = "https://shop.example/media/t1/flyers-1-0a1b2c3d.jpg"
    fetched = ToolReturnPart(
        "get_service_photos", {"service_id": "flyers", "photos": [{"id": "flyers-1", "url": url}]}, tool_call_id="c0"
    )
    turn = [ModelRequest(parts=[UserPromptPart("photos of flyers?")]), ModelRequest(parts=[fetched])]
    photos = turn_photos(turn)
    assert photos == {"flyers-1": url}

    call = parse_output('{"reply": "Here they are!", "photos": ["flyers-1"]}', offered, "c1", photos)

    assert isinstance(call, ToolCallPart)
    assert call.tool_name == "reply"
    payload = TerminalPayload.model_validate(call.args)  # what the loop validates and the gate reads
    assert [b.type for b in payload.blocks] == ["text", "image_group"]
    assert payload.blocks[0].text == "Here they are!"
    assert [str(u) for u in payload.blocks[1].urls] == [url]  # the id the model wrote, as its URL
    # The next step's prompt shows the model its own reply as it wrote it, and the photos by id
    # only (shown their URLs, it wrote them into its text).
    chat = chat_messages([*turn, ModelResponse(parts=[call])], offered)
    assert json.loads(chat[-1]["content"]) == {"reply": "Here they are!", "photos": ["flyers-1"]}
    assert '"id": "flyers-1"' in chat[-2]["content"]
    assert url not in chat[-2]["content"]
    # Not offered this step (a first step must call a tool): text, which the loop asks again about.
    assert isinstance(parse_output('{"reply": "Hi"}', offered[:1], "c2"), TextPart)


def test_a_reply_to_a_vietnamese_customer_is_written_from_its_vietnamese_opening():
    import re

    from llama_cpp.llama_grammar import json_schema_to_gbnf

    from frontdesk.context.identity import REPLY_OPENINGS
    from frontdesk.platform.models.local_prompt import grammar_schema

    vietnamese = reply_tool_definition(opening=REPLY_OPENINGS["vi"])
    (short,) = call_schema([vietnamese])["anyOf"]
    pattern = grammar_schema(short)["properties"]["reply"]["pattern"]

    assert re.fullmatch(pattern, "Dạ, chủ nhật shop nghỉ ạ.")
    # Told to, the 1.5B model still answered in English; under the grammar it cannot start so.
    assert not re.fullmatch(pattern, "Sorry, we are closed on Sunday.")
    assert not re.fullmatch(pattern, 'Dạ, giá là $45", "photos": []')  # nothing that ends the JSON string early
    assert '"Dạ,"' in json_schema_to_gbnf(json.dumps(grammar_schema({"anyOf": [short]})))  # llama.cpp writes it first
    # Other languages (and hosted models, which never see the grammar) are left to write freely.
    (free,) = call_schema([reply_tool_definition()])["anyOf"]
    assert "pattern" not in json.dumps(grammar_schema(free))
    assert parse_output('{"reply": "Dạ, chủ nhật shop nghỉ ạ."}', [vietnamese], "c1").args == {
        "blocks": [{"type": "text", "text": "Dạ, chủ nhật shop nghỉ ạ."}],
        "claims": [],
    }


async def test_the_loop_asks_a_vietnamese_customers_reply_to_open_in_vietnamese():
    from frontdesk.capabilities.tools import ToolContext
    from frontdesk.platform.models.contract import REPLY_OPENING
    from frontdesk.reasoning.loop import run_generation
    from harness import script_client

    class Recording:
        """The scripted model, noting the reply opening each request was given."""

        def __init__(self) -> None:
            self.inner = script_client(
                {"default": [{"reply": {"blocks": [{"type": "text", "text": "Dạ, chào bạn!"}]}}]}
            )
            self.openings: list[object] = []

        @property
        def name(self) -> str:
            return self.inner.name

        async def request(self, messages: Sequence[ModelMessage], params: ModelRequestParameters) -> ModelResponse:
            reply = next(t for t in params.function_tools if t.name == "reply")
            self.openings.append((reply.metadata or {}).get(REPLY_OPENING))
            return await self.inner.request(messages, params)

    for language, opening in (("vi", "Dạ,"), ("es", None)):
        model = Recording()
        context = ToolContext(tenant_id="t", conversation_id="c", customer_language=language)
        await run_generation(model, [ModelRequest(parts=[UserPromptPart("xin chào")])], [], context)
        assert model.openings == [opening]


def test_a_short_reply_cut_off_while_repeating_itself_keeps_its_sentences_before_the_repeat():
    offered = params_for("get_service_detail").function_tools
    # Stopped by the client's repetition check, mid-sentence, before the closing quote.
    looped = '{"reply": "Dạ, card visit giao trong 3 ngày. Shop giúp bạn đặt hàng. Shop giúp bạn đặt hàng. Shop giúp'

    call = parse_output(looped, offered, "c1")

    assert isinstance(call, ToolCallPart)
    assert call.args == {
        "blocks": [{"type": "text", "text": "Dạ, card visit giao trong 3 ngày. Shop giúp bạn đặt hàng."}],
        "claims": [],
    }
    # No whole sentence, a call cut off, or a reply that owed the photos it was showing: text, asked again.
    assert isinstance(parse_output('{"reply": "Dạ, card visit giao trong', offered, "c2"), TextPart)
    assert isinstance(parse_output('{"tool": "get_service_detail", "args": {"serv', offered, "c3"), TextPart)
    photos = {"flyers-1": "https://shop.example/m/flyers-1-0a1b2c3d.jpg"}
    assert isinstance(parse_output('{"reply": "Here. Here. Here', offered, "c4", photos), TextPart)
