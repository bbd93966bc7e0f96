"""Burst coalescing over real HTTP: one model run per burst, no duplicate replies.

Fires ``--sessions`` web chat sessions at once, each posting ``--messages`` messages with a
``--gap-ms`` gap (all well inside the quiet window), at a frontdesk server on 127.0.0.1, then
prints:

* ack latency p50/p99: ``POST /v1/webchat/{account}/messages`` until its 202;
* reply latency p50/p99: the last message of a session's burst being sent until the first
  assistant block arrives on that session's SSE stream (``GET .../stream``, opened before the
  burst; falls back to polling the transcript if a stream fails). It includes the quiet window
  and the model delay by design;
* model runs per burst: mean over sessions of ``turn_traces`` rows for the conversation (must
  be 1.00), and duplicate replies: assistant messages minus sessions (must be 0);
* redeliveries: every message is POSTed once more with the same id; that must add no message
  rows, no runs and no replies ("redeliveries: N, new replies: 0");
* held connections: the most event streams open at once; lost messages: acknowledged with 202
  but not stored, or never answered (must be 0); peak RSS of each self-hosted server's processes (HTTP, workers)
  (``VmHWM``, Linux).

Counts come from the database directly (read-only queries), after waiting until the system is
idle for these conversations: no queued/running job and no unprocessed customer message.
Exits non-zero if any check fails.

Modes:
* self-hosted (no ``--url``): starts ``frontdesk demo`` as a subprocess on a free loopback port,
  on a temp SQLite database (or ``--database``), which migrates and seeds the demo business;
  the chat model is a script file replying "ok" after ``--model-delay-ms`` (default 200), the
  quiet window is ``--quiet-window`` (default 1.5 s). The server is terminated at the end.
* many instances (``--instances N``, self-hosted): migrates ``--database`` with ``frontdesk db
  upgrade``, seeds the demo business, then starts N ``frontdesk serve`` processes on it in parallel.
  Message k of session i goes to instance (i + k) mod N, so every burst is spread over the
  instances, and session i's stream is held by instance i mod N. N > 1 needs PostgreSQL.
* existing server: ``--url http://127.0.0.1:PORT --database URL --account ACCOUNT_ID``.

``--database`` (alias ``--database-url``) takes a SQLAlchemy URL; a plain ``postgresql://`` URL
is read as ``postgresql+asyncpg://``.

Only 127.0.0.1 is contacted; every request loop is bounded in count and time.

Run:
    .venv/bin/python bench/burst.py
    .venv/bin/python bench/burst.py --sessions 20 --messages 5 \
        --database-url postgresql+asyncpg://postgres@127.0.0.1:5432/frontdesk_burst
    .venv/bin/python bench/burst.py --instances 3 --database postgresql://postgres@127.0.0.1:5432/frontdesk_burst
    .venv/bin/python bench/burst.py --sessions 2000 --messages 3 --model-delay-ms 1000 --workers 64 \
        --ramp-s 60 --timeout 600    # 2,000 open streams, one burst each, arriving over a minute
    .venv/bin/python bench/burst.py --url http://127.0.0.1:8000 \
        --database-url sqlite+aiosqlite:///./frontdesk.db --account demo-webchat
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
from sqlalchemy import func, select
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from frontdesk.demo import DEMO_WEBCHAT, seed_demo
from frontdesk.platform.store.schema import Contact, Conversation, Job, Message, TurnTrace

LOOPBACK = "127.0.0.1"
HEALTH_TIMEOUT_S = 120.0  # several servers importing at once on a small machine
SETTLE_S = 0.5
UNLIMITED = 10**9  # messages a minute: a rate limit the bench never reaches


@dataclass
class StreamGauge:
    """Event streams open right now, and the most open at once."""

    open: int = 0
    peak: int = 0

    def opened(self) -> None:
        self.open += 1
        self.peak = max(self.peak, self.open)

    def closed(self) -> None:
        self.open -= 1


def peak_rss_mb(pid: int) -> float | None:
    """The process's peak resident set (Linux ``VmHWM``), or None where /proc does not say."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def with_children(pid: int) -> list[int]:
    """``pid`` and the processes it started (serve's worker processes, multiprocessing's tracker)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rpartition(")")[2].split()[1]) == pid:
                children.append(int(stat.parent.name))
    return [pid, *sorted(children)]


@dataclass
class SessionResult:
    session: str
    acks_ms: list[float] = field(default_factory=list)
    ack_statuses: list[int] = field(default_factory=list)
    last_sent: float | None = None  # perf_counter when the burst's last POST was sent
    last_acked: float | None = None  # perf_counter when the last of the burst's POSTs was answered
    reply_at: float | None = None  # perf_counter when its first assistant block arrived
    reply_via: str = ""
    stream_error: str | None = None
    conversation_id: str | None = None
    runs: int = 0
    replies: int = 0
    user_messages: int = 0
    stored_gap_s: float = 0.0  # the widest gap between two of its messages as the server stored them

    @property
    def reply_ms(self) -> float | None:
        if self.reply_at is None or self.last_sent is None:
            return None
        return (self.reply_at - self.last_sent) * 1000

    @property
    def reply_after_ack_ms(self) -> float | None:
        if self.reply_at is None or self.last_acked is None:
            return None
        return (self.reply_at - self.last_acked) * 1000


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


def msg_body(session: str, k: int) -> dict[str, str]:
    return {"session": session, "id": f"m{k}", "text": f"burst message {k + 1} from {session}"}


# -- the server


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def server_env(args: argparse.Namespace, tmp: Path) -> dict[str, str]:
    script = tmp / "bench-script.json"
    script.write_text(
        json.dumps({"name": "bench", "default": [{"reply": "ok", "delay_ms": args.model_delay_ms}]}), encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    env.update(
        FRONTDESK_DATABASE_URL=args.database_url,
        FRONTDESK_DEMO_DATABASE_URL=args.database_url,  # `frontdesk demo` runs in its own database
        FRONTDESK_MODEL_CHAT=f"script:{script}",
        FRONTDESK_QUIET_WINDOW_S=str(args.quiet_window),
        FRONTDESK_MEDIA_DIR=str(tmp / "media"),
        FRONTDESK_CONFIG=str(tmp / "no-config.toml"),  # ignore a frontdesk.toml in the cwd
        # Every message comes from 127.0.0.1, and each is sent twice (the redelivery check): the
        # web chat's rate limits (60 a minute per address by default) would refuse most of a burst.
        FRONTDESK_WEBCHAT_MESSAGES_PER_MINUTE_SESSION=str(UNLIMITED),
        FRONTDESK_WEBCHAT_MESSAGES_PER_MINUTE_IP=str(UNLIMITED),
        FRONTDESK_WEBCHAT_MESSAGES_PER_MINUTE_ACCOUNT=str(UNLIMITED),
        # A burst's thousands of turns would pass the default model budget; each still claims it.
        FRONTDESK_MODEL_TURNS_PER_HOUR=str(UNLIMITED),
        FRONTDESK_MODEL_TURNS_PER_DAY=str(UNLIMITED),
    )
    if args.workers is not None:
        env["FRONTDESK_WORKERS"] = str(args.workers)
    if args.worker_processes is not None:
        env["FRONTDESK_WORKER_PROCESSES"] = str(args.worker_processes)
    return env


async def run_cli(env: dict[str, str], *cli_args: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from frontdesk.cli import main; main()",
        *cli_args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        stdin=asyncio.subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), HEALTH_TIMEOUT_S)
    if proc.returncode != 0:
        raise SystemExit(f"frontdesk {' '.join(cli_args)} failed:\n{out.decode(errors='replace')[-3000:]}")


async def seed(database_url: str) -> None:
    from frontdesk.platform.clock import SystemClock
    from frontdesk.platform.store.engine import Database

    db = Database.from_url(database_url, pool_size=1)
    try:
        await seed_demo(db, SystemClock())
    finally:
        await db.dispose()


@contextlib.asynccontextmanager
async def own_servers(args: argparse.Namespace, tmp: Path) -> AsyncIterator[list[str]]:
    """Without ``--instances``: ``frontdesk demo`` (it migrates and seeds). With it: ``db upgrade``,
    the demo business seeded, then N ``frontdesk serve`` started in parallel. Yields base URLs;
    the processes' pids go to ``args.server_pids`` (for their peak RSS)."""
    env = server_env(args, tmp)
    if args.instances is None:
        command, count = "demo", 1
    else:
        await run_cli(env, "db", "upgrade")
        await seed(args.database_url)
        command, count = "serve", args.instances
    ports = [args.port] if args.port and count == 1 else [free_port() for _ in range(count)]
    procs: list[tuple[asyncio.subprocess.Process, Path]] = []
    try:
        for n, port in enumerate(ports):
            log_path = tmp / f"server{n}.log"
            with log_path.open("wb") as log:
                proc = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-c",
                    "from frontdesk.cli import main; main()",
                    command,
                    "--host",
                    LOOPBACK,
                    "--port",
                    str(port),
                    env=env,
                    stdout=log,
                    stderr=asyncio.subprocess.STDOUT,
                    stdin=asyncio.subprocess.DEVNULL,
                )
            procs.append((proc, log_path))
        bases = [f"http://{LOOPBACK}:{port}" for port in ports]
        await asyncio.gather(*(wait_healthy(base, proc, log) for base, (proc, log) in zip(bases, procs, strict=True)))
        args.server_pids = [proc.pid for proc, _ in procs]
        yield bases
    finally:
        await asyncio.gather(*(stop_process(proc) for proc, _ in procs))
        if args.server_log:
            for _, log_path in procs:
                text = await asyncio.to_thread(log_path.read_text, errors="replace")
                print(f"--- server log ({log_path}) ---\n{text}", file=sys.stderr)


async def wait_healthy(base: str, proc: asyncio.subprocess.Process | None, log_path: Path | None) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    async with httpx2.AsyncClient(base_url=base, trust_env=False, timeout=2.0) as client:
        while time.monotonic() < deadline:
            if proc is not None and proc.returncode is not None:
                tail = (await asyncio.to_thread(log_path.read_text, errors="replace"))[-3000:] if log_path else ""
                raise SystemExit(f"server exited with code {proc.returncode} before becoming healthy:\n{tail}")
            with contextlib.suppress(httpx2.TransportError):
                if (await client.get("/healthz")).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise SystemExit(f"{base}/healthz did not answer 200 within {HEALTH_TIMEOUT_S:.0f}s")


async def stop_process(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), 15)
    except TimeoutError:
        proc.kill()
        await asyncio.wait_for(proc.wait(), 5)


# -- the database (read-only)


def monitor_engine(database_url: str) -> AsyncEngine:
    """Plain engine, no ``BEGIN IMMEDIATE``: on SQLite our reads never take the server's write lock."""
    if make_url(database_url).get_backend_name() == "sqlite":
        return create_async_engine(database_url)
    return create_async_engine(database_url, pool_size=2, max_overflow=0)


async def conversation_ids(engine: AsyncEngine, account: str, sessions: list[str]) -> dict[str, str]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(Contact.external_id, Conversation.id)
            .join(Conversation, Conversation.contact_id == Contact.id)
            .where(Contact.channel_account_id == account, Contact.external_id.in_(sessions))
        )
        return {session: conversation for session, conversation in rows}


async def per_conversation(engine: AsyncEngine, query: Any) -> dict[str, int]:
    async with engine.connect() as conn:
        return {cid: int(n) for cid, n in await conn.execute(query)}


async def stored_gaps(engine: AsyncEngine, conversations: list[str]) -> dict[str, float]:
    """Per conversation, the widest gap (s) between consecutive customer messages as stored. A
    server too busy to store a burst's messages within the quiet window of each other sees two
    bursts, and answers each: the bench tells that apart from a coalescing fault."""
    gaps: dict[str, float] = {}
    previous: dict[str, Any] = {}
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(Message.conversation_id, Message.created_at)
            .where(Message.conversation_id.in_(conversations), Message.role == "user")
            .order_by(Message.conversation_id, Message.created_at)
        )
        for cid, created in rows:
            if cid in previous:
                gaps[cid] = max(gaps.get(cid, 0.0), (created - previous[cid]).total_seconds())
            previous[cid] = created
    return gaps


async def tallies(engine: AsyncEngine, conversations: list[str]) -> dict[str, dict[str, int]]:
    runs = await per_conversation(
        engine,
        select(TurnTrace.conversation_id, func.count())
        .where(TurnTrace.conversation_id.in_(conversations))
        .group_by(TurnTrace.conversation_id),
    )
    by_role: dict[str, dict[str, int]] = {"user": {}, "assistant": {}}
    async with engine.connect() as conn:
        for cid, role, n in await conn.execute(
            select(Message.conversation_id, Message.role, func.count())
            .where(Message.conversation_id.in_(conversations))
            .group_by(Message.conversation_id, Message.role)
        ):
            by_role.setdefault(role, {})[cid] = int(n)
    return {"runs": runs, "user": by_role["user"], "assistant": by_role["assistant"]}


async def wait_idle(engine: AsyncEngine, conversations: list[str], timeout_s: float) -> tuple[bool, int, int]:
    """Until no job for these conversations is queued/running and none of their customer
    messages is unprocessed, for ``SETTLE_S`` in a row. Returns (idle, busy jobs, unprocessed)."""
    keys = [f"conversation:{c}" for c in conversations]
    deadline = time.monotonic() + timeout_s
    quiet_since: float | None = None
    busy = pending = -1
    while time.monotonic() < deadline:
        async with engine.connect() as conn:
            busy = int(
                await conn.scalar(
                    select(func.count())
                    .select_from(Job)
                    .where(Job.key.in_(keys), Job.status.in_(["queued", "running"]))
                )
                or 0
            )
        pending = await unanswered_messages(engine, conversations)
        if busy == 0 and pending == 0:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= SETTLE_S:
                return True, 0, 0
        else:
            quiet_since = None
        await asyncio.sleep(0.1)
    return False, busy, pending


async def unanswered_messages(engine: AsyncEngine, conversations: list[str]) -> int:
    """Customer messages no turn took (after the system went idle, each one is a loss)."""
    async with engine.connect() as conn:
        return int(
            await conn.scalar(
                select(func.count())
                .select_from(Message)
                .where(
                    Message.conversation_id.in_(conversations),
                    Message.role == "user",
                    Message.processed_at.is_(None),
                )
            )
            or 0
        )


# -- the burst


async def watch_stream(
    client: httpx2.AsyncClient,
    base: str,
    account: str,
    result: SessionResult,
    opened: asyncio.Event,
    deadline: float,
    gauge: StreamGauge,
) -> None:
    """First assistant block on the session's SSE stream; on a stream failure, poll the transcript."""
    held = False
    try:
        async with client.stream(
            "GET", f"{base}/v1/webchat/{account}/stream", params={"session": result.session}
        ) as response:
            response.raise_for_status()
            gauge.opened()
            held = True
            event = ""
            async for line in response.aiter_lines():
                opened.set()
                if line.startswith("event:"):
                    event = line.partition(":")[2].strip()
                elif line.startswith("data:") and event == "block":
                    payload = json.loads(line.partition(":")[2])
                    if payload.get("role") == "assistant":
                        result.reply_at = time.perf_counter()
                        result.reply_via = "sse"
                        return
                elif not line:
                    event = ""
                if time.perf_counter() > deadline:
                    return
    except (httpx2.HTTPError, ValueError) as exc:
        result.stream_error = f"{type(exc).__name__}: {exc}"
    finally:
        opened.set()
        if held:
            gauge.closed()
    while result.reply_at is None and time.perf_counter() < deadline:  # fallback: transcript polling
        with contextlib.suppress(httpx2.HTTPError):
            response = await client.get(f"{base}/v1/webchat/{account}/messages", params={"session": result.session})
            if response.status_code == 200 and any(m["role"] == "assistant" for m in response.json()["messages"]):
                result.reply_at = time.perf_counter()
                result.reply_via = "transcript"
                return
        await asyncio.sleep(0.2)


async def post(
    client: httpx2.AsyncClient, base: str, account: str, body: dict[str, str]
) -> tuple[int, float, dict[str, Any]]:
    started = time.perf_counter()
    try:
        response = await client.post(f"{base}/v1/webchat/{account}/messages", json=body)
    except httpx2.HTTPError as exc:
        return -1, (time.perf_counter() - started) * 1000, {"error": f"{type(exc).__name__}: {exc}"}
    elapsed = (time.perf_counter() - started) * 1000
    try:
        data = response.json()
    except ValueError:
        data = {}
    return response.status_code, elapsed, data


def target(bases: list[str], session_index: int, k: int) -> str:
    """Message k of session i goes to instance (i + k) mod N: every burst is spread over them."""
    return bases[(session_index + k) % len(bases)]


async def burst_session(
    client: httpx2.AsyncClient,
    bases: list[str],
    index: int,
    account: str,
    result: SessionResult,
    args: argparse.Namespace,
) -> None:
    tasks = []
    if args.ramp_s:  # session i starts i/N of the way into the ramp: arrivals at a steady rate
        await asyncio.sleep(args.ramp_s * index / args.sessions)
    for k in range(args.messages):
        if k:
            await asyncio.sleep(args.gap_ms / 1000)
        if k == args.messages - 1:
            result.last_sent = time.perf_counter()
        tasks.append(asyncio.create_task(post(client, target(bases, index, k), account, msg_body(result.session, k))))
    for status, elapsed, _data in await asyncio.gather(*tasks):
        result.ack_statuses.append(status)
        result.acks_ms.append(elapsed)
    result.last_acked = time.perf_counter()


async def warm_up(client: httpx2.AsyncClient, bases: list[str], account: str, engine: AsyncEngine, run: str) -> None:
    """One message per instance, answered before the burst: a fresh process's first request opens
    its database connections and compiles its queries, which would otherwise land in the burst."""
    sessions = [f"warm-up-session-{run}-{n}" for n in range(len(bases))]
    for base, session in zip(bases, sessions, strict=True):
        await post(client, base, account, {"session": session, "id": "w", "text": "warm-up"})
    conversations = list((await conversation_ids(engine, account, sessions)).values())
    await wait_idle(engine, conversations, 60)


async def run_bench(bases: list[str], args: argparse.Namespace) -> int:
    account = args.account
    run = secrets.token_hex(3)
    results = [SessionResult(f"burst-session-{run}-{i:04d}") for i in range(args.sessions)]
    total_messages = args.sessions * args.messages
    # Idle keep-alive connections are dropped well before uvicorn's 5 s keep-alive timeout closes
    # them server-side (reusing one the server is closing fails with ReadError on the client).
    limits = httpx2.Limits(
        max_connections=total_messages + 10, max_keepalive_connections=total_messages + 10, keepalive_expiry=1.0
    )
    engine = monitor_engine(args.database_url)
    gauge = StreamGauge()
    failures: list[str] = []
    try:
        async with (
            httpx2.AsyncClient(trust_env=False, timeout=args.ack_timeout, limits=limits) as client,
            httpx2.AsyncClient(
                trust_env=False,
                timeout=httpx2.Timeout(30.0, read=args.timeout),
                limits=httpx2.Limits(max_connections=args.sessions + 5),
            ) as streams,
        ):
            account_check = await client.get(
                f"{bases[0]}/v1/webchat/{account}/messages", params={"session": "bench-account-probe"}
            )
            if account_check.status_code != 200:
                raise SystemExit(
                    f"web chat account {account!r}: HTTP {account_check.status_code} {account_check.text[:200]}"
                )
            if len(bases) > 1:
                await warm_up(client, bases, account, engine, run)

            # 1. one SSE stream per session, open before the burst
            reply_deadline = time.perf_counter() + args.ramp_s + args.timeout + 30
            opened = [asyncio.Event() for _ in results]
            watchers = [
                asyncio.create_task(watch_stream(streams, bases[i % len(bases)], account, r, o, reply_deadline, gauge))
                for i, (r, o) in enumerate(zip(results, opened, strict=True))
            ]
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(o.wait() for o in opened)), 10)

            # 2. the burst: every session at once, each K messages GAP ms apart
            burst_started = time.perf_counter()
            await asyncio.gather(*(burst_session(client, bases, i, account, r, args) for i, r in enumerate(results)))
            burst_s = time.perf_counter() - burst_started

            # 3. every session's first reply (bounded)
            _done, pending = await asyncio.wait(watchers, timeout=args.timeout)
            for task in pending:
                task.cancel()
            for task in watchers:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

            # 4. idle, then count from the database
            mapping = await conversation_ids(engine, account, [r.session for r in results])
            for r in results:
                r.conversation_id = mapping.get(r.session)
            conversations = list(mapping.values())
            idle, busy, unprocessed = await wait_idle(engine, conversations, args.timeout)
            if not idle:
                failures.append(
                    f"not idle after {args.timeout:.0f}s: {busy} jobs queued/running, {unprocessed} unprocessed"
                )
            before = await tallies(engine, conversations)
            gaps = await stored_gaps(engine, conversations)
            for r in results:
                r.stored_gap_s = gaps.get(r.conversation_id or "", 0.0)
                cid = r.conversation_id or ""
                r.runs = before["runs"].get(cid, 0)
                r.replies = before["assistant"].get(cid, 0)
                r.user_messages = before["user"].get(cid, 0)

            # 5. idempotent redelivery of every message (fresh connections)
            async with httpx2.AsyncClient(trust_env=False, timeout=args.ack_timeout, limits=limits) as again:
                redelivered = await asyncio.gather(
                    *(
                        post(again, target(bases, (i + 1) % len(bases), k), account, msg_body(r.session, k))
                        for i, r in enumerate(results)
                        for k in range(args.messages)
                    )
                )
            await asyncio.sleep(args.quiet_window + args.model_delay_ms / 1000 + 0.5)  # time for any stray turn
            idle_after, _, _ = await wait_idle(engine, conversations, args.timeout)
            after = await tallies(engine, conversations)
            unanswered = await unanswered_messages(engine, conversations)
    finally:
        await engine.dispose()
    rss = [[peak_rss_mb(p) for p in with_children(pid)] for pid in getattr(args, "server_pids", [])]

    # -- figures
    acks = [ms for r in results for ms in r.acks_ms]
    statuses = [s for r in results for s in r.ack_statuses]
    replied = [r for r in results if r.reply_ms is not None]
    reply_ms = [r.reply_ms for r in replied if r.reply_ms is not None]
    reply_ack_ms = [r.reply_after_ack_ms for r in replied if r.reply_after_ack_ms is not None]
    runs = [r.runs for r in results]
    runs_per_burst = sum(runs) / len(runs)
    duplicates = sum(r.replies for r in results) - len(results)
    missing_convs = sum(1 for r in results if r.conversation_id is None)
    new_rows = sum(after["user"].values()) - sum(before["user"].values())
    new_replies = sum(after["assistant"].values()) - sum(before["assistant"].values())
    new_runs = sum(after["runs"].values()) - sum(before["runs"].values())
    dup_acks = sum(1 for status, _ms, data in redelivered if status == 200 and data.get("duplicate") is True)

    if args.mode == "self-hosted":
        setup = f"quiet window {args.quiet_window:g} s, model delay {args.model_delay_ms} ms"
    else:
        setup = f"quiet window assumed {args.quiet_window:g} s (--quiet-window), model: the server's"
    arrivals = f"sessions starting over {args.ramp_s:g} s" if args.ramp_s else "all sessions at once"
    print(f"burst: {args.sessions} sessions x {args.messages} messages, gap {args.gap_ms:g} ms, {arrivals}, {setup}")
    servers = bases[0] if len(bases) == 1 else f"{len(bases)} instances ({', '.join(bases)})"
    print(
        f"  server: {servers} ({args.mode}), database: {make_url(args.database_url).get_backend_name()}, "
        f"account {account}"
    )
    print(f"  posted {len(statuses)} messages in {burst_s * 1000:.0f} ms; 202: {statuses.count(202)}/{total_messages}")
    if acks:
        print(
            f"  ack latency (POST -> 202): p50 {percentile(acks, 50):.1f} ms, "
            f"p99 {percentile(acks, 99):.1f} ms, max {max(acks):.1f} ms"
        )
    via = {v: sum(1 for r in replied if r.reply_via == v) for v in ("sse", "transcript")}
    if reply_ms:
        print(
            f"  reply latency (last message sent -> first assistant block): p50 {percentile(reply_ms, 50):.0f} ms, "
            f"p99 {percentile(reply_ms, 99):.0f} ms, max {max(reply_ms):.0f} ms "
            f"[{len(replied)}/{len(results)} sessions; sse {via['sse']}, transcript {via['transcript']}]"
        )
        print(
            f"  reply latency (burst fully acked -> first assistant block): p50 {percentile(reply_ack_ms, 50):.0f} ms, "
            f"p99 {percentile(reply_ack_ms, 99):.0f} ms, max {max(reply_ack_ms):.0f} ms"
        )
    else:
        print(f"  reply latency: no session got a reply within {args.timeout:.0f}s")
    print(f"  held connections: {gauge.peak} event streams open at once (of {len(results)} sessions)")
    stored = sum(r.user_messages for r in results)
    lost = max(0, statuses.count(202) - stored) + unanswered
    print(
        f"  lost messages: {lost} (acknowledged 202 but not stored: {max(0, statuses.count(202) - stored)}, "
        f"stored but never answered: {unanswered})"
    )
    if rss and all(family[0] is not None for family in rss):
        print(
            "  peak RSS per server (its HTTP process + its worker processes): "
            + ", ".join(" + ".join(f"{mb:.0f} MB" for mb in family if mb is not None) for family in rss)
        )
    print(f"  model runs per burst: {runs_per_burst:.2f} (min {min(runs)}, max {max(runs)})")
    print(f"  duplicate replies: {duplicates}")
    # A burst whose messages the server stored more than the quiet window apart is two bursts to
    # it (one reply each, by design); any other extra run or reply is a coalescing fault.
    wide = [r for r in results if r.stored_gap_s > args.quiet_window]
    split = [r for r in wide if r.runs != 1 or r.replies != 1]
    faults = [r for r in results if r.stored_gap_s <= args.quiet_window and (r.runs != 1 or r.replies != 1)]
    print(
        f"  bursts stored more than the quiet window apart: {len(wide)} "
        f"(widest gap {max((r.stored_gap_s for r in results), default=0.0):.2f} s), "
        f"answered in parts: {len(split)} "
        f"(runs {sum(r.runs for r in split)}, replies {sum(r.replies for r in split)}); "
        f"extra runs or replies in the other bursts: {len(faults)}"
    )
    print(
        f"  redeliveries: {len(redelivered)}, new replies: {new_replies} "
        f"(answered 200 duplicate: {dup_acks}/{len(redelivered)}, new message rows {new_rows}, new runs {new_runs})"
    )

    if statuses.count(202) != total_messages:
        failures.append(
            f"{total_messages - statuses.count(202)} POSTs not answered 202 (statuses {sorted(set(statuses))})"
        )
    if missing_convs:
        failures.append(f"{missing_convs} sessions have no conversation")
    if lost:
        failures.append(f"{lost} messages lost")
    if stored != total_messages:
        failures.append(f"{stored} customer messages stored, expected {total_messages}")
    if len(replied) != len(results):
        failures.append(f"{len(results) - len(replied)} sessions saw no reply within {args.timeout:.0f}s")
    if faults:
        failures.append(
            f"{len(faults)} bursts stored within the quiet window got other than one run and one reply, e.g. "
            + ", ".join(f"{r.session}: {r.runs} runs, {r.replies} replies" for r in faults[:5])
        )
    if split and not args.allow_split:
        failures.append(
            f"{len(split)} bursts were answered in parts: the server stored them more than the quiet window "
            f"({args.quiet_window:g} s) apart (rerun with a wider --quiet-window, or --allow-split to report them)"
        )
    if new_replies or new_rows or new_runs or dup_acks != len(redelivered) or not idle_after:
        failures.append(
            f"redelivery: {new_replies} new replies, {new_rows} new rows, {new_runs} new runs, "
            f"{dup_acks}/{len(redelivered)} answered as duplicates"
        )
    odd = [(status, data) for status, _ms, data in redelivered if not (status == 200 and data.get("duplicate") is True)]
    if odd:
        print(
            f"  note: {len(odd)} redeliveries not answered 200 duplicate, "
            f"e.g. {odd[0][0]} {json.dumps(odd[0][1])[:300]}"
        )
    stream_errors = [r.stream_error for r in results if r.stream_error]
    if stream_errors:
        print(f"  note: {len(stream_errors)} SSE streams failed (first: {stream_errors[0]})")
    for failure in failures:
        print(f"  FAIL {failure}")
    print(f"  result: {'FAIL' if failures else 'PASS'}")
    return 1 if failures else 0


# -- entry point


def _check_loopback_url(parser: argparse.ArgumentParser, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname != LOOPBACK:
        parser.error(f"--url must be http://{LOOPBACK}:PORT (only loopback is contacted), got {url!r}")


def async_database_url(url: str) -> str:
    """``postgresql://`` (what psql and pg_dump take) means the async driver frontdesk uses."""
    for plain in ("postgresql://", "postgres://"):
        if url.startswith(plain):
            return "postgresql+asyncpg://" + url[len(plain) :]
    return url


def _check_database_url(parser: argparse.ArgumentParser, url: str) -> None:
    try:
        parsed = make_url(url)
    except Exception:
        parser.error(f"--database is not a database URL: {url!r}")
    backend = parsed.get_backend_name()
    if backend == "postgresql" and parsed.host not in (None, "", LOOPBACK, "localhost"):
        parser.error(f"--database must point at {LOOPBACK} (only loopback is contacted)")
    if backend not in ("sqlite", "postgresql"):
        parser.error("--database must be sqlite+aiosqlite:// or postgresql[+asyncpg]://")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    parser.add_argument("--sessions", type=int, default=20, help="concurrent sessions (default 20)")
    parser.add_argument("--messages", type=int, default=5, help="messages per session burst (default 5)")
    parser.add_argument("--gap-ms", type=float, default=50.0, help="gap between a session's messages (default 50)")
    parser.add_argument("--timeout", type=float, default=60.0, help="bound on each wait, seconds (default 60)")
    parser.add_argument(
        "--ramp-s",
        type=float,
        default=0.0,
        help="spread the sessions' first messages evenly over this many seconds (default 0: all at once)",
    )
    parser.add_argument(
        "--allow-split",
        action="store_true",
        help="do not fail on bursts the server stored more than the quiet window apart (still printed)",
    )
    parser.add_argument(
        "--ack-timeout", type=float, default=30.0, help="how long a POST may wait for its answer, seconds (default 30)"
    )
    parser.add_argument("--url", help=f"an already running server: http://{LOOPBACK}:PORT")
    parser.add_argument(
        "--database",
        "--database-url",
        dest="database_url",
        help="the servers' database (required with --url and with --instances > 1; self-hosted default: temp SQLite); "
        "postgresql:// means postgresql+asyncpg://",
    )
    parser.add_argument(
        "--instances",
        type=int,
        help="self-hosted: start this many `frontdesk serve` processes on --database (migrated and seeded first) "
        "and spread every burst over them",
    )
    parser.add_argument(
        "--account", help=f"web chat channel account id (required with --url; self-hosted: {DEMO_WEBCHAT})"
    )
    parser.add_argument(
        "--quiet-window",
        type=float,
        default=1.5,
        help="quiet window, seconds (self-hosted: passed to the server; default 1.5)",
    )
    parser.add_argument(
        "--model-delay-ms", type=int, default=200, help="script model latency (self-hosted; default 200)"
    )
    parser.add_argument(
        "--workers", type=int, help="FRONTDESK_WORKERS for the self-hosted server (default: its default)"
    )
    parser.add_argument(
        "--worker-processes",
        type=int,
        help="FRONTDESK_WORKER_PROCESSES for the self-hosted servers (default: theirs; 0: turns in the HTTP process)",
    )
    parser.add_argument("--port", type=int, help="port for the self-hosted server (default: a free one)")
    parser.add_argument("--server-log", action="store_true", help="print the self-hosted server's log at the end")
    args = parser.parse_args(argv)
    if args.sessions < 1 or args.messages < 1 or args.gap_ms < 0 or args.timeout <= 0 or args.ramp_s < 0:
        parser.error("--sessions and --messages must be >= 1, --gap-ms and --ramp-s >= 0, --timeout > 0")
    if args.ack_timeout <= 0:
        parser.error("--ack-timeout must be > 0")
    if args.database_url:
        args.database_url = async_database_url(args.database_url)
    if args.instances is not None:
        if args.url:
            parser.error("--instances starts its own servers; it cannot be combined with --url")
        if args.instances < 1:
            parser.error("--instances must be >= 1")
        if args.instances > 1 and not (
            args.database_url and make_url(args.database_url).get_backend_name() == "postgresql"
        ):
            parser.error("--instances > 1 needs a PostgreSQL --database (instances share it)")
    if args.url:
        if not (args.database_url and args.account):
            parser.error("--url needs --database and --account")
        _check_loopback_url(parser, args.url)
        args.mode = "existing"
    else:
        args.account = args.account or DEMO_WEBCHAT
        args.mode = "self-hosted"
    if args.database_url:
        _check_database_url(parser, args.database_url)
    if (args.messages - 1) * args.gap_ms / 1000 >= args.quiet_window:
        print(
            "warning: the burst is longer than the quiet window; more than one run per burst is expected",
            file=sys.stderr,
        )
    return args


async def main_async(args: argparse.Namespace) -> int:
    if args.url:
        base = args.url.rstrip("/")
        await wait_healthy(base, None, None)
        return await run_bench([base], args)
    with tempfile.TemporaryDirectory(prefix="frontdesk-burst-") as tmp_name:
        tmp = Path(tmp_name)
        args.database_url = args.database_url or f"sqlite+aiosqlite:///{tmp / 'burst.db'}"
        async with own_servers(args, tmp) as bases:
            return await run_bench(bases, args)


def main() -> None:
    sys.exit(asyncio.run(main_async(parse_args())))


if __name__ == "__main__":
    main()
