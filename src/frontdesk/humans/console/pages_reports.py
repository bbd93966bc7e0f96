"""Review: small charts, claim rejections and the delivery log."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import select

from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._guard import viewer
from frontdesk.humans.console._render import page
from frontdesk.humans.console.reports import daily_series
from frontdesk.platform.store.schema import ChannelAccount, ClaimRejection, Conversation, Receipt

LIMIT = 200


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    @router.get("/console/reports", response_class=HTMLResponse)
    async def reports(request: Request) -> Response:
        me = await viewer(deps, request)
        return page("reports.html", me, charts=await daily_series(deps, me.tenant_id, deps.clock.now()))

    @router.get("/console/rejections", response_class=HTMLResponse)
    async def rejections(request: Request) -> Response:
        me = await viewer(deps, request)
        async with deps.db.read() as session:
            rows = list(
                await session.scalars(
                    select(ClaimRejection)
                    .join(Conversation, Conversation.id == ClaimRejection.conversation_id)
                    .where(Conversation.tenant_id == me.tenant_id)
                    .order_by(ClaimRejection.id.desc())
                    .limit(LIMIT)
                )
            )
        return page("rejections.html", me, rows=rows)

    @router.get("/console/deliveries", response_class=HTMLResponse)
    async def deliveries(request: Request) -> Response:
        me = await viewer(deps, request)
        async with deps.db.read() as session:
            rows = (
                await session.execute(
                    select(Receipt, ChannelAccount.channel)
                    .join(Conversation, Conversation.id == Receipt.conversation_id)
                    .join(ChannelAccount, ChannelAccount.id == Receipt.channel_account_id)
                    .where(Conversation.tenant_id == me.tenant_id)
                    .order_by(Receipt.id.desc())
                    .limit(LIMIT)
                )
            ).all()
        return page("deliveries.html", me, rows=rows)
