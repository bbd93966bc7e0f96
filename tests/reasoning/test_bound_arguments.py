"""Arguments bound to the conversation, and the pack's courtesy reply after an action.

The local-style client here is the real ``LocalModelClient`` (its tool choice, prompt, schema
and parsing) with a stand-in for llama.cpp that writes what a small model meant to write, but, as
a grammar-constrained decoder must, only what the grammar allows: a required field it left out is
written with the grammar's first choice, a value outside an enum is replaced by it.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import jsonschema
from sqlalchemy import select

from frontdesk.platform.clock import ManualClock
from frontdesk.platform.models.local import LocalModelClient, LocalModelOptions
from frontdesk.platform.store.schema import Contact, Task
from frontdesk.reasoning.binding import Bindings, narrowed, unknown_contacts
from harness import converse, make_runtime, message, reply_texts, traces

ORDER = "Hi, I'm Ana, +1 212 555 0199, I'd like 1000 flyers"
CAPTURE_WITHOUT_PHONE = {
    "tool": "capture_lead",
    "args": {"service": "flyer", "customer_name": "Ana", "quantity": 1000, "summary_for_team": "1000 flyers"},
}
SAVED = {"reply": "Saved, Ana! We'll call you."}  # the reply as the local client has a model write it


def decode(meant: dict[str, Any], grammar: dict[str, Any]) -> str:
    """What a constrained decoder writes when the model means ``meant``: the grammar's own option
    for that tool (or its first), each enum field held to its choices, nothing the grammar lacks."""
    options = grammar["anyOf"]
    if "reply" in meant:
        (short,) = [o for o in options if "reply" in o["properties"]]  # a step that may reply
        jsonschema.validate(meant, short)
        return json.dumps(meant)
    calls = [o for o in options if "tool" in o["properties"]]
    option = next((o for o in calls if o["properties"]["tool"]["const"] == meant["tool"]), calls[0])
    args_schema = option["properties"]["args"]
    fields = args_schema.get("properties", {})
    args = {k: v for k, v in meant["args"].items() if k in fields}
    for name, field in fields.items():
        if (
            "enum" in field
            and (args.get(name) not in field["enum"])
            and (name in args or name in args_schema.get("required", []))
        ):
            args[name] = field["enum"][0]
    written = {"tool": option["properties"]["tool"]["const"], "args": args}
    jsonschema.validate(written, {**option, "$defs": grammar.get("$defs", {})})
    return json.dumps(written)


class GrammarBoundLlama:
    """Stands in for llama.cpp: each completion is the next meant output, decoded under the grammar."""

    def __init__(self, *meant: dict[str, Any]) -> None:
        self.meant = list(meant)
        self.grammars: list[dict[str, Any]] = []

    def tokenize(self, text: bytes, **_kwargs: object) -> list[int]:
        return list(range(len(text) // 4))

    def create_completion(self, prompt: list[int], grammar: dict[str, Any], **_kwargs: object) -> dict[str, Any]:
        self.grammars.append(grammar)
        text = decode(self.meant.pop(0), grammar)
        return {"choices": [{"text": text}], "usage": {"prompt_tokens": len(prompt), "completion_tokens": 20}}


def local_style(llama: GrammarBoundLlama) -> LocalModelClient:
    client = LocalModelClient("/models/small.gguf", LocalModelOptions(), timeout_s=30)
    client._llama = llama
    client._formatter = lambda messages: SimpleNamespace(prompt=json.dumps(messages), stop=None, stopping_criteria=None)
    client._grammar = lambda schema: schema  # the stand-in decodes under the schema itself
    return client


async def run_turns(db, client, *texts: str) -> str:
    clock = ManualClock()
    runtime, accounts = await make_runtime(db, client, clock=clock)
    conversation_id = ""
    for text in texts:
        clock.advance(5)
        ingested = await runtime.ingestor.ingest(message(accounts.webchat_id, text))
        conversation_id = ingested.conversation_id
        await runtime.runner.run_until_idle()
    return conversation_id


async def leads(db) -> list[dict[str, Any]]:
    async with db.transaction() as session:
        return [t.details for t in await session.scalars(select(Task).where(Task.kind == "follow_up"))]


# -- a small model under the grammar


async def test_a_small_model_that_leaves_out_the_phone_still_saves_the_request_with_the_phone_given(db):
    llama = GrammarBoundLlama(CAPTURE_WITHOUT_PHONE, SAVED)

    await run_turns(db, local_style(llama), ORDER)

    (lead,) = await leads(db)
    assert (lead["customer_name"], lead["phone"], lead["service_id"]) == ("Ana", "+1 212 555 0199", "flyers")
    (capture,) = [
        o["properties"]["args"]
        for o in llama.grammars[0]["anyOf"]
        if o["properties"]["tool"]["const"] == "capture_lead"
    ]
    assert capture["properties"]["phone"]["enum"] == ["+1 212 555 0199"]
    assert "email" not in capture["properties"]  # none was given: the grammar cannot write one


async def test_a_contact_given_in_an_earlier_message_is_a_choice_for_a_later_request(db):
    remember = {"tool": "update_customer_info", "args": {"name": "Ana"}}
    greeting = {"reply": "Hi Ana! How can I help?"}
    invented = {**CAPTURE_WITHOUT_PHONE, "args": {**CAPTURE_WITHOUT_PHONE["args"], "phone": "+1 555 0000 000"}}
    llama = GrammarBoundLlama(remember, greeting, invented, SAVED)

    await run_turns(
        db, local_style(llama), "hi, Ana here, my number is (917) 555-0142", "I'd like to order 1000 flyers please"
    )

    (lead,) = await leads(db)
    assert lead["phone"] == "(917) 555-0142"  # the invented number could not be written


async def test_item_fields_are_held_to_the_items_the_message_names(db):
    detail = {"tool": "get_service_detail", "args": {"service_id": "postcards"}}
    answer = {"reply": "Let me check."}
    llama = GrammarBoundLlama(detail, answer)

    await run_turns(db, local_style(llama), "how much are 500 flyers or 500 business cards?")

    (trace,) = await traces(db)
    written = json.loads(trace.tool_calls[0]["args"])["service_id"]
    assert written in ("flyers", "business-cards")  # the wrong id could not be written


async def test_a_first_step_with_one_item_named_is_written_without_the_model(db):
    llama = GrammarBoundLlama({"reply": "Let me check."})

    await run_turns(db, local_style(llama), "how much are 500 flyers?")

    (trace,) = await traces(db)
    assert trace.tool_calls[0]["args"] == json.dumps({"service_id": "flyers"})
    assert len(llama.grammars) == 1  # the model wrote only the reply
    assert trace.usage[0]["output_tokens"] == 0


# -- any model: a contact the customer never gave is not saved


async def test_a_contact_the_customer_never_gave_is_refused_before_anything_is_saved(db):
    invented = {"tool": "capture_lead", "args": {**CAPTURE_WITHOUT_PHONE["args"], "phone": "+1 555 0000 000"}}
    given = {"tool": "capture_lead", "args": {**CAPTURE_WITHOUT_PHONE["args"], "phone": "+12125550199"}}
    script = {
        "name": "invents",
        "default": [invented, given, {"reply": {"blocks": [{"type": "text", "text": "Saved!"}]}}],
    }

    await converse(db, script, ("s1", ORDER))

    (lead,) = await leads(db)
    assert lead["phone"] == "+12125550199"  # the same number as given, written without spaces
    (trace,) = await traces(db)
    assert [(c["name"], c["ok"]) for c in trace.tool_calls] == [("capture_lead", False), ("capture_lead", True)]
    assert "not given by the customer" in trace.tool_calls[0]["error"]
    async with db.transaction() as session:
        contact = await session.scalar(select(Contact))
    assert contact.phone == "+12125550199"


def test_without_a_contact_the_fields_are_left_out_and_an_e_mail_given_is_required():
    schema = {
        "type": "object",
        "properties": {
            "customer_name": {"type": "string"},
            "phone": {"type": ["string", "null"]},
            "email": {"type": ["string", "null"]},
        },
        "required": ["customer_name"],
    }
    binds = {"phone": "phone", "email": "email"}

    nothing = narrowed(schema, binds, Bindings.of(["hi, I want flyers"], {}, ""))
    mail = narrowed(schema, binds, Bindings.of(["write to Ana.R@Gmail.com"], {}, ""))

    assert set(nothing["properties"]) == {"customer_name"}
    assert mail["properties"]["email"]["enum"] == ["ana.r@gmail.com"]
    assert "phone" not in mail["properties"]
    assert "email" in mail["required"]
    assert unknown_contacts({"email": "ANA.R@gmail.com"}, binds, Bindings.of(["Ana.R@Gmail.com"], {}, "")) == []
    assert unknown_contacts({"phone": "0903 123 456"}, binds, Bindings.of(["call +84 903 123 456"], {}, "")) == []


def test_quantities_and_prices_in_the_message_are_not_phone_choices():
    bindings = Bindings.of(["500 cards for $70, deadline 12/03, call 0903 123 456"], {}, "")

    assert bindings.phones == ("0903 123 456",)


# -- the pack's courtesy reply


REFUSED = {"reply": {"blocks": [{"type": "text", "text": "You can call me or send an email to [email address]."}]}}


async def test_a_refused_reply_after_a_hand_over_sends_the_pack_courtesy_reply_in_the_customer_language(db):
    handover = {"tool": "refer_to_human", "args": {"reason_for_team": "Customer asks for a person"}}
    script = {"name": "handover", "default": [handover, REFUSED, REFUSED]}

    await converse(db, script, ("s1", "Cho mình gặp nhân viên"))

    (trace,) = await traces(db)
    assert trace.outcome == "templated"
    async with db.transaction() as session:
        task = await session.scalar(select(Task).where(Task.kind == "handoff"))
    (text,) = await reply_texts(db)
    assert text == (
        "Cảm ơn bạn đã kiên nhẫn. Một nhân viên của chúng tôi đã tiếp nhận cuộc trò chuyện này "
        f"(mã {task.id}) và sẽ trả lời bạn tại đây."
    )


async def test_a_refused_reply_after_a_saved_request_names_the_customer_the_item_the_reference_and_the_contact(db):
    given = {"tool": "capture_lead", "args": {**CAPTURE_WITHOUT_PHONE["args"], "phone": "+1 212 555 0199"}}
    wrong = {"reply": {"blocks": [{"type": "text", "text": "Saved! Flyers are $90."}]}}
    script = {"name": "lead", "default": [given, wrong, wrong]}

    await converse(db, script, ("s1", ORDER))

    (lead_task,) = await leads_tasks(db)
    (text,) = await reply_texts(db)
    assert text == (
        f"Thank you, Ana! Your request for Flyers is saved (reference {lead_task.id}). "
        "Our team will contact you at +1 212 555 0199."
    )
    (trace,) = await traces(db)
    assert trace.outcome == "templated"


async def test_a_refused_reply_with_nothing_done_is_still_the_hold_message(db):
    script = {"name": "nothing", "default": [REFUSED, REFUSED]}

    await converse(db, script, ("s1", "Can I call you?"))

    (trace,) = await traces(db)
    assert trace.outcome == "fallback"


async def leads_tasks(db) -> list[Task]:
    async with db.transaction() as session:
        return list(await session.scalars(select(Task).where(Task.kind == "follow_up")))


async def test_a_name_said_in_an_earlier_message_makes_the_order_start_with_saving_it(db):
    # The model kept the phone but not the name; the order a turn later still starts with saving it.
    remember = {"tool": "update_customer_info", "args": {"phone": "+34 612 345 678"}}
    hello = {"reply": "¡Hola, Lucía! ¿En qué te ayudo?"}
    capture = {
        "tool": "capture_lead",
        "args": {
            "service": "stickers-labels",
            "customer_name": "Lucía Fernández",
            "quantity": 500,
            "summary_for_team": "500 stickers with the shop's logo",
        },
    }
    llama = GrammarBoundLlama(remember, hello, capture, {"reply": "¡Listo, Lucía! Te llamamos."})

    await run_turns(
        db,
        local_style(llama),
        "Hola! Soy Lucía Fernández, mi número es +34 612 345 678",
        "quiero hacer un pedido de 500 pegatinas con el logo de mi tienda",
    )

    _, order = await traces(db)
    assert order.route["intent"] == "capture"
    # The first step could only save the request (the grammar held it to capture_lead).
    assert [o["properties"]["tool"]["const"] for o in llama.grammars[2]["anyOf"]] == ["capture_lead"]
    (lead,) = await leads(db)
    assert (lead["customer_name"], lead["phone"]) == ("Lucía Fernández", "+34 612 345 678")
