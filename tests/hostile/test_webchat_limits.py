"""The public web chat under a flood: nobody runs up a business's model bill by posting in a loop,
and nobody reads a transcript by guessing a short session id."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import httpx2
from console_kit import ShiftedClock
from sqlalchemy import func, select

from frontdesk.app import create_app
from frontdesk.demo import seed_demo
from frontdesk.platform.models.gateway import ModelGateway
from frontdesk.platform.store.schema import Message
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from harness import FAST, reply, script_client

ECHO = {"name": "echo", "default": [reply("echo: {user_text}")]}


class StillClock(ShiftedClock):
    """The limits' clock stands still unless the test moves it: a flood posted over more than a
    second on a loaded machine must not get a token back (the limit is 60 a minute)."""

    def __init__(self) -> None:
        super().__init__()
        self._start = time.monotonic()

    def monotonic(self) -> float:
        return self._start + self.offset.total_seconds()


@asynccontextmanager
async def webchat(db, **settings: Any) -> AsyncIterator[tuple[str, ShiftedClock, Any]]:
    clock = StillClock()
    runtime = Runtime.build(
        Settings(**{**FAST, "quiet_window_s": 0, **settings}),
        gateway=ModelGateway.with_clients({"chat": script_client(ECHO)}),
        db=db,
        clock=clock,
    )
    accounts = await seed_demo(db, clock, runtime.channel_deps.media)
    app = create_app(runtime, run_workers=False)

    def browser(address: str) -> httpx2.AsyncClient:
        transport = httpx2.ASGITransport(app=app, raise_app_exceptions=False, client=(address, 52000))
        return httpx2.AsyncClient(transport=transport, base_url="http://test")

    yield accounts.webchat_id, clock, browser


def session_id() -> str:
    return secrets.token_urlsafe(16)


async def stored_messages(db) -> int:
    async with db.read() as session:
        return int(await session.scalar(select(func.count()).select_from(Message)) or 0)


async def send(http: httpx2.AsyncClient, account: str, session: str, n: int) -> httpx2.Response:
    return await http.post(
        f"/v1/webchat/{account}/messages", json={"session": session, "id": f"m{n}", "text": f"hi {n}"}
    )


async def test_a_flood_from_one_address_is_refused_past_its_limit_and_nothing_of_it_is_stored(db):
    async with webchat(db, webchat_messages_per_minute_ip=60) as (account, _, browser):
        sessions = [session_id() for _ in range(8)]
        async with browser("203.0.113.9") as flood:
            answers = await asyncio.gather(*(send(flood, account, s, n) for s in sessions for n in range(10)))
        async with browser("198.51.100.20") as customer:
            other_customer = await send(customer, account, session_id(), 1)

    refused = [a for a in answers if a.status_code == 429]
    assert len([a for a in answers if a.status_code == 202]) == 60
    assert len(refused) == 20
    assert all(int(a.headers["retry-after"]) >= 1 for a in refused)
    assert refused[0].json()["error"]["code"] == "rate_limited"
    assert other_customer.status_code == 202
    assert await stored_messages(db) == 61


async def test_one_session_is_held_past_its_burst_and_let_in_again_as_its_bucket_refills(db):
    async with webchat(db, webchat_messages_per_minute_session=12) as (account, clock, browser):
        session = session_id()
        async with browser("203.0.113.9") as http:
            burst = [(await send(http, account, session, n)).status_code for n in range(13)]
            held = await send(http, account, session, 13)
            clock.offset += timedelta(seconds=int(held.headers["retry-after"]))
            later = await send(http, account, session, 14)

    assert burst == [202] * 12 + [429]
    assert held.status_code == 429
    assert held.headers["retry-after"] == "5"  # a token every 60/12 s
    assert later.status_code == 202


async def test_many_addresses_on_one_account_are_held_by_the_account_limit(db):
    async with webchat(db, webchat_messages_per_minute_account=20) as (account, _, browser):
        statuses = []
        for n in range(25):
            async with browser(f"198.51.100.{n + 1}") as http:
                statuses.append((await send(http, account, session_id(), n)).status_code)

    assert statuses == [202] * 20 + [429] * 5


async def test_a_short_session_id_is_refused_for_posting_and_for_reading(db):
    async with webchat(db) as (account, _, browser), browser("203.0.113.9") as http:
        post = await send(http, account, "s7", 1)
        read = await http.get(f"/v1/webchat/{account}/messages", params={"session": "s7"})
        stream = await http.get(f"/v1/webchat/{account}/stream", params={"session": "s7"})
        fine = await send(http, account, "a" * 6 + "-Generated_Id9", 1)  # 20 characters

    assert post.status_code == 422
    assert "16 to 128 characters" in post.json()["error"]["message"]
    assert read.status_code == 422
    assert stream.status_code == 422
    assert fine.status_code == 202
    assert await stored_messages(db) == 1
