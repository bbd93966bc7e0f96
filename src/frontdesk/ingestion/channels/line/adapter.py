"""LINE webhook: ``POST /webhooks/line/{account_id}``.

LINE signs every POST with ``X-Line-Signature: base64(HMAC-SHA256(channel secret, raw body))``;
it is checked on the exact bytes, in constant time, before anything is parsed. The account, and
so the tenant, comes from the URL and that secret, never from the body (``destination`` can only
narrow it: see ``inbound``). ``webhookEventId`` is the idempotency key: a redelivered event
stores nothing and sends nothing. LINE's "Verify" button posts a signed ``{"events": []}``,
answered 200 like any other batch.

LINE gives a webhook 2 seconds: this route only checks, parses and stores; media downloads,
transcription and the turn are jobs queued in the same transaction.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse

from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.channels._openapi import webhook_docs
from frontdesk.ingestion.channels._webhook import AccountIdPath, apply_events, check_base64_signature, read_capped
from frontdesk.ingestion.channels.line.inbound import parse_events
from frontdesk.ingestion.channels.line.payloads import CallbackRequest

CHANNEL = "line"
SIGNATURE_HEADER = "X-Line-Signature"
# Optional to FastAPI: a missing signature is a 401 from check_base64_signature, like a forged one.
LineSignature = Annotated[
    str | None,
    Header(alias=SIGNATURE_HEADER, description="base64 of HMAC-SHA256 of the raw body, channel secret as key"),
]


def build_router(deps: ChannelDeps) -> APIRouter:
    router = APIRouter(tags=["line"])

    @router.post(
        "/webhooks/line/{account_id}", **webhook_docs(CallbackRequest, unauthorized="missing or forged signature")
    )
    async def webhook(account_id: AccountIdPath, request: Request, signature: LineSignature = None) -> JSONResponse:
        account = await deps.accounts.get(account_id, (CHANNEL,))
        raw = await read_capped(request)
        # An account without a channel secret fails closed here (401), like a forged signature.
        check_base64_signature(signature, account.credentials.get("channel_secret"), raw)
        counts = await apply_events(deps, CHANNEL, parse_events(raw, account.id, account.config))
        return JSONResponse({"ok": True, **counts})

    return router
