"""Messenger and Instagram webhooks: ``GET|POST /webhooks/{messenger|instagram}/{account_id}``.

One router serves both products (the registry gives it to "messenger" only). ``GET`` is Meta's
subscription handshake (``hub.verify_token`` against the account's ``verify_token``). ``POST``
bodies are signed, ``X-Hub-Signature-256`` = HMAC-SHA256 of the raw bytes with the account's
``app_secret``; the signature is checked before a byte is parsed. The account, and so the tenant,
comes from the URL and that secret, never from the body (whose page id only filters).
``message.mid`` is the idempotency key: a redelivered body stores nothing and sends nothing.
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
from frontdesk.ingestion.channels.messenger.inbound import CHANNELS, parse_events
from frontdesk.ingestion.channels.messenger.payloads import Envelope


def build_router(deps: ChannelDeps) -> APIRouter:
    router = APIRouter(tags=["messenger"])
    for channel in CHANNELS:
        _add_routes(router, deps, channel)
    return router


def _add_routes(router: APIRouter, deps: ChannelDeps, channel: str) -> None:
    # A function per channel so each route closes over its own ``channel``, not the loop variable.
    path = f"/webhooks/{channel}/{{account_id}}"
    body = json_schema(Envelope)
    body["properties"]["object"] = {"const": CHANNELS[channel][0]}  # "page" or "instagram": one per route

    @router.get(path, name=f"{channel}_verify", response_class=PlainTextResponse, responses=HANDSHAKE_RESPONSES)
    async def verify(
        account_id: AccountIdPath, mode: HubMode, challenge: HubChallenge, verify_token: HubVerifyToken = None
    ) -> PlainTextResponse:
        account = await deps.accounts.get(account_id, (channel,))
        return answer_verification(account, verify_token, challenge)

    @router.post(
        path,
        name=f"{channel}_webhook",
        **webhook_docs(Envelope, unauthorized="missing or wrong signature", schema=body),
    )
    async def webhook(account_id: AccountIdPath, request: Request, signature: HubSignature = None) -> JSONResponse:
        account = await deps.accounts.get(account_id, (channel,))
        raw = await read_capped(request)
        check_meta_signature(signature, account, raw)
        events = parse_events(raw, account.id, account.config, channel=channel)
        counts = await apply_events(deps, channel, events)
        return JSONResponse({"ok": True, **counts})
