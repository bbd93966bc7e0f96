"""Live views across instances: on PostgreSQL a publish NOTIFYs, and every other instance's
LISTEN connection wakes its streams at once instead of at the next poll (1 s). The listener
survives its connection being killed. On SQLite signals stay in-process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx2
import pytest
import uvicorn
from instances_kit import POSTGRES_URL, needs_postgres
from sqlalchemy.engine import make_url

from frontdesk.app import create_app
from frontdesk.platform.pg_notify import BridgeTiming
from frontdesk.platform.signals import CONVERSATION_CHANNEL, ConversationSignals
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.migrate import upgrade
from harness import make_runtime, reply, wait_idle

POLL_S = 1.0  # how often live views poll (STREAM_POLL_S of the web chat and the console)
WAKE_BOUND_S = 0.25  # a NOTIFY wake must beat the poll by far


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A fresh, migrated database: NOTIFY channels are per database, so no other test hears ours."""
    assert POSTGRES_URL, "FRONTDESK_TEST_POSTGRES_URL is required"
    name = f"frontdesk_notify_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(_dsn(POSTGRES_URL))
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
        db = Database.from_url(url, pool_size=2)
        await upgrade(db)
        await db.dispose()
        yield url
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@contextlib.asynccontextmanager
async def started(url: str, *signals: ConversationSignals) -> AsyncIterator[Database]:
    db = Database.from_url(url, pool_size=2)
    try:
        for s in signals:
            await s.start(db)
        yield db
    finally:
        for s in signals:
            await s.close()
        await db.dispose()


@needs_postgres
async def test_a_publish_on_one_instance_wakes_that_conversation_on_another_at_once(pg_url: str) -> None:
    a, b = ConversationSignals(), ConversationSignals()
    async with started(pg_url, a, b):
        assert a.bridge is not None
        assert b.bridge is not None
        assert a.bridge.listening
        assert b.bridge.listening
        latencies = []
        for _ in range(5):
            published, other = b.ticket("conv-1"), b.ticket("conv-2")
            t = time.monotonic()
            a.publish("conv-1")
            assert await b.wait(published, 2 * POLL_S), "the other instance was not woken"
            latencies.append(time.monotonic() - t)
            assert not other.is_set()  # only the published conversation wakes
        print(f"cross-instance wake latency (signals): max {max(latencies) * 1000:.1f} ms over {len(latencies)}")
        assert max(latencies) < WAKE_BOUND_S, latencies
        # The publisher's own NOTIFY comes back to it too; it is not a second wake-up.
        mine = a.ticket("conv-1")
        a.publish("conv-1")
        assert mine.is_set()
        again = a.ticket("conv-1")
        assert not await a.wait(again, 0.3)


@needs_postgres
async def test_the_listener_reconnects_after_its_connection_is_killed_and_wakes_everyone_once(pg_url: str) -> None:
    fast = BridgeTiming(backoff_initial_s=0.1, keepalive_s=0.5, keepalive_timeout_s=1.0)
    a, b = ConversationSignals(), ConversationSignals(timing=fast)
    async with started(pg_url, a, b):
        assert b.bridge is not None
        waiting = b.ticket("conv-1")
        admin = await asyncpg.connect(_dsn(POSTGRES_URL or ""))
        try:
            assert await admin.fetchval("SELECT pg_terminate_backend($1)", b.bridge.server_pid)
        finally:
            await admin.close()
        # Publishes made while nobody listened are lost: the reconnect wakes every waiting view.
        assert await b.wait(waiting, 5), "no wake-up after the reconnect"
        assert b.bridge.listening
        assert b.bridge.connections == 2

        ticket = b.ticket("conv-1")
        a.publish("conv-1")
        assert await b.wait(ticket, WAKE_BOUND_S * 4), "no wake-up through the new connection"


async def test_on_sqlite_signals_stay_in_process(tmp_path: Path) -> None:
    signals = ConversationSignals()
    async with started(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}", signals):
        assert signals.bridge is None
        ticket = signals.ticket("conv-1")
        signals.publish("conv-1")
        assert ticket.is_set()


# -- end to end: a reply written by instance A reaches a web chat stream held by instance B


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # pytest owns the process's signals
        yield


@contextlib.asynccontextmanager
async def serve(app: Any) -> AsyncIterator[str]:
    server = _QuietServer(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


@needs_postgres
async def test_a_reply_written_by_one_instance_reaches_a_stream_held_by_another_without_waiting_for_the_poll(
    pg_url: str,
) -> None:
    script = {"name": "echo", "default": [reply("got: {user_text}")]}
    db_a, db_b = Database.from_url(pg_url, pool_size=4), Database.from_url(pg_url, pool_size=4)
    runtime_a, accounts = await make_runtime(db_a, script)  # the instance that runs turns
    runtime_b, _ = await make_runtime(db_b, script, workers=0)  # the instance holding the stream
    notified: list[tuple[str, float]] = []
    observer = await asyncpg.connect(_dsn(pg_url))
    await observer.add_listener(CONVERSATION_CHANNEL, lambda *args: notified.append((args[3], time.monotonic())))
    await runtime_a.start()
    runtime_a.runner.start()
    account, session = accounts.webchat_id, "watched-session-0001"
    try:
        async with (
            serve(create_app(runtime_b, run_workers=False)) as base,
            httpx2.AsyncClient(base_url=base, trust_env=False, timeout=httpx2.Timeout(10, read=10)) as http,
        ):
            message = {"session": session, "id": "m0", "text": "hello"}
            assert (await http.post(f"/v1/webchat/{account}/messages", json=message)).status_code == 202
            await wait_idle(db_a)

            blocks: asyncio.Queue[float] = asyncio.Queue()

            async def stream() -> None:
                async with http.stream("GET", f"/v1/webchat/{account}/stream", params={"session": session}) as response:
                    async for line in response.aiter_lines():
                        if line.startswith("data:") and json.loads(line[5:])["role"] == "assistant":
                            blocks.put_nowait(time.monotonic())

            reader = asyncio.create_task(stream())
            await asyncio.sleep(0.3)  # the stream is open and waiting
            latencies = []
            for k in range(1, 4):
                message = {"session": session, "id": f"m{k}", "text": f"message {k}"}
                assert (await http.post(f"/v1/webchat/{account}/messages", json=message)).status_code == 202
                arrived = await asyncio.wait_for(blocks.get(), 10)
                (notify_at,) = [at for _payload, at in notified[-1:]]
                latencies.append(arrived - notify_at)
                await wait_idle(db_a)
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
    finally:
        await observer.close()
        await runtime_a.runner.stop()
        await runtime_a.signals.close()
        await runtime_b.signals.close()
        await db_a.dispose()
        await db_b.dispose()
    print(f"NOTIFY -> SSE block on the other instance: {', '.join(f'{x * 1000:.0f} ms' for x in latencies)}")
    assert max(latencies) < WAKE_BOUND_S, latencies  # the poll alone would average POLL_S / 2


def test_the_listen_connection_takes_tls_from_the_url_and_drops_what_only_sqlalchemy_understands():
    from sqlalchemy.engine import make_url

    from frontdesk.platform.signals import listen_connect_args

    url = make_url("postgresql+asyncpg://app:s3cret@db.internal:6432/shop?ssl=require&prepared_statement_cache_size=0")

    assert listen_connect_args(url) == {
        "host": "db.internal",
        "port": 6432,
        "database": "shop",
        "user": "app",
        "password": "s3cret",
        "ssl": "require",
    }
