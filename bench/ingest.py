"""Webhook acknowledgement over real HTTP: how fast a signed platform call gets its 200.

Starts ``frontdesk serve`` on a free 127.0.0.1 port (temp SQLite, or ``--database-url``),
creates a Telegram and a WhatsApp account with ``frontdesk accounts add``, then for each
platform posts ``--requests`` distinct, correctly signed message payloads (a new ``update_id`` /
``wamid`` each, from ``--senders`` customers) with ``--concurrency`` in flight, or, with ``--rate``,
open-loop: one request every 1/rate seconds whatever the answers (as platforms send), and prints:

* ack latency p50 / p99 (request sent → 200 received; open-loop: from the moment it was due, so
  a request the client could only send late counts its wait), in ms;
* sustained requests/s over the whole stream;
* the server's CPU per request (its processes' user + system time over the stream, from /proc;
  with ``--workers`` the turns' CPU is included);
* the server's database work per request: write and read transactions and SQL statements, from
  its ``/metrics`` (``frontdesk_db_*_total``) before and after the stream; with ``--workers`` the
  turns' work is included;
* the check that every payload was stored exactly once (message rows == requests) and that no
  request failed.

By default the server runs with ``--workers 0``: the figure is the acknowledgement path alone
(authenticate, parse, store the row and its turn job in one transaction). ``--workers 2``
also runs the turns (script model) on the same two cores, which is what a live server does.

Only 127.0.0.1 is contacted. Exits non-zero if a check fails.

Run:
    .venv/bin/python bench/ingest.py
    .venv/bin/python bench/ingest.py --requests 2000 --concurrency 32 --workers 2
    .venv/bin/python bench/ingest.py --rate 200 --requests 2000 --workers 2   # open-loop, turns running
    .venv/bin/python bench/ingest.py --database-url postgresql+asyncpg://postgres@127.0.0.1:5432/frontdesk_ingest
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx2
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import create_async_engine

ROOT = Path(__file__).resolve().parents[1]
FRONTDESK = str(Path(sys.executable).with_name("frontdesk"))
TELEGRAM_SECRET = "bench-telegram-secret"
WHATSAPP_APP_SECRET = "bench-whatsapp-app-secret"
PHONE_NUMBER_ID = "106540352242922"
SCRIPT = {"name": "bench", "default": [{"reply": "ok"}]}
METRICS_TOKEN = "bench-metrics-token-0123456789"
WORK = (
    ("write", 'frontdesk_db_transactions_total{intent="write"}'),
    ("read", 'frontdesk_db_transactions_total{intent="read"}'),
    ("statements", "frontdesk_db_statements_total"),
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def telegram_payload(i: int, senders: int) -> tuple[bytes, dict[str, str]]:
    chat = 700000000 + i % senders
    body = {
        "update_id": 900000000 + i,
        "message": {
            "message_id": 10 + i,
            "from": {"id": chat, "is_bot": False, "first_name": "Bench"},
            "chat": {"id": chat, "type": "private", "first_name": "Bench"},
            "date": 1767000000 + i,
            "text": f"Hi, do you print business cards? ({i})",
        },
    }
    return json.dumps(body).encode(), {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}


def whatsapp_payload(i: int, senders: int) -> tuple[bytes, dict[str, str]]:
    wa_id = str(16505550000 + i % senders)
    body = {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": "102290129340398",
                "changes": [
                    {
                        "field": "messages",
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {"display_phone_number": "15550783881", "phone_number_id": PHONE_NUMBER_ID},
                            "contacts": [{"profile": {"name": "Bench"}, "wa_id": wa_id}],
                            "messages": [
                                {
                                    "from": wa_id,
                                    "id": f"wamid.BENCH{i:012d}",
                                    "timestamp": str(1767000000 + i),
                                    "type": "text",
                                    "text": {"body": f"Hi, do you print flyers? ({i})"},
                                }
                            ],
                        },
                    }
                ],
            }
        ],
    }
    raw = json.dumps(body).encode()
    signature = "sha256=" + hmac.new(WHATSAPP_APP_SECRET.encode(), raw, hashlib.sha256).hexdigest()
    return raw, {"X-Hub-Signature-256": signature}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of ``pid`` and the processes it started (its worker processes),
    from /proc (Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(stat.parent.name) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


async def database_work(http: httpx2.AsyncClient) -> dict[str, float]:
    """The server's database counters, from its ``/metrics`` (the bearer of the metrics token)."""
    page = (await http.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})).text
    values = dict(line.rsplit(" ", 1) for line in page.splitlines() if line and not line.startswith("#"))
    return {name: float(values.get(series, "nan")) for name, series in WORK}


async def stream(
    base: str, path: str, make: Callable[[int, int], tuple[bytes, dict[str, str]]], args: argparse.Namespace
) -> dict[str, float]:
    payloads = [make(i, args.senders) for i in range(args.requests)]
    latencies: list[float] = []
    failures = 0
    in_flight = args.concurrency if args.rate is None else 1024  # open-loop: never held back by the client
    limits = httpx2.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
    async with httpx2.AsyncClient(base_url=base, timeout=30, limits=limits) as http:
        for raw, headers in (make(args.requests + k, args.senders) for k in range(5)):  # warm-up, not counted
            await http.post(path, content=raw, headers={**headers, "Content-Type": "application/json"})
        work_before = await database_work(http)
        cpu_before = cpu_seconds(args.server_pid)

        async def send(raw: bytes, headers: dict[str, str], due: float) -> None:
            nonlocal failures
            response = await http.post(path, content=raw, headers={**headers, "Content-Type": "application/json"})
            latencies.append((time.perf_counter() - due) * 1000)
            if response.status_code != 200:
                failures += 1

        started = time.perf_counter()
        if args.rate is None:
            queue: asyncio.Queue[tuple[bytes, dict[str, str]]] = asyncio.Queue()
            for payload in payloads:
                queue.put_nowait(payload)

            async def worker() -> None:
                while not queue.empty():
                    raw, headers = queue.get_nowait()
                    await send(raw, headers, time.perf_counter())

            await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        else:

            async def on_time(i: int, raw: bytes, headers: dict[str, str]) -> None:
                due = started + i / args.rate
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                await send(raw, headers, due)

            await asyncio.gather(*(on_time(i, raw, headers) for i, (raw, headers) in enumerate(payloads)))
        elapsed = time.perf_counter() - started
        work_after = await database_work(http)
        cpu = cpu_seconds(args.server_pid) - cpu_before
    work = {name: (work_after[name] - work_before[name]) / args.requests for name, _ in WORK}
    return {
        "p50": percentile(latencies, 0.50),
        "p99": percentile(latencies, 0.99),
        "rps": len(latencies) / elapsed,
        "failures": failures,
        "cpu_ms": cpu * 1000 / args.requests,
        **work,
    }


async def stored_messages(database_url: str, account: str) -> int:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            from frontdesk.platform.store.schema import Message

            return int(
                await connection.scalar(
                    select(func.count())
                    .select_from(Message)
                    .where(Message.channel_account_id == account, Message.role == "user")
                )
                or 0
            )
    finally:
        await engine.dispose()


async def reset_postgres(database_url: str) -> None:
    engine = create_async_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text("DROP SCHEMA public CASCADE"))
            await connection.execute(text("CREATE SCHEMA public"))
    finally:
        await engine.dispose()


def run_cli(env: dict[str, str], *args: str) -> None:
    done = subprocess.run([FRONTDESK, *args], env=env, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"frontdesk {' '.join(args[:2])} failed:\n{done.stderr.strip()}")


def start_server(args: argparse.Namespace, tmp: Path, database_url: str) -> tuple[subprocess.Popen[bytes], str]:
    """Migrate, create the two accounts, start ``frontdesk serve``; returns it and its base URL."""
    script = tmp / "script.json"
    script.write_text(json.dumps(SCRIPT))
    port = free_port()
    env = {
        **os.environ,
        "FRONTDESK_CONFIG": str(tmp / "none.toml"),
        "FRONTDESK_DATABASE_URL": database_url,
        "FRONTDESK_MEDIA_DIR": str(tmp / "media"),
        "FRONTDESK_MODEL_CHAT": f"script:{script}",
        "FRONTDESK_WORKERS": str(args.workers),
        **({} if args.worker_processes is None else {"FRONTDESK_WORKER_PROCESSES": str(args.worker_processes)}),
        "FRONTDESK_PORT": str(port),
        "FRONTDESK_METRICS_TOKEN": METRICS_TOKEN,  # /metrics on the public port, for the database counters
        "FRONTDESK_METRICS_PORT": "",  # and no listener of its own
    }
    nowhere = "api_base_url=http://127.0.0.1:9"  # replies (with --workers) fail fast instead of leaving the machine
    run_cli(env, "db", "upgrade")
    run_cli(env, "tenants", "add", "bench-shop", "--name", "Bench Shop")
    run_cli(env, "accounts", "add", "telegram", "--id", "bench-telegram", "--tenant", "bench-shop", "--config", nowhere,
            "--secret", f"webhook_secret={TELEGRAM_SECRET}", "--secret", "bot_token=1:bench")  # fmt: skip
    run_cli(env, "accounts", "add", "whatsapp", "--id", "bench-whatsapp", "--tenant", "bench-shop", "--config", nowhere,
            "--config", f"phone_number_id={PHONE_NUMBER_ID}",
            "--secret", f"app_secret={WHATSAPP_APP_SECRET}", "--secret", "access_token=bench")  # fmt: skip
    server = subprocess.Popen(
        [FRONTDESK, "serve"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return server, f"http://127.0.0.1:{port}"


async def measure(args: argparse.Namespace, base: str, database_url: str) -> bool:
    async with httpx2.AsyncClient(base_url=base) as http:
        for _ in range(200):
            try:
                if (await http.get("/healthz")).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            await asyncio.sleep(0.05)
    backend = "postgresql" if args.database_url else "sqlite"
    load = f"open-loop at {args.rate:g} requests/s" if args.rate is not None else f"{args.concurrency} in flight"
    print(
        f"{args.requests} signed requests per platform, {load}, {args.senders} senders, "
        f"{args.workers} turn workers"
        + ("" if args.worker_processes is None else f" in {args.worker_processes} worker processes")
        + f", {backend}"
    )
    work = "db work per request: write tx, read tx, statements" + (" (turns included)" if args.workers else "")
    print(f"{'platform':<10} {'ack p50':>9} {'ack p99':>9} {'req/s':>8} {'cpu/req':>8}  {'stored':<10} {work}")
    ok = True
    for name, path, make in (
        ("telegram", "/webhooks/telegram/bench-telegram", telegram_payload),
        ("whatsapp", "/webhooks/whatsapp/bench-whatsapp", whatsapp_payload),
    ):
        figures = await stream(base, path, make, args)
        stored = await stored_messages(database_url, f"bench-{name}")
        exact = stored == args.requests + 5 and figures["failures"] == 0  # + the 5 warm-up requests
        ok &= exact
        verdict = "" if exact else f"  FAILED ({int(figures['failures'])} non-200)"
        print(
            f"{name:<10} {figures['p50']:>7.1f}ms {figures['p99']:>7.1f}ms {figures['rps']:>8.0f} "
            f"{figures['cpu_ms']:>6.2f}ms  "
            f"{f'{stored - 5}/{args.requests}':<10} "
            f"{figures['write']:.2f}, {figures['read']:.2f}, {figures['statements']:.1f}{verdict}"
        )
    return ok


def main(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="frontdesk-ingest-"))
    database_url = args.database_url or f"sqlite+aiosqlite:///{tmp / 'bench.db'}"
    if args.database_url:
        asyncio.run(reset_postgres(database_url))
    server, base = start_server(args, tmp, database_url)
    args.server_pid = server.pid
    try:
        ok = asyncio.run(measure(args, base, database_url))
    finally:
        server.terminate()
        server.wait(10)
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rate", type=float, default=None, help="open-loop: requests per second, whatever the answers")
    parser.add_argument("--senders", type=int, default=200)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument(
        "--worker-processes", type=int, default=None, help="the server's (default: its own; 0: turns in HTTP)"
    )
    parser.add_argument("--database-url", default=None)
    sys.exit(main(parser.parse_args()))
