"""Real HTTP on loopback for channel tests: our app on one port, a platform double on another.

``FakePlatform`` is the shared base of the per-platform doubles (``fake_<name>.py``): a tiny
Starlette app that records every call it receives (method, path, headers, JSON body), answers
with what the subclass's ``respond`` returns, serves media bytes, and can be told to fail calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers (pytest owns the process's signals)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serve(app: Any, **options: Any) -> AsyncIterator[str]:
    """Run ``app`` on 127.0.0.1 (a free port) in this event loop; yields its base URL.
    ``options``: more ``uvicorn.Config`` settings (the reliability bench sets the keep-alive)."""
    settings: dict[str, Any] = {"log_level": "warning", "lifespan": "on", **options}
    server = _QuietServer(uvicorn.Config(app, host="127.0.0.1", port=0, **settings))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # raises the start-up error
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


@dataclass
class Call:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # decoded JSON, else the raw text
    query: str = ""

    @property
    def endpoint(self) -> str:
        """The path's last segment (a Bot API method, ``messages``, ``reply``...)."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]


@dataclass
class FakePlatform(ABC):
    """Records calls; ``fail_when(call)`` returning a (status, body) makes that call fail."""

    calls: list[Call] = field(default_factory=list)
    media: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    fail_when: Callable[[Call], tuple[int, Any] | None] | None = None
    base_url: str = ""

    @abstractmethod
    def respond(self, call: Call) -> Any:
        """The JSON a successful call returns (platform-specific)."""

    def refuse(self, call: Call) -> tuple[int, Any] | None:
        """The platform's own refusals (a bad token, a used reply token), as (status, body)."""
        return None

    def media_path(self, path: str) -> str | None:
        """The key in ``media`` a GET path serves, if it is a media download (platform-specific)."""
        return path

    def app(self) -> Starlette:
        async def handle(request: Request) -> Response:
            raw = await request.body()
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            call = Call(request.method, request.url.path, dict(request.headers), body, request.url.query)
            if request.method == "GET":
                key = self.media_path(call.path)
                if key is not None and key in self.media:
                    self.calls.append(call)
                    data, mime = self.media[key]
                    return Response(data, media_type=mime)
            self.calls.append(call)
            failure = self.fail_when(call) if self.fail_when is not None else None
            failure = failure or self.refuse(call)
            if failure is not None:
                return JSONResponse(failure[1], status_code=failure[0])
            return JSONResponse(self.respond(call))

        return Starlette(routes=[Route("/{path:path}", handle, methods=["GET", "POST", "DELETE", "PUT"])])

    def endpoints(self) -> list[str]:
        return [c.endpoint for c in self.calls]

    def sent(self, *excluding: str) -> list[Call]:
        """Calls other than the ``excluding`` endpoints (typing indicators, downloads...)."""
        return [c for c in self.calls if c.endpoint not in excluding]

    async def wait_for(self, predicate: Callable[[list[Call]], bool], timeout_s: float = 10.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not predicate(self.calls):
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"platform never saw the expected calls; it saw {self.endpoints()}")
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def running(platform: FakePlatform) -> AsyncIterator[FakePlatform]:
    async with serve(platform.app()) as base_url:
        platform.base_url = base_url
        yield platform


@contextlib.asynccontextmanager
async def client(base_url: str) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(base_url=base_url, timeout=10) as http:
        yield http
