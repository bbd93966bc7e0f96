"""WhatsApp Cloud API webhook: ``GET`` and ``POST /webhooks/whatsapp/{account_id}``.

- ``GET`` is Meta's subscription handshake: the ``hub.challenge`` comes back when
  ``hub.verify_token`` matches this account's ``verify_token`` (403 otherwise).
- ``POST`` carries ``X-Hub-Signature-256``, an HMAC-SHA256 of the exact body under this account's
  ``app_secret``. It is checked on the raw bytes before anything is parsed (401 when missing or
  wrong), so the account, and so the tenant, comes from the URL and that secret, never from the
  payload. Then every message is stored (``wamid`` is the idempotency key: a redelivery stores
  and sends nothing) and every status moves the receipt of the part we sent with that ``wamid``.

Nothing slow happens in the request: media, transcription and the turn are jobs. Meta wants the
200 within seconds and redelivers for days otherwise.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from frontdesk.http_errors import json_schema
from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.channels._meta import (
    HANDSHAKE_RESPONSES,
    HubChallenge,
    HubMode,
    HubSignature,
    HubVerifyToken,
    answer_verification,
    check_meta_signature,
)
from frontdesk.ingestion.channels._openapi import webhook_docs
from frontdesk.ingestion.channels._webhook import AccountIdPath, apply_events, read_capped
from frontdesk.ingestion.channels.whatsapp.inbound import parse_events
from frontdesk.ingestion.channels.whatsapp.payloads import OBJECT, WebhookPayload

CHANNEL = "whatsapp"
PATH = "/webhooks/whatsapp/{account_id}"


def build_router(deps: ChannelDeps) -> APIRouter:
    router = APIRouter(tags=["whatsapp"])

    @router.get(PATH, response_class=PlainTextResponse, responses=HANDSHAKE_RESPONSES)
    async def verify(
        account_id: AccountIdPath, mode: HubMode, challenge: HubChallenge, verify_token: HubVerifyToken = None
    ) -> PlainTextResponse:
        account = await deps.accounts.get(account_id, (CHANNEL,))
        return answer_verification(account, verify_token, challenge)

    body = json_schema(WebhookPayload)
    body["properties"]["object"] = {"const": OBJECT}  # checked by the parser, before the model

    @router.post(PATH, **webhook_docs(WebhookPayload, unauthorized="missing or wrong signature", schema=body))
    async def webhook(account_id: AccountIdPath, request: Request, signature: HubSignature = None) -> JSONResponse:
        account = await deps.accounts.get(account_id, (CHANNEL,))
        raw = await read_capped(request)
        check_meta_signature(signature, account, raw)
        counts = await apply_events(deps, CHANNEL, parse_events(raw, account.id, account.config))
        return JSONResponse({"ok": True, **counts})

    return router
