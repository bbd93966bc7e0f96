"""The inbox's list: views with their counts, search, filters, and the list kept live over SSE."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse

from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._guard import viewer
from frontdesk.humans.console._render import page
from frontdesk.humans.console.auth import current_principal
from frontdesk.humans.console.inbox import VIEWS, InboxFilter, counts_fingerprint, list_threads, view_counts
from frontdesk.humans.console.inbox_query import Wanted
from frontdesk.humans.console.operators import revoked_key
from frontdesk.humans.console.pages_threads import first_of
from frontdesk.humans.console.threads import tenant_channels
from frontdesk.platform.signals import ANY_CONVERSATION

# A list stream re-reads the list at most this often, however busy the tenant's threads are.
LIST_STREAM_MIN_GAP_S = 1.0
LIST_STREAM_POLL_S = 10.0  # a safety net: any publish, here or (PostgreSQL) elsewhere, wakes it first
STREAM_KEEPALIVE_S = 15.0


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    @router.get("/console/conversations", response_class=HTMLResponse)
    async def conversations(request: Request, wanted: Wanted) -> Response:
        me = await viewer(deps, request)
        rows = await list_threads(deps, me, wanted)
        counts = await view_counts(deps, me)
        partial = bool(request.headers.get("hx-request"))
        return page(
            "_inbox_list.html" if partial else "conversations.html",
            me,
            rows=rows,
            counts=counts,
            views=VIEWS,
            channels=await tenant_channels(deps, me),
            filters=wanted,
            current="",
            list_version=counts_fingerprint(counts, rows),
        )

    @router.get("/console/inbox/stream")
    async def inbox_stream(
        request: Request, wanted: Wanted, since: Annotated[str, Query(max_length=80)] = ""
    ) -> StreamingResponse:
        me = await viewer(deps, request)
        return StreamingResponse(
            _list_changes(deps, request, wanted, since, me.operator_id),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )


async def _list_changes(
    deps: ConsoleDeps, request: Request, wanted: InboxFilter, since: str, operator_id: str
) -> AsyncIterator[str]:
    """An SSE ``changed`` event whenever the list or a view's count would read differently; the
    page then re-fetches the list partial. Any conversation's publish wakes the stream (a new
    message, a reply, a hand-off, a delivery); it re-reads at most once a second."""
    yield "retry: 2000\n\n"
    last, last_sent = since, time.monotonic()
    while not await request.is_disconnected():
        ticket = deps.signals.ticket(ANY_CONVERSATION)
        revoked = deps.signals.ticket(revoked_key(operator_id))
        me = await current_principal(deps, request)
        if me is None:
            yield "event: signed_out\ndata: \n\n"
            return
        now = counts_fingerprint(await view_counts(deps, me), await list_threads(deps, me, wanted))
        if now != last:
            yield f"event: changed\ndata: {now}\n\n"
            last, last_sent = now, time.monotonic()
        woke = await first_of(ticket, revoked, timeout_s=LIST_STREAM_POLL_S)
        if woke:
            await first_of(revoked, timeout_s=LIST_STREAM_MIN_GAP_S)  # let a burst settle
        elif time.monotonic() - last_sent >= STREAM_KEEPALIVE_S:
            yield ": keep-alive\n\n"
            last_sent = time.monotonic()
