"""A Telegram Bot API double: ``/bot<token>/<method>`` and ``/file/bot<token>/<path>``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopback import Call, FakePlatform

TOKEN = "123456789:AAH-fake-token_for-tests"


@dataclass
class FakeTelegram(FakePlatform):
    next_message_id: int = 1000

    def media_path(self, path: str) -> str | None:
        prefix = f"/file/bot{TOKEN}/"
        return path[len(prefix) :] if path.startswith(prefix) else None

    def respond(self, call: Call) -> Any:
        if not call.path.startswith(f"/bot{TOKEN}/"):
            return {"ok": False, "error_code": 401, "description": "Unauthorized"}
        method = call.endpoint
        body = call.body if isinstance(call.body, dict) else {}
        if method == "getFile":
            file_id = body.get("file_id", "")
            return {"ok": True, "result": {"file_id": file_id, "file_path": f"files/{file_id}"}}
        if method == "sendChatAction":
            return {"ok": True, "result": True}
        if method == "sendMediaGroup":
            return {"ok": True, "result": [self._message() for _ in body.get("media", [])]}
        return {"ok": True, "result": self._message()}

    def _message(self) -> dict[str, Any]:
        self.next_message_id += 1
        return {"message_id": self.next_message_id, "date": 1767000000, "chat": {"id": 0, "type": "private"}}
