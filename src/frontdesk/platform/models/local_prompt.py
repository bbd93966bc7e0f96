"""What the embedded model reads and may write: chat messages, and one grammar over the bundle.

A small model does well with a short prompt and no freedom of form. So the tools are listed by
name, arguments and first sentence (not their full JSON schemas: the grammar enforces those), and
every output is constrained by one JSON schema, an ``anyOf`` of ``{"tool": <name>, "args": <that
tool's schema>}`` for exactly the tools the router offered this turn, and of the reply in a short
form (``{"reply": <text>}``, photos when one was fetched) that this client turns into the
``reply`` tool's arguments. The model cannot name a tool that was not offered or emit arguments of
the wrong shape; whether what it says is true is still the verification gate's business.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_ai import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.messages import RetryFeedbackPart, RetryPromptPart
from pydantic_ai.models import ModelRequestParameters

from frontdesk.platform.models.contract import FIRST_STEP, GATE_SCHEMA, REPLY_OPENING, REPLY_TOOL, TOOL_FIRST

DESCRIPTION_CHARS = 240

FORMAT_RULES = """\
# How you answer
Every message you write is ONE JSON object: either a tool call {"tool": "<name>", "args": {...}}
or your answer to the customer {"reply": "..."} (to show photos a tool returned, add "photos": ["<photo id>"]).
1. If the answer needs a fact of the business (a price, a turnaround, a minimum, hours, a photo),
   your first message calls the tool that returns it. You know no prices yourself.
2. If the customer asks for a person, complains or wants a refund, call the hand-over tool.
3. Then reply, saying only what the tools returned, in the customer's language.
4. You are the shop: write to the customer ("we", "you"). Never write their message back as yours."""


def chat_messages(
    messages: Sequence[ModelMessage], tools: Sequence[ToolDefinition], photos: Mapping[str, str] | None = None
) -> list[dict[str, str]]:
    """pydantic-ai messages as chat-template messages; the tool list joins the first system part.
    ``photos``: the turn's photo id -> URL, when the caller has read them (``turn_photos``)."""
    chat: list[dict[str, str]] = []
    photos = turn_photos(messages) if photos is None else photos
    for message in messages:
        if isinstance(message, ModelResponse):
            chat.append({"role": "assistant", "content": _response_text(message, photos)})
            continue
        assert isinstance(message, ModelRequest)
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                chat.append({"role": "system", "content": part.content})
            elif isinstance(part, UserPromptPart):
                chat.append({"role": "user", "content": _user_text(part)})
            elif isinstance(part, ToolReturnPart):
                chat.append({"role": "tool", "content": _tool_result_text(part)})
            elif isinstance(part, RetryPromptPart):
                chat.append({"role": "tool" if part.tool_name else "user", "content": part.model_response()})
            elif isinstance(part, RetryFeedbackPart):
                chat.append({"role": "user", "content": str(part.content)})
    # The tools and the answer format go in the last system message (the turn's tail), nearest to
    # what the model answers: a small model follows what it read last, and the static prefix
    # before it stays identical from turn to turn, so llama.cpp's prompt cache keeps it.
    last_system = max((i for i, m in enumerate(chat) if m["role"] == "system"), default=None)
    if last_system is None:
        chat.insert(0, {"role": "system", "content": tool_section(tools)})
    else:
        chat[last_system]["content"] += "\n\n" + tool_section(tools)
    return chat


CALL_FORMAT = """\
# How you answer
Answer with ONE JSON object calling one of the tools below: {"tool": "<name>", "args": {...}}."""


def tool_section(tools: Sequence[ToolDefinition]) -> str:
    """The answer format and the tools: a conversation's rules when ``reply`` is among them (the
    rules say how to write it), else (background work such as a memory summary) the call format."""
    rules = FORMAT_RULES if any(t.name == REPLY_TOOL for t in tools) else CALL_FORMAT
    return "\n".join([rules, "# Tools", *(tool_line(tool) for tool in tools if tool.name != REPLY_TOOL)])


def tool_line(tool: ToolDefinition) -> str:
    """A tool as a small model reads it: name, arguments (``?`` when optional), first sentence."""
    return f"- {tool.name}({_signature(tool)}): {_first_sentences(tool.description or '')}"


def allowed_tools(messages: Sequence[ModelMessage], params: ModelRequestParameters) -> list[ToolDefinition]:
    """The tools this step may call: all offered ones, except that a turn asking for something a
    tool gives or does (``reply`` marked ``tool_first`` by the loop: a price, a saved request, a
    person) must start with a tool call. A small model otherwise answers "500 business cards cost
    $10" from nowhere, or "a person will contact you" without handing over; the gate would refuse
    either, but a refused guess is a wasted step and, twice, the hold message. When the router
    named the tools to start with (``first_step``: the hand-over for a person asked for, saving
    the request for an order with contact details), the first step is one of those."""
    tools = list(params.function_tools)
    reply = next((t for t in tools if t.name == REPLY_TOOL), None)
    metadata = (reply.metadata or {}) if reply is not None else {}
    if not metadata.get(TOOL_FIRST) or len(tools) == 1:
        return tools
    if any(isinstance(m, ModelResponse) for m in messages[_last_customer_request(messages) :]):
        return tools  # the turn has taken a step already
    first = [t for t in tools if t.name in set(metadata.get(FIRST_STEP) or ())]
    return first or [t for t in tools if t.name != REPLY_TOOL]


def _last_customer_request(messages: Sequence[ModelMessage]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelRequest) and any(isinstance(p, UserPromptPart) for p in message.parts):
            return index
    return 0


def call_schema(tools: Sequence[ToolDefinition], photo_ids: Sequence[str] = ()) -> dict[str, Any]:
    """One JSON schema for every output ``tools`` allow, ``$defs`` hoisted and namespaced;
    ``photo_ids``: the photos a short reply may show (``turn_photos``)."""
    options: list[dict[str, Any]] = []
    defs: dict[str, Any] = {}
    for index, tool in enumerate(tools):
        # What could pass the verification gate at this step, when the loop says (see contract).
        narrowed = (tool.metadata or {}).get(GATE_SCHEMA)
        if tool.name == REPLY_TOOL:
            opening = (tool.metadata or {}).get(REPLY_OPENING, "")
            options.append(_short_reply(narrowed or tool.parameters_json_schema, photo_ids, opening))
            continue
        args = copy.deepcopy(narrowed or tool.parameters_json_schema) or {"type": "object", "properties": {}}
        prefix = f"t{index}_"
        for name, sub in args.pop("$defs", {}).items():
            defs[prefix + name] = _rename_refs(sub, prefix)
        options.append(
            {
                "type": "object",
                "properties": {"tool": {"const": tool.name}, "args": _rename_refs(args, prefix)},
                "required": ["tool", "args"],
                "additionalProperties": False,
            }
        )
    schema: dict[str, Any] = {"anyOf": options}
    if defs:
        schema["$defs"] = defs
    return schema


def _short_reply(schema: dict[str, Any], photo_ids: Sequence[str], opening: str = "") -> dict[str, Any]:
    """The reply as a small model writes it: its words, and the ids of photos a tool returned this
    turn when the gate could accept one at this step. The full payload (``{"tool": "reply",
    "args": {"blocks": [{"type": "text", "text": …}], "claims": []}}``) wraps the words in some 25
    tokens of fixed JSON, and a photo's URL is some 30 tokens to its id's 5, each generated one at a
    time (~15 a second here): ``parse_output`` writes them instead. No claims: the gate reads the
    text itself (prices, hours, contacts, actions). ``opening``: the words the text starts with
    (then it is plain characters: no quote, backslash or control character to escape)."""
    text: dict[str, Any] = {"type": "string", "minLength": 1}
    if opening:
        text = {"type": "string", OWN_PATTERN: f"^{re.escape(opening)} {_PLAIN_CHARACTER}+$"}
    properties: dict[str, Any] = {"reply": text}
    required = ["reply"]
    if photo_ids and "ImageGroupBlock" in (schema.get("$defs") or {}):
        # Fetched because the customer asked to see them (the router offers photos only then):
        # the reply shows them. Left to choose, the model wrote "here are the photos" without.
        properties["photos"] = {"type": "array", "items": {"enum": list(photo_ids)}, "minItems": 1}
        required.append("photos")
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


# A character of a JSON string that needs no escape (the pattern is written into the grammar as
# characters, not as JSON: an escape sequence would not be one).
_PLAIN_CHARACTER = r'[^"\\\x00-\x1f]'


def turn_photos(messages: Sequence[ModelMessage]) -> dict[str, str]:
    """Photo id -> URL, of every photo a tool returned this turn: an object of a tool result with
    an ``id`` and an http(s) ``url``."""
    found: dict[str, str] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if photo := _photo_of(value):
                found.setdefault(*photo)
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    for message in messages[_last_customer_request(messages) :]:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    walk(part.content)
    return found


def _photo_of(value: Mapping[str, Any]) -> tuple[str, str] | None:
    """(id, URL) when ``value`` is a photo as tools return one: an ``id`` and an http(s) ``url``."""
    ref, url = value.get("id"), value.get("url")
    if isinstance(ref, str) and isinstance(url, str) and url.startswith(("http://", "https://")):
        return ref, url
    return None


def reply_arguments(text: str, photos: Sequence[str] = ()) -> dict[str, Any]:
    """The ``reply`` tool's arguments for a short reply (see ``_short_reply``): ``photos`` are URLs."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if photos:
        blocks.append({"type": "image_group", "urls": list(photos)})
    return {"blocks": blocks, "claims": []}


def _short_reply_of(args: dict[str, Any], photos: Mapping[str, str]) -> dict[str, Any] | None:
    """A ``reply`` call's arguments as the short form, when they fit it (text, then photos, each
    by its id when ``photos`` knows its URL)."""
    blocks = args.get("blocks")
    if not isinstance(blocks, list) or not blocks or not all(isinstance(b, dict) for b in blocks):
        return None
    texts = [b.get("text") for b in blocks if b.get("type") == "text"]
    urls = [u for b in blocks if b.get("type") == "image_group" for u in b.get("urls") or []]
    if not texts or not all(isinstance(t, str) for t in texts):
        return None
    ids = {url: ref for ref, url in photos.items()}
    short: dict[str, Any] = {"reply": "\n\n".join(texts)}
    return {**short, "photos": [ids.get(u, u) for u in urls]} if urls else short


def settled_call(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The one output ``schema`` admits, when it admits one: a single tool whose every argument is
    held to one value (a ``const``, an enum of one, an object with nothing to fill), or is an
    optional count or flag left at its default. None when anything is left to choose (a word, a
    name, which of two tools): the model writes that.

    The router's first step is often settled this way (the details of the one item the message
    names; the hours): greedy decoding under the grammar would write exactly this call, token by
    token, at some 15 tokens a second, so the client returns it without running the model."""
    options = schema.get("anyOf") or []
    if len(options) != 1 or schema.get("$defs") or "tool" not in options[0]["properties"]:
        return None  # the reply's words are never settled
    properties = options[0]["properties"]
    args = _settled_object(properties["args"])
    return None if args is None else {"tool": properties["tool"]["const"], "args": args}


_OBJECT_KEYS = frozenset({"type", "properties", "required", "additionalProperties", "title", "description"})


def _settled_object(schema: dict[str, Any]) -> dict[str, Any] | None:
    if schema.get("type") != "object" or set(schema) - _OBJECT_KEYS:
        return None
    if schema.get("additionalProperties", True) is not False and not schema.get("properties"):
        return None  # an open object: anything could be written into it
    required = set(schema.get("required", ()))
    settled: dict[str, Any] = {}
    for name, field in (schema.get("properties") or {}).items():
        value = _single_value(field)
        if name in required:
            if value is _CHOICE:
                return None
            settled[name] = value
        elif value is _CHOICE and not (field.get("type") in ("integer", "number", "boolean") and "default" in field):
            return None  # an optional word or name may be worth writing: the model's choice
    return settled


_CHOICE = object()  # a field with more than one value to choose from


def _single_value(field: dict[str, Any]) -> Any:
    if "const" in field:
        return field["const"]
    enum = field.get("enum")
    return enum[0] if isinstance(enum, list) and len(enum) == 1 else _CHOICE


# Bounds llama.cpp's grammar compiler expands into repeated rules: a schema's ``maxItems: 20`` of
# claims or ``maxLength: 600`` strings exceed its limits. They are dropped from the grammar only;
# the arguments are still validated against the full schema after the call, and the output
# token limit bounds a runaway string.
_EXPANDING_KEYWORDS = frozenset({"maxLength", "maxItems", "pattern", "format"})
# A pattern this module writes for the grammar (a reply's opening words), kept where a tool's own
# ``pattern`` is dropped: it is small and known to compile.
OWN_PATTERN = "x-grammar-pattern"


def grammar_schema(schema: Any) -> Any:
    """``schema`` with what the grammar compiler cannot afford removed (see above)."""
    if isinstance(schema, list):
        return [grammar_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    constants = [name for name, sub in schema.get("properties", {}).items() if isinstance(sub, dict) and "const" in sub]
    if constants:  # a tag with a default (``type: "text"``) may be left out of JSON, not of a union's member
        kept["required"] = sorted({*schema.get("required", ()), *constants})
    for key, value in schema.items():
        if key == "required" and constants:
            continue
        if key in _EXPANDING_KEYWORDS and not isinstance(value, dict):
            continue
        if key == OWN_PATTERN:
            kept["pattern"] = value
            continue
        if key in ("minLength", "minItems") and isinstance(value, int) and value > 1:
            kept[key] = 1
        elif key in ("properties", "$defs") and isinstance(value, dict):
            kept[key] = {name: grammar_schema(sub) for name, sub in value.items()}
        else:
            kept[key] = grammar_schema(value)
    return kept


def parse_output(
    text: str, tools: Sequence[ToolDefinition], call_id: str, photos: Mapping[str, str] | None = None
) -> ToolCallPart | TextPart:
    """The model's output as a tool call, or as text when it is not one (cut off by the token
    limit): the loop then asks again, as it does for any model that answers in prose. ``photos``:
    the turn's photo id -> URL (``turn_photos``), for a short reply's photos. A short reply cut off
    while it repeated itself keeps its whole sentences before the first one said again."""
    offered = {tool.name for tool in tools}
    try:
        payload = json.loads(text)
    except ValueError:
        cut = _cut_off_reply(text) if REPLY_TOOL in offered and not photos else None
        if cut is None:
            return TextPart(text)
        return ToolCallPart(REPLY_TOOL, reply_arguments(cut), tool_call_id=call_id)
    if isinstance(payload, dict) and isinstance(payload.get("reply"), str) and REPLY_TOOL in offered:
        shown = payload.get("photos") or []
        if set(payload) <= {"reply", "photos"} and isinstance(shown, list):
            urls = [(photos or {}).get(str(ref), str(ref)) for ref in shown]  # an unknown id: the gate refuses it
            return ToolCallPart(REPLY_TOOL, reply_arguments(payload["reply"], urls), tool_call_id=call_id)
    if not isinstance(payload, dict) or payload.get("tool") not in offered or not isinstance(payload.get("args"), dict):
        return TextPart(text)
    return ToolCallPart(str(payload["tool"]), payload["args"], tool_call_id=call_id)


_CUT_OFF_REPLY = re.compile(r'\s*\{\s*"reply"\s*:\s*"(?P<text>(?:[^"\\]|\\.)*)(?:\\)?', re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


def _cut_off_reply(text: str) -> str | None:
    """The whole sentences of a short reply that stopped before its closing quote, up to the first
    one said again; None when there is none. Greedy decoding can fall into saying one sentence
    over and over ("Chúng tôi có thể giúp bạn…" five times) until the client stops it; before
    this, the loop got no reply at all, asked again, and got the same loop."""
    match = _CUT_OFF_REPLY.fullmatch(text)
    if match is None:
        return None
    try:
        words = json.loads(f'"{match["text"]}"')
    except ValueError:
        return None
    kept: list[str] = []
    for sentence in _SENTENCE_END.split(words.strip()):
        if sentence in kept or not sentence.endswith((".", "!", "?", "…")):
            break
        kept.append(sentence)
    return " ".join(kept) or None


def _response_text(response: ModelResponse, photos: Mapping[str, str]) -> str:
    """A past response as the model would have written it (one JSON object per call)."""
    pieces: list[str] = []
    for part in response.parts:
        if isinstance(part, ToolCallPart):
            args = part.args_as_dict()
            short = _short_reply_of(args, photos) if part.tool_name == REPLY_TOOL else None
            pieces.append(json.dumps(short or {"tool": part.tool_name, "args": args}, ensure_ascii=False))
        elif isinstance(part, TextPart):
            pieces.append(part.content)
    return "\n".join(pieces)


def _user_text(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    pieces = []
    for item in part.content:
        if isinstance(item, str):
            pieces.append(item)
        elif isinstance(item, BinaryContent) and item.is_image:
            pieces.append("[the customer sent an image; you cannot see images]")
        else:
            pieces.append("[an attachment you cannot read]")
    return "\n".join(pieces)


def _tool_result_text(part: ToolReturnPart) -> str:
    content = (
        part.content
        if isinstance(part.content, str)
        else json.dumps(_without_photo_urls(part.content), ensure_ascii=False, default=str)
    )
    return f"{part.tool_name} result: {content}"


def _without_photo_urls(value: Any) -> Any:
    """A tool result with each photo's URL left out (an object with an ``id`` and an http(s)
    ``url``): the model shows a photo by its id (``turn_photos``). Shown the URLs, it wrote them
    into the reply's text, 30 tokens each, instead of showing the photos."""
    if isinstance(value, list):
        return [_without_photo_urls(item) for item in value]
    if not isinstance(value, dict):
        return value
    photo = _photo_of(value) is not None
    return {k: _without_photo_urls(v) for k, v in value.items() if not (photo and k == "url")}


def _signature(tool: ToolDefinition) -> str:
    schema = tool.parameters_json_schema or {}
    required = set(schema.get("required", ()))
    return ", ".join(name if name in required else f"{name}?" for name in schema.get("properties", {}))


def _first_sentences(description: str) -> str:
    flat = " ".join(description.split())
    if len(flat) <= DESCRIPTION_CHARS:
        return flat
    cut = flat[:DESCRIPTION_CHARS]
    end = cut.rfind(". ")
    return cut[: end + 1] if end > 60 else cut.rstrip() + "…"


def _rename_refs(schema: Any, prefix: str) -> Any:
    if isinstance(schema, list):
        return [_rename_refs(item, prefix) for item in schema]
    if not isinstance(schema, dict):
        return schema
    renamed: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
            renamed[key] = "#/$defs/" + prefix + value.removeprefix("#/$defs/")
        else:
            renamed[key] = _rename_refs(value, prefix)
    return renamed
