"""Telegram webhook: ``POST /webhooks/telegram/{account_id}``.

Telegram sends ``X-Telegram-Bot-Api-Secret-Token`` with the value given to ``setWebhook``; it is
checked (constant time) against this account's ``webhook_secret`` before the body is read. The
account, and so the tenant, comes from the URL and that secret, never from the update.
``update_id`` is the idempotency key: a redelivered update stores nothing and sends nothing.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse

from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.channels._openapi import webhook_docs
from frontdesk.ingestion.channels._webhook import AccountIdPath, apply_events, check_shared_secret, read_capped
from frontdesk.ingestion.channels.telegram.inbound import parse_events
from frontdesk.ingestion.channels.telegram.payloads import Update

CHANNEL = "telegram"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# Optional to FastAPI: a missing secret is a 401 from check_shared_secret, like a wrong one.
SecretToken = Annotated[str | None, Header(alias=SECRET_HEADER, description="the secret_token given to setWebhook")]


def build_router(deps: ChannelDeps) -> APIRouter:
    router = APIRouter(tags=["telegram"])

    @router.post(
        "/webhooks/telegram/{account_id}", **webhook_docs(Update, unauthorized="missing or wrong secret token")
    )
    async def webhook(account_id: AccountIdPath, request: Request, secret: SecretToken = None) -> JSONResponse:
        account = await deps.accounts.get(account_id, (CHANNEL,))
        check_shared_secret(secret, account.credentials.get("webhook_secret"))
        raw = await read_capped(request)
        counts = await apply_events(deps, CHANNEL, parse_events(raw, account.id, account.config))
        return JSONResponse({"ok": True, **counts})

    return router
