"""Web chat adapter: a small JSON API, a chat page and an embeddable widget, no JS build step.

The channel account id in the URL binds the tenant (a web chat widget is public by nature; the
id is unguessable). The client's ``id`` is the idempotency key, scoped to its session. A browser
calling from another web site (the widget on the business's own site) must be one the account
allows (``origins.py``); its answers then carry CORS headers.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.datastructures import MutableHeaders
from starlette.types import Message, Receive, Scope, Send

from frontdesk.errors import ConflictError, PayloadError
from frontdesk.http_errors import UNAVAILABLE, error_body, error_responses
from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.channels._webhook import read_capped
from frontdesk.ingestion.channels.webchat.origins import check_origin, preflight_headers
from frontdesk.ingestion.events import InboundMessage
from frontdesk.output.transcript import latest_message_id, read_transcript
from frontdesk.platform.store.schema import ChannelAccount

CHANNEL = "webchat"
TOKEN_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
# A session id is the only key to its transcript (names, phone numbers): long enough that
# nobody finds one by guessing. The widget makes 22 characters of 128 random bits.
SESSION_PATTERN = r"^[A-Za-z0-9._:-]{16,128}$"
SESSION_RULE = "16 to 128 characters of A-Z a-z 0-9 . _ : - (make it at random: it is the only key to the transcript)"
# Streams wake on signals (a publish, or the per-process store watcher, platform/signals.py); a
# stream re-reads on its own only this often, as a safety net. Measured: at 15 s, 2,000 idle
# streams re-read 133 transcripts a second, which alone kept one SQLite process busy.
STREAM_SAFETY_POLL_S = 60.0
STREAM_KEEPALIVE_S = 15.0

Session = Annotated[str, Query(pattern=SESSION_PATTERN, description=f"the widget's session id: {SESSION_RULE}")]
AccountId = Annotated[str, Path(pattern=TOKEN_PATTERN, max_length=40, description="a web chat channel account")]
LAST_EVENT_ID = re.compile(r"([0-9]{1,18}):([0-9]{1,9})")
ACCOUNT_ID = re.compile(r"[A-Za-z0-9._:-]{1,40}")  # AccountId, for the preflight (a plain route)
ACCOUNT_NOT_FOUND = "no web chat account has this id"
ORIGIN_REFUSED = "an Origin header naming a web site this account does not allow (its allowed_origins)"
READ_ERRORS = error_responses({404: ACCOUNT_NOT_FOUND, 422: "an account id the pattern refuses", **UNAVAILABLE})
API_READ_ERRORS = error_responses(
    {403: ORIGIN_REFUSED, 404: ACCOUNT_NOT_FOUND, 422: "an account id or session the pattern refuses", **UNAVAILABLE}
)
# Where the scope keeps the origin a request was admitted from, for ``CorsRoute`` to answer to.
CORS_ORIGIN = "frontdesk.webchat.cors_origin"
WIDGET_HEADERS = {
    "Cache-Control": "public, max-age=3600",  # cached across a site, yet a new release arrives within the hour
    "Access-Control-Allow-Origin": "*",  # public: a <script> tag on any site loads it, and so may a fetch
    "X-Content-Type-Options": "nosniff",
}
PRESENT = 10**6  # a block index past any message's last block: "everything of this message was seen"
# A text worth storing, as the OpenAPI document states it (the validator says why in words): no
# NUL, and at least one character that is not whitespace as ``str.strip`` sees it.
_SPACE = r"\t-\r\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
TEXT_PATTERN = rf"^[^\u0000]*[^\u0000{_SPACE}][^\u0000]*$"


class WebchatInbound(BaseModel):
    """``POST /v1/webchat/{channel_account_id}/messages`` body."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    session: str = Field(json_schema_extra={"pattern": SESSION_PATTERN})
    id: str = Field(pattern=TOKEN_PATTERN)
    text: str = Field(min_length=1, json_schema_extra={"pattern": TEXT_PATTERN})

    @field_validator("session")
    @classmethod
    def _unguessable(cls, value: str) -> str:
        if not re.fullmatch(SESSION_PATTERN, value):
            raise ValueError(f"a session id is {SESSION_RULE}")
        return value

    @field_validator("text")
    @classmethod
    def _storable(cls, value: str) -> str:
        # PostgreSQL cannot store NUL in text; no person types one.
        if "\x00" in value:
            raise ValueError("text must not contain NUL characters")
        if not value.strip():
            raise ValueError("text must not be blank")
        return value


def parse_inbound(raw: bytes, max_text_chars: int) -> WebchatInbound:
    try:
        body = WebchatInbound.model_validate_json(raw)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        if any(e["type"] in ("json_invalid", "json_type", "model_type") for e in errors):
            raise PayloadError("the body must be a JSON object", malformed=True) from exc
        details = [{"field": ".".join(map(str, e["loc"])), "problem": e["msg"]} for e in errors]
        raise PayloadError(
            "invalid message: " + "; ".join(f"{d['field']}: {d['problem']}" for d in details), details=details
        ) from exc
    # The limit counts the text as sent (what the widget's maxlength and the OpenAPI maxLength
    # count), before it is trimmed for storing.
    if len(body.text) > max_text_chars:
        raise PayloadError(
            f"text is {len(body.text)} characters; the limit is {max_text_chars}",
            details=[{"field": "text", "problem": f"longer than {max_text_chars} characters"}],
        )
    return body.model_copy(update={"text": body.text.strip()})


def inbound_schema(max_text_chars: int) -> dict[str, Any]:
    """The POST body's JSON schema, the text's length limit included (a setting, not a constant)."""
    schema = WebchatInbound.model_json_schema()
    schema["properties"]["text"]["maxLength"] = max_text_chars
    return schema


class CorsRoute(APIRoute):
    """A route of the API a browser may call from another site: every answer, errors included,
    carries ``Vary: Origin`` and, once ``admit`` let the request's origin in, the CORS header that
    lets the page read it (the widget shows a refused text's reason, a 409, a 503). Added on the way
    out because the app's exception handlers make the error answers after the endpoint gave up."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.add_vary_header("Origin")
                if (origin := scope.get(CORS_ORIGIN)) is not None:
                    headers["Access-Control-Allow-Origin"] = origin
            await send(message)

        await super().handle(scope, receive, send_with_cors)


def admit(request: Request, account: ChannelAccount, public_base_url: str) -> str | None:
    """Let the request in if it names no origin or one ``account`` allows (else the 403), and note
    the origin for ``CorsRoute``. Returns it."""
    origin = check_origin(
        request.headers.get("origin"),
        account.config,
        account_id=account.id,
        public_base_url=public_base_url,
        host=request.headers.get("host"),
        fetch_site=request.headers.get("sec-fetch-site"),
    )
    if origin is not None:
        request.scope[CORS_ORIGIN] = origin
    return origin


class JavaScriptResponse(Response):
    media_type = "text/javascript"


def widget_script(deps: ChannelDeps) -> bytes:
    """``widget.js`` with what it needs from the server filled in: settings of the deployment, not of
    an account, so one cached copy serves every account."""
    source = resources.files(__package__).joinpath("widget.js").read_text(encoding="utf-8")
    served = json.dumps({"maxTextChars": deps.max_text_chars, "modelLabel": deps.model_label})
    return source.replace("{/*SERVER*/}", served, 1).encode()


def build_router(deps: ChannelDeps) -> APIRouter:
    router = APIRouter(tags=["webchat"])
    router.include_router(_api_router(deps))
    script = widget_script(deps)

    # Before the page's route, whose account id pattern "widget.js" would match too.
    @router.get(
        "/webchat/widget.js",
        response_class=JavaScriptResponse,
        responses={200: {"description": "the embeddable chat widget", "content": {"text/javascript": {}}}},
    )
    async def widget() -> JavaScriptResponse:
        return JavaScriptResponse(script, headers=WIDGET_HEADERS)

    @router.get("/webchat/{channel_account_id}", response_class=HTMLResponse, responses=READ_ERRORS)
    async def page(channel_account_id: AccountId) -> HTMLResponse:
        account = await deps.ingestor.channel_account(channel_account_id, CHANNEL)
        template = resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")
        values = {
            "{{CHANNEL_ACCOUNT_ID}}": account.id,
            "{{BUSINESS_NAME}}": account.name,
            "{{MODEL_LABEL}}": deps.model_label,
            "{{MAX_TEXT_CHARS}}": str(deps.max_text_chars),
        }
        for placeholder, value in values.items():
            template = template.replace(placeholder, html.escape(value, quote=True))
        return HTMLResponse(template)

    return router


def _api_router(deps: ChannelDeps) -> APIRouter:
    router = APIRouter(route_class=CorsRoute)

    @router.post(
        "/v1/webchat/{channel_account_id}/messages",
        status_code=202,
        responses={
            200: {"description": "duplicate id: the earlier message"},
            **error_responses(
                {
                    400: "the body is not a JSON object",
                    403: ORIGIN_REFUSED + "; nothing is stored",
                    404: ACCOUNT_NOT_FOUND,
                    409: "this id was already used for a different text in this session",
                    413: "the body is larger than a valid message can be",
                    422: "a missing, blank, over-long or mistyped field, a session id shorter than 16 "
                    "characters, or an account id the path refuses",
                    429: "too many messages from this session, client address or account: "
                    "`Retry-After` says when to send again; nothing is stored",
                    **UNAVAILABLE,
                }
            ),
        },
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": inbound_schema(deps.max_text_chars)}},
            }
        },
    )
    async def post_message(channel_account_id: AccountId, request: Request) -> JSONResponse:
        if "origin" in request.headers:  # a browser on some web site: is it one this account allows?
            admit(request, await deps.ingestor.channel_account(channel_account_id, CHANNEL), deps.public_base_url)
        # Without an Origin, as before: the body is read first, then ingest checks the account.
        raw = await read_capped(request, body_limit(deps.max_text_chars))
        body = parse_inbound(raw, deps.max_text_chars)
        client = request.client.host if request.client else "unknown"
        wait_s = deps.webchat_limits.admit(channel_account_id, body.session, client, now=deps.clock.monotonic())
        if wait_s:  # before anything is stored or any model is asked
            return JSONResponse(
                error_body("rate_limited", f"too many messages; send again in {wait_s} s"),
                status_code=429,
                headers={"Retry-After": str(wait_s)},
            )
        result = await deps.ingestor.ingest(
            InboundMessage(
                channel_account_id=channel_account_id,
                contact_external_id=body.session,
                channel_message_id=f"{body.session}:{body.id}",
                text=body.text,
            ),
            channel=CHANNEL,
        )
        if result.new_conversation:  # a stream opened before the first message waits for this
            deps.signals.publish(session_signal(channel_account_id, body.session))
        if result.duplicate and not result.same_content:
            raise ConflictError(f"message id {body.id!r} was already used for a different text in this session")
        return JSONResponse(
            {"message_id": result.message_id, "duplicate": result.duplicate},
            status_code=200 if result.duplicate else 202,
        )

    @router.get("/v1/webchat/{channel_account_id}/messages", responses=API_READ_ERRORS)
    async def get_messages(channel_account_id: AccountId, session: Session, request: Request) -> dict[str, Any]:
        admit(request, await deps.ingestor.channel_account(channel_account_id, CHANNEL), deps.public_base_url)
        conversation_id = await deps.ingestor.find_conversation(channel_account_id, session)
        if conversation_id is None:
            return {"messages": []}
        entries = await read_transcript(deps.db, conversation_id)
        return {"messages": [e.as_json() for e in entries]}

    @router.get(
        "/v1/webchat/{channel_account_id}/stream",
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}}, **API_READ_ERRORS},
    )
    async def stream(channel_account_id: AccountId, session: Session, request: Request) -> StreamingResponse:
        admit(request, await deps.ingestor.channel_account(channel_account_id, CHANNEL), deps.public_base_url)
        conversation_id = await deps.ingestor.find_conversation(channel_account_id, session)
        resume_after = _parse_last_event_id(request.headers.get("last-event-id"))
        # A fresh stream fixes where it starts before it answers, so a client that reads the
        # transcript once the stream is open (the widget does) misses no reply stored in between.
        cursor = resume_after if resume_after is not None else await _present(deps, conversation_id)
        events = _assistant_blocks(
            deps, request, channel_account_id, session, conversation_id, cursor, announce=resume_after is None
        )
        return StreamingResponse(
            events, media_type="text/event-stream", headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        )

    # CORS preflights: a POST of JSON asks first, and so may EventSource resuming with Last-Event-ID.
    # Plain routes, out of the OpenAPI document like any CORS layer's: no client calls them on purpose.
    router.add_route(
        "/v1/webchat/{channel_account_id}/messages", _preflight(deps, "GET, POST"), ["OPTIONS"], include_in_schema=False
    )
    router.add_route(
        "/v1/webchat/{channel_account_id}/stream", _preflight(deps, "GET"), ["OPTIONS"], include_in_schema=False
    )
    return router


def _preflight(deps: ChannelDeps, methods: str) -> Callable[[Request], Awaitable[Response]]:
    async def preflight(request: Request) -> Response:
        """204 with what the origin may send, 403 for an origin the account does not allow, 404 for
        no such account; without an Origin (no browser asking), 204 with ``Allow``."""
        account_id = request.path_params["channel_account_id"]
        if not ACCOUNT_ID.fullmatch(account_id):
            problem = "must be 1 to 40 characters of A-Z a-z 0-9 . _ : -"
            raise PayloadError(
                f"invalid request: channel_account_id: {problem}",
                details=[{"field": "channel_account_id", "problem": problem}],
            )
        origin = admit(request, await deps.ingestor.channel_account(account_id, CHANNEL), deps.public_base_url)
        if origin is None:
            return Response(status_code=204, headers={"Allow": f"{methods}, OPTIONS"})
        return Response(status_code=204, headers=preflight_headers(origin, methods))

    return preflight


def _parse_last_event_id(value: str | None) -> tuple[int, int] | None:
    """``<message_id>:<block_index>`` of the last block the client saw, if it says so."""
    match = LAST_EVENT_ID.fullmatch(value or "")
    return (int(match[1]), int(match[2])) if match else None


def session_signal(channel_account_id: str, session: str) -> str:
    """The signal a session's first message publishes (its conversation exists from then on). A
    hash: the session id is the transcript's bearer credential, and signals travel as NOTIFY
    payloads that PostgreSQL may log."""
    digest = hashlib.sha256(f"{channel_account_id}\x00{session}".encode()).hexdigest()
    return f"webchat-session:{digest}"


def body_limit(max_text_chars: int) -> int:
    """Bytes a valid message can take: 12 per character of text plus room for the rest. Twelve,
    not UTF-8's four: JSON may escape any character (``json.dumps`` does by default), and one
    outside the BMP becomes a surrogate pair, ``\\ud83d\\ude00``."""
    return max_text_chars * 12 + 2048


async def _present(deps: ChannelDeps, conversation_id: str | None) -> tuple[int, int]:
    """Where a fresh stream starts: the conversation's present; before the conversation exists,
    its beginning (all of it will be new)."""
    latest = await latest_message_id(deps.db, conversation_id) if conversation_id else 0
    return (latest, PRESENT) if latest else (0, 0)


async def _assistant_blocks(
    deps: ChannelDeps,
    request: Request,
    channel_account_id: str,
    session: str,
    conversation_id: str | None,
    cursor: tuple[int, int],
    *,
    announce: bool,
) -> AsyncIterator[str]:
    """One SSE event per assistant block stored after ``cursor``. ``announce``: a fresh stream,
    which says where it starts."""
    yield "retry: 2000\n\n"
    if announce:
        # Tell the browser where this stream starts, so a reconnect before the first block
        # resumes here instead of at a later "present" (which would skip a reply in between).
        yield f"id: {cursor[0]}:{cursor[1]}\n\n"
    last_sent = last_read = time.monotonic()
    signalled = True  # read once at the start
    while not await request.is_disconnected():
        # Only a signal or the safety timer reads the store; a wake for the keep-alive does not.
        read = signalled or time.monotonic() - last_read >= STREAM_SAFETY_POLL_S
        if read:
            last_read = time.monotonic()
        if conversation_id is None and read:
            started = deps.signals.ticket(session_signal(channel_account_id, session))  # before the lookup
            conversation_id = await deps.ingestor.find_conversation(channel_account_id, session)
        # Wake by the keep-alive's due time at the latest, so a wake with nothing to send cannot
        # put the keep-alive off.
        wait_s = min(STREAM_SAFETY_POLL_S, max(0.0, STREAM_KEEPALIVE_S - (time.monotonic() - last_sent)))
        if conversation_id is not None:
            ticket = deps.signals.ticket(conversation_id)
            after = max(cursor[0] - 1, 0)
            entries = (
                await read_transcript(deps.db, conversation_id, after_id=after, roles=("assistant",)) if read else []
            )
            for entry in entries:
                for index, block in enumerate(entry.blocks):
                    if (entry.id, index) <= cursor:
                        continue
                    payload = {
                        "message_id": entry.id,
                        "index": index,
                        "count": len(entry.blocks),
                        "role": "assistant",
                        "block": block.model_dump(mode="json"),
                        "created_at": entry.created_at.isoformat(),
                    }
                    yield f"id: {entry.id}:{index}\nevent: block\ndata: {json.dumps(payload)}\n\n"
                    cursor = (entry.id, index)
                    last_sent = time.monotonic()
            signalled = await deps.signals.wait(ticket, wait_s)
        else:
            signalled = await deps.signals.wait(started, wait_s)
        if time.monotonic() - last_sent >= STREAM_KEEPALIVE_S:
            yield ": keep-alive\n\n"
            last_sent = time.monotonic()
