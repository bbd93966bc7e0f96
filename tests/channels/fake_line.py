"""A LINE Messaging API double: reply, push, the loading animation, and message content.

It keeps LINE's rules that our renderer depends on, so tests see what a customer would:

- every call needs ``Authorization: Bearer <TOKEN>`` (else 401);
- a reply token works once, and not at all if it is in ``refused_tokens`` (400 "Invalid reply token");
- a push whose ``X-Line-Retry-Key`` was accepted before is refused with 409 and shown no second time;
- ``delivered`` lists what reached the customer, one entry per accepted call;
- ``GET /v2/bot/message/{id}/content`` serves ``media[id]``; ``.../content/transcoding`` answers
  the next status from ``transcoding[id]`` (then ``succeeded``).

``fail_when`` works as on every double; its failures come before these rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from loopback import Call, FakePlatform

TOKEN = "line-channel-access-token/Fake+Token=="
CONTENT = re.compile(r"^/v2/bot/message/([^/]+)/content$")
TRANSCODING = re.compile(r"^/v2/bot/message/([^/]+)/content/transcoding$")


@dataclass
class FakeLine(FakePlatform):
    refused_tokens: set[str] = field(default_factory=set)
    used_tokens: set[str] = field(default_factory=set)
    accepted_retry_keys: set[str] = field(default_factory=set)
    transcoding: dict[str, list[str]] = field(default_factory=dict)
    delivered: list[dict[str, Any]] = field(default_factory=list)
    next_message_id: int = 600000000000000000

    def refuse(self, call: Call) -> tuple[int, Any] | None:
        """LINE's own refusals, checked after the test's ``fail_when``."""
        if call.headers.get("authorization") != f"Bearer {TOKEN}":
            return 401, {"message": "Authentication failed. Confirm that the access token is valid."}
        body = call.body if isinstance(call.body, dict) else {}
        if call.path == "/v2/bot/message/reply":
            token = body.get("replyToken")
            if token in self.refused_tokens or token in self.used_tokens:
                return 400, {"message": "Invalid reply token"}
        if call.path == "/v2/bot/message/push" and call.headers.get("x-line-retry-key") in self.accepted_retry_keys:
            return 409, {"message": "The retry key is already accepted", "sentMessages": []}
        if call.method == "GET" and CONTENT.match(call.path):
            return 404, {"message": "Not found"}  # served from ``media`` before we get here
        return None

    def media_path(self, path: str) -> str | None:
        match = CONTENT.match(path)
        return match.group(1) if match else path

    def respond(self, call: Call) -> Any:
        body = call.body if isinstance(call.body, dict) else {}
        if call.path == "/v2/bot/message/reply":
            self.used_tokens.add(body["replyToken"])
            return self._deliver("reply", body)
        if call.path == "/v2/bot/message/push":
            self.accepted_retry_keys.add(call.headers.get("x-line-retry-key", ""))
            return self._deliver("push", body)
        if match := TRANSCODING.match(call.path):
            pending = self.transcoding.get(match.group(1)) or ["succeeded"]
            return {"status": pending.pop(0) if len(pending) > 1 else pending[0]}
        return {}  # /v2/bot/chat/loading/start answers 202 with an empty object

    def _deliver(self, how: str, body: dict[str, Any]) -> dict[str, Any]:
        self.delivered.append({"how": how, **body})
        sent = []
        for _ in body.get("messages", []):
            self.next_message_id += 1
            sent.append({"id": str(self.next_message_id), "quoteToken": f"q{self.next_message_id}"})
        return {"sentMessages": sent}
