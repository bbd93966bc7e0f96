"""Monitor: the conversations list, a thread live over SSE, the AI switch, operator replies
and replays."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from frontdesk.humans.console._configure import media_of
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._forms import typed
from frontdesk.humans.console._guard import actor, redirect, viewer
from frontdesk.humans.console._render import page, parse_form
from frontdesk.humans.console.auth import current_principal
from frontdesk.humans.console.contact_panel import contact_panel
from frontdesk.humans.console.i18n import catalog
from frontdesk.humans.console.inbox import VIEWS, assign, counts_fingerprint, list_threads, mark_read, view_counts
from frontdesk.humans.console.inbox_query import Wanted
from frontdesk.humans.console.operators import revoked_key
from frontdesk.humans.console.threads import (
    fingerprint,
    get_thread,
    operator_reply,
    replay,
    switch_ai,
    tenant_channels,
    thread_messages,
    thread_traces,
)
from frontdesk.output.blocks import MAX_TEXT_CHARS

ID = r"^[A-Za-z0-9_-]{1,40}$"
ConversationPath = Annotated[str, Path(pattern=ID)]
STREAM_POLL_S = 1.0
STREAM_KEEPALIVE_S = 15.0


class ReplyForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)

    @field_validator("text")
    @classmethod
    def _sendable(cls, value: str) -> str:
        return typed(value, "write a message to send")


class AssignForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    assignee: str = Field(default="", max_length=40, pattern=r"^(|me|[A-Za-z0-9_-]+)$")  # "": nobody


class SwitchForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    enabled: bool


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    @router.get("/console/conversations/{conversation_id}", response_class=HTMLResponse)
    async def thread(request: Request, conversation_id: ConversationPath, wanted: Wanted) -> Response:
        me = await viewer(deps, request)
        async with deps.db.read() as session:
            row = await get_thread(session, me, conversation_id)
        panel = await contact_panel(deps, me, row)
        await mark_read(deps, me, conversation_id)
        rows = await list_threads(deps, me, wanted)
        counts = await view_counts(deps, me)
        return page(
            "thread.html",
            me,
            thread=row,
            panel=panel,
            rows=rows,
            counts=counts,
            views=VIEWS,
            channels=await tenant_channels(deps, me),
            filters=wanted,
            current=conversation_id,
            list_version=counts_fingerprint(counts, rows),
            messages=await thread_messages(deps, conversation_id, sign=_signer(deps, request)),
            traces=await thread_traces(deps, conversation_id),
            version=await fingerprint(deps, conversation_id),
            notice=_known_notice(request.query_params.get("notice", "")),
        )

    @router.get("/console/conversations/{conversation_id}/messages", response_class=HTMLResponse)
    async def thread_partial(request: Request, conversation_id: ConversationPath) -> Response:
        me = await viewer(deps, request)
        async with deps.db.read() as session:
            row = await get_thread(session, me, conversation_id)
        await mark_read(deps, me, conversation_id)  # the open thread re-drawn: they have it on screen
        return page(
            "_messages.html",
            me,
            thread=row,
            messages=await thread_messages(deps, conversation_id, sign=_signer(deps, request)),
            traces=await thread_traces(deps, conversation_id),
        )

    @router.get("/console/conversations/{conversation_id}/stream")
    async def stream(
        request: Request,
        conversation_id: ConversationPath,
        since: Annotated[str, Query(max_length=80)] = "",
    ) -> StreamingResponse:
        me = await viewer(deps, request)
        async with deps.db.read() as session:
            await get_thread(session, me, conversation_id)
        return StreamingResponse(
            _changes(deps, request, conversation_id, since, me.operator_id),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @router.post("/console/conversations/{conversation_id}/ai")
    async def ai_switch(request: Request, conversation_id: ConversationPath) -> Response:
        me = await actor(deps, request)
        form = await parse_form(request, SwitchForm)
        await switch_ai(deps, me, conversation_id, form.enabled)
        raise redirect(f"/console/conversations/{conversation_id}")

    @router.post("/console/conversations/{conversation_id}/assign")
    async def assign_thread(request: Request, conversation_id: ConversationPath) -> Response:
        me = await actor(deps, request)
        form = await parse_form(request, AssignForm)
        assignee = me.operator_id if form.assignee == "me" else (form.assignee or None)
        await assign(deps, me, conversation_id, assignee)
        raise redirect(f"/console/conversations/{conversation_id}")

    @router.post("/console/conversations/{conversation_id}/reply")
    async def reply(request: Request, conversation_id: ConversationPath) -> Response:
        me = await actor(deps, request)
        form = await parse_form(request, ReplyForm)
        status = await operator_reply(deps, me, conversation_id, form.text)
        raise redirect(f"/console/conversations/{conversation_id}?notice=reply_{status}")

    @router.post("/console/receipts/{receipt_id}/replay")
    async def replay_receipt(request: Request, receipt_id: Annotated[int, Path(ge=1, le=2**62)]) -> Response:
        me = await actor(deps, request)
        conversation_id, status = await replay(deps, me, receipt_id)
        raise redirect(f"/console/conversations/{conversation_id}?notice=replay_{status}")


def _signer(deps: ConsoleDeps, request: Request) -> Callable[[str], str] | None:
    """Links to the customer's photos for this page: relative to this site for our own store (the
    console's own origin), the store's own for S3; they expire as every media link does."""
    media = media_of(deps, request)
    return None if media is None else (lambda key: media.signed_url(key, ""))


def _known_notice(value: str) -> str:
    """Only notices the catalog knows: the query string is not a way to put words on the page."""
    return value if f"notice.{value}" in catalog("en") else ""


async def _changes(
    deps: ConsoleDeps, request: Request, conversation_id: str, since: str, operator_id: str
) -> AsyncIterator[str]:
    """An SSE ``changed`` event whenever the thread's fingerprint moves; the page then re-fetches
    its messages partial. The signal wakes us at once in this process; the poll finds changes
    made by other instances. The session is re-checked on every wake, so signing out (or
    expiry) ends the stream; so does anything that ends the operator's sessions (deactivated,
    deleted, a new password, "end sessions"), which announces ``revoked_key`` to wake us now."""
    yield "retry: 2000\n\n"
    last, last_sent = since, time.monotonic()
    while not await request.is_disconnected():
        # Tickets before the reads: a publish between the reads and the wait still wakes us.
        ticket = deps.signals.ticket(conversation_id)
        revoked = deps.signals.ticket(revoked_key(operator_id))
        if await current_principal(deps, request) is None:
            yield "event: signed_out\ndata: \n\n"
            return
        now = await fingerprint(deps, conversation_id)
        if now != last:
            yield f"event: changed\ndata: {now}\n\n"
            last, last_sent = now, time.monotonic()
        woke = await first_of(ticket, revoked, timeout_s=STREAM_POLL_S)
        if not woke and time.monotonic() - last_sent >= STREAM_KEEPALIVE_S:
            yield ": keep-alive\n\n"
            last_sent = time.monotonic()


async def first_of(*tickets: asyncio.Event, timeout_s: float) -> bool:
    """True once any ticket is set, False after ``timeout_s`` without one."""
    waiters = [asyncio.ensure_future(ticket.wait()) for ticket in tickets]
    try:
        done, _ = await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    return bool(done)
