"""Real ``frontdesk serve`` processes on a fresh PostgreSQL database, for the multi-instance tests
(test_instances.py, test_shutdown.py). No tests here.

Each test gets its own database (CREATE DATABASE with a unique name, ``frontdesk db upgrade``, the
demo tenant seeded, DROP ... WITH (FORCE) afterwards), a script chat model that echoes the batch
after a delay, and N server processes on loopback ports, started in parallel. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx2
import pytest
from sqlalchemy import select
from sqlalchemy.engine import make_url

import harness
from frontdesk.demo import DEMO_WEBCHAT, seed_demo
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Contact, Conversation, Message, TurnTrace

POSTGRES_URL = os.environ.get("FRONTDESK_TEST_POSTGRES_URL")
# Skipped only when no PostgreSQL is configured; under CI (FRONTDESK_CI) a missing one fails instead.
needs_postgres = pytest.mark.skipif(
    not POSTGRES_URL and not os.environ.get("FRONTDESK_CI"), reason="FRONTDESK_TEST_POSTGRES_URL is not set"
)
LOOPBACK = "127.0.0.1"
REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 90.0  # three processes importing at once on a busy 2-core machine take a while


def _admin_dsn() -> str:
    assert POSTGRES_URL, "FRONTDESK_TEST_POSTGRES_URL is required for the multi-instance tests"
    return make_url(POSTGRES_URL).set(drivername="postgresql").render_as_string(hide_password=False)


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(_admin_dsn())
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def _cli(env: dict[str, str], *args: str, timeout_s: float = 60.0) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from frontdesk.cli import main; main()",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        stdin=asyncio.subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    assert proc.returncode == 0, f"frontdesk {' '.join(args)} failed: {out.decode(errors='replace')[-2000:]}"
    return out.decode(errors="replace")


def base_env(tmp: Path, database_url: str, **settings: object) -> dict[str, str]:
    """The process environment: none of the developer's FRONTDESK_* settings, these instead."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    env.update(
        FRONTDESK_DATABASE_URL=database_url,
        FRONTDESK_CONFIG=str(tmp / "no-config.toml"),
        FRONTDESK_MEDIA_DIR=str(tmp / "media"),
        FRONTDESK_LOG_LEVEL="INFO",
    )
    env.update({f"FRONTDESK_{name.upper()}": str(value) for name, value in settings.items()})
    return env


@contextlib.asynccontextmanager
async def fresh_database(tmp: Path) -> AsyncIterator[str]:
    """A new database on the test server, migrated by ``frontdesk db upgrade`` and seeded with the
    demo business; dropped afterwards. Yields its SQLAlchemy URL."""
    name = f"frontdesk_inst_{uuid.uuid4().hex[:10]}"
    assert POSTGRES_URL
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    await _admin(f'CREATE DATABASE "{name}"')
    try:
        await _cli(base_env(tmp, url), "db", "upgrade")
        db = Database.from_url(url, pool_size=2)
        try:
            await seed_demo(db, SystemClock())
        finally:
            await db.dispose()
        yield url
    finally:
        await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def echo_script(tmp: Path, delay_ms: int) -> str:
    """A script chat model that answers "got: <the batch's texts>" after ``delay_ms`` (the
    warm-up message at once)."""
    path = tmp / f"echo-{delay_ms}.json"
    script = {
        "name": "echo",
        "rules": [{"match": "^warm-up$", "responses": [{"reply": "warm"}]}],
        "default": [{"reply": "got: {user_text}", "delay_ms": delay_ms}],
    }
    path.write_text(json.dumps(script))
    return f"script:{path}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


@dataclass
class Instance:
    name: str
    port: int
    proc: asyncio.subprocess.Process
    log_path: Path

    @property
    def base(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def signal(self, sig: signal.Signals) -> None:
        """To the HTTP process only (it stops its worker processes itself)."""
        if self.proc.returncode is None:
            self.proc.send_signal(sig)

    def crash(self) -> None:
        """``kill -9`` of the whole instance: its HTTP process and its worker processes at once,
        as when the machine dies (each instance runs in a session of its own)."""
        if self.proc.returncode is None:
            os.killpg(self.proc.pid, signal.SIGKILL)

    def family(self) -> set[int]:
        """The pids of this instance: its HTTP process and the worker processes it started (a
        lease names the worker's)."""
        return {self.proc.pid, *children_of(self.proc.pid)}

    async def wait_exit(self, timeout_s: float) -> int:
        return await asyncio.wait_for(self.proc.wait(), timeout_s)


async def _start(name: str, env: dict[str, str], tmp: Path) -> Instance:
    port = free_port()
    log_path = tmp / f"{name}.log"
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "from frontdesk.cli import main; main()",
            "serve",
            "--host",
            LOOPBACK,
            "--port",
            str(port),
            env=env,
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
    return Instance(name, port, proc, log_path)


async def _wait_healthy(instance: Instance) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    async with httpx2.AsyncClient(base_url=instance.base, trust_env=False, timeout=2.0) as client:
        while time.monotonic() < deadline:
            if instance.proc.returncode is not None:
                raise AssertionError(
                    f"{instance.name} exited with {instance.proc.returncode}:\n{instance.log()[-3000:]}"
                )
            with contextlib.suppress(httpx2.TransportError):
                if (await client.get("/healthz")).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise AssertionError(f"{instance.name} not healthy within {START_TIMEOUT_S:.0f}s:\n{instance.log()[-3000:]}")


@contextlib.asynccontextmanager
async def instances(n: int, env: dict[str, str], tmp: Path) -> AsyncIterator[list[Instance]]:
    """``n`` ``frontdesk serve`` processes, started in parallel; killed at the end if still alive.
    On failure their logs are printed (pytest shows them with the failure)."""
    started = [await _start(f"instance{i}", env, tmp) for i in range(n)]
    try:
        await asyncio.gather(*(_wait_healthy(i) for i in started))
        yield started
    except BaseException:
        for instance in started:
            print(f"--- {instance.name} (pid {instance.pid}) ---\n{instance.log()[-6000:]}")
        raise
    finally:
        for instance in started:
            if instance.proc.returncode is None:
                instance.proc.terminate()
        for instance in started:
            try:
                await asyncio.wait_for(instance.proc.wait(), 20)
            except TimeoutError:
                instance.proc.kill()
                await instance.proc.wait()


def http_client() -> httpx2.AsyncClient:
    """Idle connections are dropped after 1 s, well before uvicorn's 5 s keep-alive timeout closes
    them server-side (reusing a connection the server is closing fails with ReadError)."""
    return httpx2.AsyncClient(trust_env=False, timeout=20, limits=httpx2.Limits(keepalive_expiry=1.0))


async def post_message(client: httpx2.AsyncClient, base: str, session: str, msg_id: str, text: str) -> int:
    response = await client.post(
        f"{base}/v1/webchat/{DEMO_WEBCHAT}/messages", json={"session": session, "id": msg_id, "text": text}
    )
    return response.status_code


async def send_burst(
    client: httpx2.AsyncClient,
    bases: list[str],
    session: str,
    texts: list[str],
    *,
    gap_s: float = 0.05,
    offset: int = 0,
) -> list[int]:
    """The burst's messages round-robin over ``bases`` (message k to instance (k + offset) % n),
    ``gap_s`` apart, each POST in flight on its own. Returns the HTTP statuses."""
    tasks = []
    for k, text in enumerate(texts):
        if k:
            await asyncio.sleep(gap_s)
        base = bases[(k + offset) % len(bases)]
        tasks.append(asyncio.create_task(post_message(client, base, session, f"{text}", text)))
    return list(await asyncio.gather(*tasks))


async def warm_up(client: httpx2.AsyncClient, servers: list[Instance], db: Database) -> None:
    """One message to each instance (a session of its own), answered before the test starts: the
    first request of a fresh process opens its database connections and compiles its queries,
    which on a busy machine can take longer than a quiet window. (A load balancer, too, only
    sends traffic to an instance once it is ready.)"""
    for i, server in enumerate(servers):
        assert await post_message(client, server.base, f"warm-up-session-{i:04d}", "warmup", "warm-up") == 202
    await wait_idle(db, timeout_s=60)


# -- reading the outcome from the database


async def conversation_of(db: Database, session: str) -> str | None:
    async with db.read() as s:
        return await s.scalar(
            select(Conversation.id)
            .join(Contact, Contact.id == Conversation.contact_id)
            .where(Contact.channel_account_id == DEMO_WEBCHAT, Contact.external_id == session)
        )


async def wait_idle(db: Database, timeout_s: float, settle_s: float = 0.5) -> None:
    """The harness's wait, settling longer: jobs are claimed by other processes' pollers."""
    await harness.wait_idle(db, timeout_s, settle_s)


@dataclass(frozen=True)
class Outcome:
    """One conversation as stored: its customer messages (text -> turn id), its turns (trace id ->
    worker) and the replies (turn id -> texts)."""

    answered_by: dict[str, int | None]
    turns: dict[int, str]
    replies: dict[int | None, list[str]]

    def batches(self) -> dict[int | None, list[str]]:
        grouped: dict[int | None, list[str]] = {}
        for text, turn in self.answered_by.items():
            grouped.setdefault(turn, []).append(text)
        return grouped


async def outcome(db: Database, conversation_id: str) -> Outcome:
    from frontdesk.output.transcript import message_text

    async with db.read() as s:
        users = list(
            await s.scalars(
                select(Message)
                .where(Message.conversation_id == conversation_id, Message.role == "user")
                .order_by(Message.id)
            )
        )
        assistants = list(
            await s.scalars(
                select(Message)
                .where(Message.conversation_id == conversation_id, Message.role == "assistant")
                .order_by(Message.id)
            )
        )
        traces = list(await s.scalars(select(TurnTrace).where(TurnTrace.conversation_id == conversation_id)))
    replies: dict[int | None, list[str]] = {}
    for m in assistants:
        replies.setdefault(m.turn_id, []).append(message_text(m))
    return Outcome({m.content: m.turn_id for m in users}, {t.id: t.worker for t in traces}, replies)


def children_of(pid: int) -> list[int]:
    """Live processes whose parent is ``pid`` (Linux: from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # "pid (comm) state ppid ...": comm may hold spaces, so split after its closing paren.
            if int(stat.read_text().rpartition(")")[2].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    """Running, not a zombie (a zombie has exited; only its parent has not read its status yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


async def every_process_exits(family: set[int], timeout_s: float = 30) -> None:
    """Until none of ``family`` runs. An instance joins its worker processes before it exits, but
    multiprocessing's resource tracker (a child too) leaves when it reads the end of its pipe, a
    moment after the last holder exits, later under load. On a timeout, names who is left."""

    async def all_gone() -> bool:
        return not [pid for pid in family if alive(pid)]

    try:
        await wait_for(all_gone, timeout_s, "every process of the instance to exit")
    except AssertionError as exc:
        left = {pid: _cmdline(pid) for pid in family if alive(pid)}
        raise AssertionError(f"{exc}; still running: {left}") from None


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:200]
    return "?"


def pid_of_owner(owner: str) -> int:
    """Lease owners are ``host:pid:random/<worker>/job<id>.<attempt>`` (platform/workers.py)."""
    return int(owner.split(":")[1])


async def lease_holder(db: Database, conversation_id: str) -> str | None:
    async with db.read() as s:
        row = (
            await s.execute(
                select(Conversation.lock_owner, Conversation.lock_until).where(Conversation.id == conversation_id)
            )
        ).first()
    return row.lock_owner if row is not None else None


async def wait_for(predicate: Any, timeout_s: float, what: str, interval_s: float = 0.05) -> Any:
    """Poll the async ``predicate`` until it returns something truthy; returns it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = await predicate()
        if value:
            return value
        await asyncio.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
