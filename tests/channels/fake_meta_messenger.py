"""A Graph API double for Messenger and Instagram: the Send API (``POST /v25.0/<id>/messages``,
messages and sender actions) and CDN downloads of the GET paths registered in ``media``.

Like Graph, it wants the Page token as ``Authorization: Bearer``; anything else is answered with
Graph's error shape (HTTP 200 here: the base double cannot choose a status, ``fail_when`` can).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

from loopback import Call, FakePlatform

PAGE_TOKEN = "EAAGm0PX4ZCpsBAJ7fake-page-access-token-for-tests"
APP_SECRET = "5d41402abc4b2a76b9719d911017c592"
VERIFY_TOKEN = "frontdesk-verify-7c1e2b"
GRAPH_VERSION = "v25.0"


def sign(raw: bytes, secret: str = APP_SECRET) -> str:
    """``X-Hub-Signature-256`` as Meta computes it: over the exact bytes sent."""
    return "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


def graph_error(code: int, message: str, subcode: int | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"message": message, "type": "OAuthException", "code": code, "fbtrace_id": "AbC1dEf2GhI"}
    if subcode is not None:
        error["error_subcode"] = subcode
    return {"error": error}


@dataclass
class FakeMetaMessenger(FakePlatform):
    next_message_id: int = 0

    def respond(self, call: Call) -> Any:
        if call.headers.get("authorization") != f"Bearer {PAGE_TOKEN}":
            return graph_error(190, "Invalid OAuth access token - Cannot parse access token")
        segments = call.path.strip("/").split("/")
        if call.method != "POST" or len(segments) != 3 or segments[0] != GRAPH_VERSION or segments[2] != "messages":
            return graph_error(100, f"Unsupported {call.method} request")
        body = call.body if isinstance(call.body, dict) else {}
        recipient_id = (body.get("recipient") or {}).get("id")
        if "sender_action" in body:
            return {"recipient_id": recipient_id}
        self.next_message_id += 1
        return {"recipient_id": recipient_id, "message_id": f"m_{self.next_message_id}"}
