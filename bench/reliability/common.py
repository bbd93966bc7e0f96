"""What storm.py and crash.py share: a scratch database, real ``frontdesk serve`` processes on
loopback (started, killed, restarted, always stopped), the script chat model and the webhook
POSTs (the outcome is read by ``queries.py``). No figures here.

Every child process asks the kernel to SIGKILL it when the bench dies (``PR_SET_PDEATHSIG`` on
Linux), so even a bench killed with SIGKILL leaves no server behind (only its scratch database,
``frontdesk_<storm|crash>_<hex>``, to drop by hand); SIGTERM and Ctrl-C unwind normally
(servers stopped, scratch database dropped).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx2
from payloads import Platform, Webhook
from sqlalchemy.engine import make_url

from frontdesk.cli_accounts import upsert_account
from frontdesk.demo import DEMO_WEBCHAT, seed_demo
from frontdesk.ingestion.channels import CHANNELS
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.vault import MasterKeys, Vault
from frontdesk.platform.vault_envelope import generate_key

LOOPBACK = "127.0.0.1"
HEALTH_TIMEOUT_S = 120.0  # several servers importing at once on a busy 2-core machine
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
# The child's first act: die with the bench (Linux), then run the frontdesk CLI.
CHILD = (
    "import ctypes, signal, sys\n"
    "if sys.platform.startswith('linux'):\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG\n"
    "from frontdesk.cli import main\n"
    "main()\n"
)


# -- arguments


def add_common_arguments(parser: argparse.ArgumentParser, *, instances: int) -> None:
    parser.add_argument(
        "--backend",
        choices=["postgresql", "sqlite"],
        default="postgresql",
        help="postgresql (default; N instances on a scratch database) or sqlite (one instance, temp file)",
    )
    parser.add_argument(
        "--postgres",
        default=os.environ.get("FRONTDESK_TEST_POSTGRES_URL") or DEFAULT_POSTGRES,
        help="a PostgreSQL server URL on 127.0.0.1 the bench may CREATE/DROP a scratch database on "
        "(default: $FRONTDESK_TEST_POSTGRES_URL, else " + DEFAULT_POSTGRES + ")",
    )
    parser.add_argument(
        "--instances", type=int, default=None, help=f"frontdesk serve processes (default {instances}; sqlite: 1)"
    )
    parser.add_argument("--workers", type=int, default=8, help="FRONTDESK_WORKERS per instance (default 8)")
    parser.add_argument("--seed", type=int, default=8, help="random seed of the workload (default 8)")
    parser.add_argument("--timeout", type=float, default=180.0, help="bound on each wait, seconds (default 180)")
    parser.add_argument("--keep-database", action="store_true", help="do not drop the scratch database at the end")
    parser.add_argument("--server-log", action="store_true", help="print the servers' logs at the end")
    parser.add_argument("--quick", action="store_true", help="small counts, for CI")


def finish_common_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace, instances: int) -> None:
    if args.backend == "sqlite":
        if args.instances not in (None, 1):
            parser.error("--backend sqlite runs one instance (SQLite is not shared between processes)")
        args.instances = 1
    else:
        args.instances = instances if args.instances is None else args.instances
        url = make_url(args.postgres)
        if url.get_backend_name() != "postgresql" or url.host not in (LOOPBACK, "localhost"):
            parser.error(f"--postgres must be a postgresql:// URL on {LOOPBACK} (only loopback is contacted)")
    if args.instances < 1 or args.workers < 1 or args.timeout <= 0:
        parser.error("--instances and --workers must be >= 1, --timeout > 0")


# -- the database


@contextlib.asynccontextmanager
async def scratch_database(args: argparse.Namespace, tmp: Path, label: str) -> AsyncIterator[str]:
    """A new, empty database for this run (SQLAlchemy async URL); dropped afterwards."""
    if args.backend == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp / f'{label}.db'}"
        return
    name = f"frontdesk_{label}_{uuid.uuid4().hex[:8]}"
    server = make_url(args.postgres)
    admin_dsn = server.set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(admin_dsn, timeout=10)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    try:
        yield server.set(drivername="postgresql+asyncpg", database=name).render_as_string(hide_password=False)
    finally:
        if args.keep_database:
            print(f"(kept database {name})", file=sys.stderr)
        else:
            conn = await asyncpg.connect(admin_dsn, timeout=10)
            try:
                await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            finally:
                await conn.close()


def script_model(tmp: Path, blocks: list[str], delay_ms: int) -> str:
    """The chat model: every turn answers with ``blocks`` (``{user_text}``: the batch's texts)
    after ``delay_ms``; the warm-up message at once."""
    path = tmp / "echo-script.json"
    reply = {"blocks": [{"type": "text", "text": text} for text in blocks]}
    script = {
        "name": "bench-echo",
        "rules": [{"match": "^warm-up$", "responses": [{"reply": "warm"}]}],
        "default": [{"reply": reply, "delay_ms": delay_ms}],
    }
    path.write_text(json.dumps(script), encoding="utf-8")
    return f"script:{path}"


def server_env(tmp: Path, database_url: str, vault_key: str, **settings: object) -> dict[str, str]:
    """None of the developer's FRONTDESK_* settings; these instead."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    env.update(
        FRONTDESK_DATABASE_URL=database_url,
        FRONTDESK_CONFIG=str(tmp / "no-config.toml"),  # ignore a frontdesk.toml in the cwd
        FRONTDESK_MEDIA_DIR=str(tmp / "media"),  # shared by the instances, like a network volume
        FRONTDESK_VAULT_KEY=vault_key,
        FRONTDESK_LOG_LEVEL="INFO",
        # Thousands of turns in minutes: past the default model budget, most would get the hold
        # message. A budget no run reaches still makes every turn claim it, as in production.
        FRONTDESK_MODEL_TURNS_PER_HOUR=str(10**9),
        FRONTDESK_MODEL_TURNS_PER_DAY=str(10**9),
    )
    env.update({f"FRONTDESK_{name.upper()}": str(value) for name, value in settings.items()})
    return env


async def prepare_database(env: dict[str, str], database_url: str, platforms: Iterable[Platform]) -> None:
    """``frontdesk db upgrade``, the demo business, and one channel account per platform (secrets
    sealed in the vault with the instances' key, outbound calls pointed at the fakes)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        "db",
        "upgrade",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        stdin=asyncio.subprocess.DEVNULL,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), HEALTH_TIMEOUT_S)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    if proc.returncode != 0:
        raise SystemExit(f"frontdesk db upgrade failed:\n{out.decode(errors='replace')[-3000:]}")
    db = Database.from_url(database_url, pool_size=1)
    try:
        clock = SystemClock()
        await seed_demo(db, clock)
        vault = Vault(db, MasterKeys.load(env["FRONTDESK_VAULT_KEY"], None), clock)
        for platform in platforms:
            await upsert_account(
                db,
                account_id=platform.account_id,
                tenant_id="demo",
                channel=platform.channel,
                name=f"bench {platform.name}",
                config=platform.config,
                secrets=platform.secrets,
                now=clock.now(),
                vault=vault,
                own_id=CHANNELS[platform.channel].own_id,
            )
    finally:
        await db.dispose()


def new_vault_key() -> str:
    return generate_key()


# -- the servers


def children_of(pid: int) -> set[int]:
    """Live processes whose parent is ``pid`` (Linux: from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rpartition(")")[2].split()[1]) == pid:
                found.add(int(stat.parent.name))
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """One ``frontdesk serve`` process; restarting it keeps its port (the load balancer's entry)."""

    name: str
    port: int
    log_path: Path
    proc: asyncio.subprocess.Process | None = None
    pids: list[int] = field(default_factory=list)  # its HTTP process, one per start
    # HTTP process pid -> the worker processes it started (whose pids the leases carry)
    children: dict[int, set[int]] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def start(self, env: dict[str, str]) -> None:
        with self.log_path.open("ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                CHILD,
                "serve",
                "--host",
                LOOPBACK,
                "--port",
                str(self.port),
                env=env,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL,
                start_new_session=True,  # ``kill`` takes its worker processes with it
            )
        self.pids.append(self.proc.pid)

    async def wait_healthy(self) -> float:
        """Seconds until ``/healthz`` answered 200 (bounded); its worker processes are running by
        then (``serve`` starts them before it listens), and are remembered."""
        started = time.monotonic()
        async with httpx2.AsyncClient(base_url=self.base, trust_env=False, timeout=2.0) as client:
            while time.monotonic() - started < HEALTH_TIMEOUT_S:
                if not self.alive:
                    code = self.proc.returncode if self.proc else None
                    raise SystemExit(f"{self.name} exited with {code} before it was healthy:\n{self.tail()}")
                with contextlib.suppress(httpx2.TransportError):
                    if (await client.get("/healthz")).status_code == 200:
                        self.family()
                        return time.monotonic() - started
                await asyncio.sleep(0.1)
        raise SystemExit(f"{self.name} not healthy within {HEALTH_TIMEOUT_S:.0f}s:\n{self.tail()}")

    def family(self) -> set[int]:
        """The pids of this start: its HTTP process and the worker processes it started."""
        if self.proc is None:
            return set()
        if self.proc.returncode is None:
            self.children.setdefault(self.proc.pid, set()).update(children_of(self.proc.pid))
        return {self.proc.pid, *self.children.get(self.proc.pid, set())}

    async def kill(self) -> None:
        """``kill -9`` of the whole instance (its HTTP process and its worker processes), as when
        its machine dies."""
        if self.proc is not None and self.proc.returncode is None:
            self.family()  # remembered: the turns it wrote are told apart afterwards
            os.killpg(self.proc.pid, signal.SIGKILL)
            await asyncio.wait_for(self.proc.wait(), 10)

    async def stop(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        self.proc.terminate()
        try:
            await asyncio.wait_for(self.proc.wait(), 25)
        except TimeoutError:
            self.proc.kill()
            await asyncio.wait_for(self.proc.wait(), 10)

    def tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""


@contextlib.asynccontextmanager
async def cluster(n: int, env: dict[str, str], tmp: Path, *, show_logs: bool) -> AsyncIterator[list[Server]]:
    """``n`` servers started in parallel and healthy; all stopped at the end, whatever happens."""
    servers = [Server(f"instance{i}", free_port(), tmp / f"instance{i}.log") for i in range(n)]
    try:
        for server in servers:
            await server.start(env)
        await asyncio.gather(*(s.wait_healthy() for s in servers))
        yield servers
    finally:
        await asyncio.gather(*(s.stop() for s in servers), return_exceptions=True)
        if show_logs:
            for s in servers:
                print(f"--- {s.name} (pids {s.pids}) ---\n{s.log_path.read_text(errors='replace')}", file=sys.stderr)


def http_client(connections: int = 200) -> httpx2.AsyncClient:
    """Idle connections are dropped after 1 s, well before uvicorn's 5 s keep-alive timeout closes
    them server-side (reusing a connection the server is closing fails with ReadError)."""
    limits = httpx2.Limits(max_connections=connections, max_keepalive_connections=connections, keepalive_expiry=1.0)
    return httpx2.AsyncClient(trust_env=False, timeout=30.0, limits=limits)


async def warm_up(client: httpx2.AsyncClient, servers: list[Server], timeout_s: float = 60.0) -> None:
    """One web chat message to each instance, answered before the measurement: a fresh process's
    first request opens its connections and compiles its queries (a load balancer, too, only sends
    traffic to an instance once it is ready)."""
    for i, server in enumerate(servers):
        session = f"warm-up-session-{i}-{len(server.pids)}"  # 16+ characters, as the API asks
        url = f"{server.base}/v1/webchat/{DEMO_WEBCHAT}/messages"
        response = await client.post(url, json={"session": session, "id": "w", "text": "warm-up"})
        if response.status_code != 202:
            raise SystemExit(f"warm-up on {server.name}: HTTP {response.status_code} {response.text[:300]}")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            transcript = await client.get(url, params={"session": session})
            if transcript.status_code == 200 and any(m["role"] == "assistant" for m in transcript.json()["messages"]):
                break
            await asyncio.sleep(0.2)
        else:
            raise SystemExit(f"warm-up on {server.name}: no reply within {timeout_s:.0f}s:\n{server.tail()}")


# -- webhooks


@dataclass
class Attempt:
    instance: int
    status: int | None  # None: no HTTP answer (connection refused or cut)
    answer: dict[str, Any] | str
    at: float  # monotonic time the answer (or the error) came back


async def post_webhook(client: httpx2.AsyncClient, server: Server, index: int, hook: Webhook, copy: int) -> Attempt:
    body, headers = hook.delivery(copy)
    try:
        response = await client.post(f"{server.base}{hook.path}", content=body, headers=headers)
    except httpx2.HTTPError as exc:
        return Attempt(index, None, f"{type(exc).__name__}: {root_cause(exc)}"[:200], time.monotonic())
    try:
        answer: dict[str, Any] | str = response.json()
    except ValueError:
        answer = response.text[:200]
    return Attempt(index, response.status_code, answer, time.monotonic())


def root_cause(exc: BaseException) -> str:
    """The innermost exception of a chain (httpx2's ReadError says nothing; the OSError does)."""
    seen: list[BaseException] = [exc]
    while (inner := seen[-1].__cause__ or seen[-1].__context__) is not None and len(seen) < 10:
        seen.append(inner)
    described = [f"{type(e).__name__}({e})" for e in seen[1:] if str(e)]
    return described[-1] if described else str(exc)


def acked(attempt: Attempt) -> bool:
    """The platform stops redelivering: a 2xx."""
    return attempt.status is not None and 200 <= attempt.status < 300


def answer_kind(attempt: Attempt) -> str:
    """``stored`` / ``duplicate`` / ``ignored`` for a 200 body, else the status (or ``no answer``)."""
    if attempt.status is None:
        return "no answer"
    if acked(attempt) and isinstance(attempt.answer, dict):
        for kind in ("stored", "duplicate", "ignored"):
            if attempt.answer.get(kind):
                return kind
    return str(attempt.status)


# -- running a bench


def run_main(main: Callable[[], Awaitable[int]]) -> None:
    """``asyncio.run`` with SIGTERM unwinding like Ctrl-C (servers stopped, database dropped)."""

    async def guarded() -> int:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        return await main()

    try:
        code = asyncio.run(guarded())
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("interrupted; servers stopped", file=sys.stderr)
        code = 130
    sys.exit(code)


def spread(values: list[int]) -> str:
    if not values:
        return "n/a"
    return f"mean {sum(values) / len(values):.2f} (min {min(values)}, max {max(values)})"
