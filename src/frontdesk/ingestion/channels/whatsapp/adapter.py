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

from frontdesk.ingestion.channels._deps import ChannelDeps
from frontdesk.ingestion.channels._meta import answer_verification, check_meta_signature
from frontdesk.ingestion.channels._webhook import AccountIdPath, apply_events, read_capped
from frontdesk.ingestion.channels.whatsapp.inbound import parse_events

CHANNEL = "whatsapp"
PATH = "/webhooks/whatsapp/{account_id}"


def build_router(deps: ChannelDeps) -> APIRouter:
    router = APIRouter(tags=["whatsapp"])

    @router.get(
        PATH,
        response_class=PlainTextResponse,
        responses={403: {"description": "wrong verify token"}, 404: {}, 422: {"description": "not a handshake"}},
    )
    async def verify(account_id: AccountIdPath, request: Request) -> PlainTextResponse:
        account = await deps.accounts.get(account_id, (CHANNEL,))
        return answer_verification(request, account)

    @router.post(
        PATH,
        responses={401: {"description": "missing or wrong signature"}, 404: {}, 413: {}, 422: {}},
    )
    async def webhook(account_id: AccountIdPath, request: Request) -> JSONResponse:
        account = await deps.accounts.get(account_id, (CHANNEL,))
        raw = await read_capped(request)
        check_meta_signature(request, account, raw)
        counts = await apply_events(deps, CHANNEL, parse_events(raw, account.id, account.config))
        return JSONResponse({"ok": True, **counts})

    return router
