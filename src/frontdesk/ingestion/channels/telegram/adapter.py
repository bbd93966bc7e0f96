"""Telegram webhook: ``POST /webhooks/telegram/{account_id}``.

Telegram sends ``X-Telegram-Bot-Api-Secret-Token`` with the value given to ``setWebhook``; it is
checked (constant time) against this account's ``webhook_secret`` before the body is read. The
account, and so the tenant, comes from the URL and that secret, never from the update.
``update_id`` is the idempotency key: a redelivered update stores nothing and sends nothing.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.channels._webhook import AccountIdPath, apply_events, check_shared_secret, read_capped
from frontdesk.ingestion.channels.telegram.inbound import parse_events

CHANNEL = "telegram"
SECRET_HEADER = "x-telegram-bot-api-secret-token"


def build_router(deps: ChannelDeps) -> APIRouter:
    router = APIRouter(tags=["telegram"])

    @router.post(
        "/webhooks/telegram/{account_id}",
        responses={401: {"description": "missing or wrong secret token"}, 404: {}, 413: {}, 422: {}},
    )
    async def webhook(account_id: AccountIdPath, request: Request) -> JSONResponse:
        account = await deps.accounts.get(account_id, (CHANNEL,))
        check_shared_secret(request.headers.get(SECRET_HEADER), account.credentials.get("webhook_secret"))
        raw = await read_capped(request)
        counts = await apply_events(deps, CHANNEL, parse_events(raw, account.id, account.config))
        return JSONResponse({"ok": True, **counts})

    return router
