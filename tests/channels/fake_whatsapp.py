"""A WhatsApp Cloud API double: ``POST /<version>/<phone_number_id>/messages``, ``GET /<version>/<media_id>``
and the media download (``/whatsapp_business/attachments/<media_id>``, like Meta's lookaside host).

It records every call with its headers and does not itself refuse a wrong token: the tests assert
the ``Authorization`` header of the calls instead.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from loopback import Call, FakePlatform

PHONE_NUMBER_ID = "106540352242922"
ACCESS_TOKEN = "EAAJB-fake-system-user-token-4f9c2e7a1b"
DOWNLOAD_PREFIX = "/whatsapp_business/attachments/"


@dataclass
class FakeWhatsApp(FakePlatform):
    next_message: int = 0
    # What the media lookup says an id is, when a test wants it to differ from what the download serves.
    reported_mime: dict[str, str] = field(default_factory=dict)
    # Where the lookup says to download from (default: this double); a test points it elsewhere.
    download_base: str | None = None

    def media_path(self, path: str) -> str | None:
        return path[len(DOWNLOAD_PREFIX) :] if path.startswith(DOWNLOAD_PREFIX) else None

    def respond(self, call: Call) -> Any:
        body = call.body if isinstance(call.body, dict) else {}
        if call.method == "GET":
            return self._media_info(call.endpoint)
        if body.get("status") == "read":
            return {"success": True}
        to = body.get("to") or body.get("recipient")
        self.next_message += 1
        return {
            "messaging_product": "whatsapp",
            "contacts": [{"input": to, "wa_id": to}],
            "messages": [{"id": wamid(self.next_message)}],
        }

    def _media_info(self, media_id: str) -> dict[str, Any]:
        data, served = self.media.get(media_id, (b"", "application/octet-stream"))
        return {
            "messaging_product": "whatsapp",
            "url": f"{self.download_base or self.base_url}{DOWNLOAD_PREFIX}{media_id}",
            "mime_type": self.reported_mime.get(media_id, served),
            "sha256": hashlib.sha256(data).hexdigest(),
            "file_size": len(data),
            "id": media_id,
        }

    def messages(self) -> list[Call]:
        """The messages sent to customers (not read receipts, lookups or downloads)."""
        return [c for c in self.calls if c.method == "POST" and (c.body or {}).get("status") != "read"]


def wamid(n: int) -> str:
    """The id the double gives its ``n``-th message (1-based)."""
    return f"wamid.FAKE{n:06d}"
