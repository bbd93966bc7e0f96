"""What Messenger, Instagram and WhatsApp share: Meta's webhook handshake and signature.

- Verification: ``GET ?hub.mode=subscribe&hub.verify_token=<ours>&hub.challenge=<n>`` is answered
  with the raw challenge when the token matches this account's ``verify_token`` (403 otherwise).
- Every POST carries ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app secret, raw body)>``,
  checked against the exact bytes before anything is parsed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Header, Query
from fastapi.responses import PlainTextResponse

from frontdesk.errors import ForbiddenError
from frontdesk.http_errors import UNAVAILABLE, error_responses
from frontdesk.ingestion.accounts import AccountView, same_secret
from frontdesk.ingestion.channels._webhook import check_hex_signature

SIGNATURE_HEADER = "X-Hub-Signature-256"
GRAPH_API = "https://graph.facebook.com"
GRAPH_VERSION = "v25.0"

# The handshake's query, as Meta sends it; anything else is a 422 before the account is looked up.
HubMode = Annotated[Literal["subscribe"], Query(alias="hub.mode")]
HubChallenge = Annotated[
    str, Query(alias="hub.challenge", min_length=1, max_length=200, description="sent back when the token matches")
]
# Optional to FastAPI: a missing token is refused like a wrong one (403).
HubVerifyToken = Annotated[
    str | None, Query(alias="hub.verify_token", description="the verify token of the app's webhook settings")
]
HANDSHAKE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "the challenge, as text"},
    **error_responses(
        {
            403: "the verify token is missing or not this account's",
            404: "no account of this channel has this id",
            422: "not a subscription handshake (hub.mode, hub.challenge), or an account id the path refuses",
            **UNAVAILABLE,
        }
    ),
}
# Optional to FastAPI: a missing signature is a 401 from check_meta_signature, like a wrong one.
HubSignature = Annotated[
    str | None,
    Header(alias=SIGNATURE_HEADER, description="sha256=<hex HMAC-SHA256 of the raw body, app secret as key>"),
]


def answer_verification(account: AccountView, verify_token: str | None, challenge: str) -> PlainTextResponse:
    if not same_secret(verify_token, account.credentials.get("verify_token")):
        raise ForbiddenError("verify token does not match")
    return PlainTextResponse(challenge)


def check_meta_signature(signature: str | None, account: AccountView, raw: bytes) -> None:
    check_hex_signature(signature, account.credentials.get("app_secret"), raw)


def graph_base(account: AccountView) -> str:
    """``https://graph.facebook.com/v25.0``, or the account's ``api_base_url`` (tests, proxies)."""
    base = str(account.config.get("api_base_url") or GRAPH_API).rstrip("/")
    return f"{base}/{account.config.get('graph_api_version') or GRAPH_VERSION}"
