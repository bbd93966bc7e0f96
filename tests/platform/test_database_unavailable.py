"""A database that cannot be reached answers 503 with Retry-After, never a 500: a platform
redelivers a webhook it got a 5xx for, and a 500 would say "our bug" where the truth is "try
again shortly". Once the database is back, the redelivered message is stored exactly once."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx2
from sqlalchemy import select

from frontdesk.app import UNAVAILABLE_RETRY_AFTER_S, create_app
from frontdesk.demo import seed_demo
from frontdesk.platform.store.migrate import upgrade
from frontdesk.platform.store.schema import Message
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from harness import FAST

MESSAGE = {"session": "session-alpha-0001", "id": "m-1", "text": "How much are business cards?"}


def runtime_on(database_url: str, tmp_path: Path) -> Runtime:
    settings = Settings(**FAST, database_url=database_url, media_dir=tmp_path / "media")
    return Runtime.build(settings)


async def post(runtime: Runtime, path: str, json: object) -> httpx2.Response:
    # No lifespan: the app's start-up would itself stop at the missing database.
    transport = httpx2.ASGITransport(app=create_app(runtime))
    async with httpx2.AsyncClient(transport=transport, base_url="http://frontdesk.test") as http:
        return await http.post(path, json=json)


def assert_unavailable(response: httpx2.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == str(UNAVAILABLE_RETRY_AFTER_S)
    assert response.json()["error"]["code"] == "unavailable"


async def test_a_refused_postgresql_connection_is_a_503_with_retry_after(tmp_path, caplog):
    runtime = runtime_on("postgresql+asyncpg://postgres@127.0.0.1:1/frontdesk", tmp_path)  # nothing listens on 1
    try:
        with caplog.at_level(logging.WARNING, logger="frontdesk.app"):
            response = await post(runtime, "/v1/webchat/demo-webchat/messages", MESSAGE)
    finally:
        await runtime.close()

    assert_unavailable(response)
    assert "database unavailable (ConnectionRefusedError" in caplog.text
    assert MESSAGE["text"] not in caplog.text  # the log line names the failure, not the request


async def test_a_message_refused_while_the_database_was_away_is_stored_once_it_is_back(tmp_path):
    folder = tmp_path / "later"  # the database's folder does not exist yet: SQLite cannot open it
    runtime = runtime_on(f"sqlite+aiosqlite:///{folder / 'frontdesk.db'}", tmp_path)
    try:
        first = await post(runtime, "/v1/webchat/demo-webchat/messages", MESSAGE)
        folder.mkdir()
        await upgrade(runtime.db)
        await seed_demo(runtime.db, runtime.clock)
        redelivered = await post(runtime, "/v1/webchat/demo-webchat/messages", MESSAGE)
        again = await post(runtime, "/v1/webchat/demo-webchat/messages", MESSAGE)
        async with runtime.db.transaction() as session:
            stored = list(await session.scalars(select(Message).where(Message.role == "user")))
    finally:
        await runtime.close()

    assert_unavailable(first)
    assert (redelivered.status_code, again.status_code) == (202, 200)
    assert [(m.channel_message_id, m.content) for m in stored] == [("session-alpha-0001:m-1", MESSAGE["text"])]
