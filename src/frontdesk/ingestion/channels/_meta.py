"""What Messenger, Instagram and WhatsApp share: Meta's webhook handshake and signature.

- Verification: ``GET ?hub.mode=subscribe&hub.verify_token=<ours>&hub.challenge=<n>`` is answered
  with the raw challenge when the token matches this account's ``verify_token`` (403 otherwise).
- Every POST carries ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app secret, raw body)>``,
  checked against the exact bytes before anything is parsed.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import PlainTextResponse

from frontdesk.errors import ForbiddenError, PayloadError
from frontdesk.ingestion.accounts import AccountView, same_secret
from frontdesk.ingestion.channels._webhook import check_hex_signature

SIGNATURE_HEADER = "x-hub-signature-256"
GRAPH_API = "https://graph.facebook.com"
GRAPH_VERSION = "v25.0"


def answer_verification(request: Request, account: AccountView) -> PlainTextResponse:
    params = request.query_params
    if params.get("hub.mode") != "subscribe":
        raise PayloadError("expected hub.mode=subscribe")
    if not same_secret(params.get("hub.verify_token"), account.credentials.get("verify_token")):
        raise ForbiddenError("verify token does not match")
    challenge = params.get("hub.challenge", "")
    if not challenge or len(challenge) > 200:
        raise PayloadError("missing or oversized hub.challenge")
    return PlainTextResponse(challenge)


def check_meta_signature(request: Request, account: AccountView, raw: bytes) -> None:
    check_hex_signature(request.headers.get(SIGNATURE_HEADER), account.credentials.get("app_secret"), raw)


def graph_base(account: AccountView) -> str:
    """``https://graph.facebook.com/v25.0``, or the account's ``api_base_url`` (tests, proxies)."""
    base = str(account.config.get("api_base_url") or GRAPH_API).rstrip("/")
    return f"{base}/{account.config.get('graph_api_version') or GRAPH_VERSION}"
