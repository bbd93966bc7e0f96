"""The platforms' outbound APIs, faked on loopback: the doubles of ``tests/channels``
(``fake_<name>.py``, real HTTP through Starlette + uvicorn) run in a thread of their own, with an
event loop of their own, so the bench's webhook storm never delays a platform's answer.

``visible(fleet)`` is what the customers were shown: every text message a platform accepted, as
``(platform, customer, text)``, in arrival order; typing indicators, read receipts and calls the
platform refused are left out (``refused`` counts those).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "channels"))

import loopback
from fake_line import TOKEN as LINE_TOKEN
from fake_line import FakeLine
from fake_meta_messenger import PAGE_TOKEN as META_PAGE_TOKEN
from fake_meta_messenger import FakeMetaMessenger
from fake_telegram import TOKEN as TELEGRAM_TOKEN
from fake_telegram import FakeTelegram
from fake_whatsapp import ACCESS_TOKEN as WHATSAPP_TOKEN
from fake_whatsapp import PHONE_NUMBER_ID, FakeWhatsApp
from loopback import FakePlatform

__all__ = [
    "LINE_TOKEN",
    "META_PAGE_TOKEN",
    "PHONE_NUMBER_ID",
    "TELEGRAM_TOKEN",
    "WHATSAPP_TOKEN",
    "Fleet",
    "Shown",
    "refused",
    "visible",
]

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def _slowed(app: ASGIApp, delay_s: float) -> ASGIApp:
    """Every POST answered ``delay_s`` later: a platform API on the far side of the internet. The
    request is read in full first, so a call whose sender dies while waiting for the answer still
    goes out, as it would at a real platform (the sender cannot know whether it did)."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if not (delay_s and scope.get("type") == "http" and scope.get("method") == "POST"):
            await app(scope, receive, send)
            return
        received: list[dict[str, Any]] = []
        while True:
            event = await receive()
            received.append(event)
            if event.get("type") != "http.request" or not event.get("more_body"):
                break
        await asyncio.sleep(delay_s)

        async def replay() -> dict[str, Any]:
            return received.pop(0) if received else await receive()

        await app(scope, replay, send)

    return wrapped


@contextlib.asynccontextmanager
async def serve(app: ASGIApp, keepalive_s: int) -> AsyncIterator[str]:
    """``app`` on 127.0.0.1 (a free port) in this event loop; yields its base URL."""
    async with loopback.serve(app, lifespan="off", timeout_keep_alive=keepalive_s) as base_url:
        yield base_url


class Fleet:
    """The four platform doubles on loopback ports, served from a background thread.

    ``keepalive_s``: how long a platform keeps an idle connection open (uvicorn's default is 5 s)."""

    def __init__(self, send_delay_s: float = 0.0, keepalive_s: int = 5) -> None:
        self.platforms: dict[str, FakePlatform] = {
            "telegram": FakeTelegram(),
            "messenger": FakeMetaMessenger(),
            "whatsapp": FakeWhatsApp(),
            "line": FakeLine(),
        }
        self._delay_s = send_delay_s
        self._keepalive_s = keepalive_s
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="platform-fakes", daemon=True)

    @property
    def bases(self) -> dict[str, str]:
        return {name: platform.base_url for name, platform in self.platforms.items()}

    def __enter__(self) -> Fleet:
        self._thread.start()
        if not self._ready.wait(30) or self._error is not None:
            self.__exit__(None, None, None)
            raise SystemExit(f"the platform fakes did not start: {self._error!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with contextlib.AsyncExitStack() as stack:
            for platform in self.platforms.values():
                app = _slowed(platform.app(), self._delay_s)
                platform.base_url = await stack.enter_async_context(serve(app, self._keepalive_s))
            self._ready.set()
            await self._stop.wait()


@dataclass(frozen=True)
class Shown:
    """One message a customer was shown."""

    platform: str
    customer: str
    text: str


def visible(fleet: Fleet, line_reply_tokens: dict[str, str]) -> list[Shown]:
    """Every text message the platforms accepted, per customer. LINE replies name no customer,
    only the reply token: ``line_reply_tokens`` maps each token the bench sent to its customer."""
    shown: list[Shown] = []
    for call in list(fleet.platforms["telegram"].calls):
        body = call.body if isinstance(call.body, dict) else {}
        if call.method == "POST" and call.endpoint == "sendMessage":
            shown.append(Shown("telegram", str(body.get("chat_id")), str(body.get("text", ""))))
    for call in list(fleet.platforms["messenger"].calls):
        body = call.body if isinstance(call.body, dict) else {}
        message = body.get("message")
        if call.method == "POST" and isinstance(message, dict) and "text" in message:
            shown.append(Shown("messenger", str((body.get("recipient") or {}).get("id")), str(message["text"])))
    for call in list(fleet.platforms["whatsapp"].calls):
        body = call.body if isinstance(call.body, dict) else {}
        if call.method == "POST" and body.get("type") == "text":
            shown.append(Shown("whatsapp", str(body.get("to")), str((body.get("text") or {}).get("body", ""))))
    line = fleet.platforms["line"]
    assert isinstance(line, FakeLine)
    for delivered in list(line.delivered):
        if delivered["how"] == "reply":
            customer = line_reply_tokens.get(delivered.get("replyToken", ""), "?reply-token")
        else:
            customer = str(delivered.get("to"))
        for message in delivered.get("messages", []):
            if message.get("type") == "text":
                shown.append(Shown("line", customer, str(message.get("text", ""))))
    return shown


def refused(fleet: Fleet) -> dict[str, int]:
    """Calls a platform refused (LINE: a used reply token, a push whose retry key it already took)."""
    line = fleet.platforms["line"]
    assert isinstance(line, FakeLine)
    sends = [c for c in list(line.calls) if c.path in ("/v2/bot/message/reply", "/v2/bot/message/push")]
    return {"line": len(sends) - len(line.delivered)} if len(sends) != len(line.delivered) else {}
