"""Web chat adapter: a small JSON API and a chat page, no JS build step.

The channel account id in the URL binds the tenant (a web chat widget is public by nature; the
id is unguessable). The client's ``id`` is the idempotency key, scoped to its session.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import time
from collections.abc import AsyncIterator
from importlib import resources
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from frontdesk.errors import ConflictError, PayloadError
from frontdesk.http_errors import UNAVAILABLE, error_responses
from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.channels._webhook import read_capped
from frontdesk.ingestion.events import InboundMessage
from frontdesk.output.transcript import latest_message_id, read_transcript

CHANNEL = "webchat"
TOKEN_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
# Streams wake on signals (a publish, or the per-process store watcher, platform/signals.py); a
# stream re-reads on its own only this often, as a safety net. Measured: at 15 s, 2,000 idle
# streams re-read 133 transcripts a second, which alone kept one SQLite process busy.
STREAM_SAFETY_POLL_S = 60.0
STREAM_KEEPALIVE_S = 15.0

Session = Annotated[str, Query(pattern=TOKEN_PATTERN, description="the widget's session id")]
AccountId = Annotated[str, Path(pattern=TOKEN_PATTERN, max_length=40, description="a web chat channel account")]
LAST_EVENT_ID = re.compile(r"([0-9]{1,18}):([0-9]{1,9})")
ACCOUNT_NOT_FOUND = "no web chat account has this id"
READ_ERRORS = error_responses(
    {404: ACCOUNT_NOT_FOUND, 422: "an account id or session the pattern refuses", **UNAVAILABLE}
)
PRESENT = 10**6  # a block index past any message's last block: "everything of this message was seen"
# A text worth storing, as the OpenAPI document states it (the validator says why in words): no
# NUL, and at least one character that is not whitespace as ``str.strip`` sees it.
_SPACE = r"\t-\r\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
TEXT_PATTERN = rf"^[^\u0000]*[^\u0000{_SPACE}][^\u0000]*$"


class WebchatInbound(BaseModel):
    """``POST /v1/webchat/{channel_account_id}/messages`` body."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    session: str = Field(pattern=TOKEN_PATTERN)
    id: str = Field(pattern=TOKEN_PATTERN)
    text: str = Field(min_length=1, json_schema_extra={"pattern": TEXT_PATTERN})

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


def build_router(deps: ChannelDeps) -> APIRouter:
    router = APIRouter(tags=["webchat"])

    @router.post(
        "/v1/webchat/{channel_account_id}/messages",
        status_code=202,
        responses={
            200: {"description": "duplicate id: the earlier message"},
            **error_responses(
                {
                    400: "the body is not a JSON object",
                    404: ACCOUNT_NOT_FOUND,
                    409: "this id was already used for a different text in this session",
                    413: "the body is larger than a valid message can be",
                    422: "a missing, blank, over-long or mistyped field, or an account id the path refuses",
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
        raw = await read_capped(request, body_limit(deps.max_text_chars))
        body = parse_inbound(raw, deps.max_text_chars)
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

    @router.get("/v1/webchat/{channel_account_id}/messages", responses=READ_ERRORS)
    async def get_messages(channel_account_id: AccountId, session: Session) -> dict[str, Any]:
        await deps.ingestor.channel_account(channel_account_id, CHANNEL)
        conversation_id = await deps.ingestor.find_conversation(channel_account_id, session)
        if conversation_id is None:
            return {"messages": []}
        entries = await read_transcript(deps.db, conversation_id)
        return {"messages": [e.as_json() for e in entries]}

    @router.get(
        "/v1/webchat/{channel_account_id}/stream",
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}}, **READ_ERRORS},
    )
    async def stream(channel_account_id: AccountId, session: Session, request: Request) -> StreamingResponse:
        await deps.ingestor.channel_account(channel_account_id, CHANNEL)
        resume_after = _parse_last_event_id(request.headers.get("last-event-id"))
        events = _assistant_blocks(deps, request, channel_account_id, session, resume_after)
        return StreamingResponse(
            events, media_type="text/event-stream", headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        )

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


async def _assistant_blocks(
    deps: ChannelDeps, request: Request, channel_account_id: str, session: str, resume_after: tuple[int, int] | None
) -> AsyncIterator[str]:
    """One SSE event per assistant block stored after the cursor. A fresh stream starts at the
    conversation's present; a stream opened before the conversation existed sends all of it."""
    yield "retry: 2000\n\n"
    conversation_id = await deps.ingestor.find_conversation(channel_account_id, session)
    cursor = resume_after
    if cursor is None:
        # Tell the browser where this stream starts, so a reconnect before the first block
        # resumes here instead of at a later "present" (which would skip a reply in between).
        latest = await latest_message_id(deps.db, conversation_id) if conversation_id else 0
        cursor = (latest, PRESENT) if latest else (0, 0)
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
