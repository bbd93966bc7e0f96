"""Per-turn framework overhead with a zero-latency scripted model.

What it measures, per database backend (SQLite always; PostgreSQL with ``--postgres-url``):

* sequential phase: ``--turns`` turns (after a few warm-up turns), one at a time. A turn is
  ``Ingestor.ingest`` of one terminal-channel message (a new session for the first
  ``--sessions`` turns, then round-robin over those sessions) followed by
  ``runtime.assembler.process(conversation_id, owner)`` called directly, so the clock stops
  when the reply is committed and its delivery receipt is final. Printed: p50 / p99 / mean
  per-turn latency and sequential turns/s.
* database work: write and read transactions and SQL statements per sequential turn, and the
  ingest call's share of them (``Database.work``; BEGIN and COMMIT are not counted as statements).
* stage breakdown: the mean of each stage the turn records in ``turn_traces.latency_ms``
  (generation_ms = the model call through the generation loop, commit_ms, delivery_ms), plus the
  ingest call timed here and the rest ("lease, collect, history, trace"), and the share of the
  per-turn time spent in the model call.
* concurrent phase: the real ``JobRunner`` (``--workers`` workers, small poll interval) is
  started, ``--concurrent`` messages for as many new conversations are ingested at once, and
  the clock runs until every one of their delivery receipts is final (polled with SELECT count).
  Printed: turns/s.

The model replies "ok" instantly, the quiet window and the media timeout are 0, so everything
measured is frontdesk + database overhead. SQLite uses a fresh temp file; PostgreSQL uses a
throwaway database created in the server given by ``--postgres-url`` and dropped at the end.

Run:
    .venv/bin/python bench/turn_overhead.py
    .venv/bin/python bench/turn_overhead.py --turns 300 \
        --postgres-url postgresql+asyncpg://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import secrets
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from frontdesk.demo import seed_demo
from frontdesk.ingestion.events import InboundMessage
from frontdesk.platform.models.gateway import ModelGateway, PydanticAIClient
from frontdesk.platform.models.script import Script, script_model
from frontdesk.platform.store.engine import Database, DatabaseWork
from frontdesk.platform.store.migrate import upgrade
from frontdesk.platform.store.schema import Job, Receipt, TurnTrace
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings

ZERO_SCRIPT = {"name": "zero", "default": [{"reply": "ok"}]}
WARMUP_TURNS = 5
STAGES = ("generation_ms", "commit_ms", "delivery_ms")
FINAL_RECEIPT = ("sent", "partial", "failed")


@dataclass
class BackendResult:
    name: str
    latencies_ms: list[float] = field(default_factory=list)
    ingest_ms: list[float] = field(default_factory=list)
    seq_wall_s: float = 0.0
    seq_cpu_s: float = 0.0  # this process's CPU time over the sequential turns
    stages: dict[str, float] = field(default_factory=dict)  # mean ms per stage, sequential turns
    conc_stages: dict[str, float] = field(default_factory=dict)
    conc_turns: int = 0
    conc_wall_s: float = 0.0
    conc_cpu_s: float = 0.0
    conc_workers: int = 0
    receipts_not_sent: int = 0
    traces_missing: int = 0
    # The database work of the sequential turns (all of it, and the ingest calls' share).
    turn_work: DatabaseWork = field(default_factory=DatabaseWork)
    ingest_work: DatabaseWork = field(default_factory=DatabaseWork)

    @property
    def p50(self) -> float:
        return percentile(self.latencies_ms, 50)

    @property
    def p99(self) -> float:
        return percentile(self.latencies_ms, 99)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.latencies_ms)

    @property
    def seq_rate(self) -> float:
        return len(self.latencies_ms) / self.seq_wall_s if self.seq_wall_s else 0.0

    @property
    def conc_rate(self) -> float:
        return self.conc_turns / self.conc_wall_s if self.conc_wall_s else 0.0


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))  # ceil
    return ordered[int(rank) - 1]


def zero_gateway() -> ModelGateway:
    script = Script.model_validate(ZERO_SCRIPT)
    client = PydanticAIClient(script_model(script), "script:zero", timeout_s=30)
    return ModelGateway.with_clients({"chat": client})


def bench_settings(database_url: str, args: argparse.Namespace) -> Settings:
    return Settings(
        database_url=database_url,
        quiet_window_s=0.0,
        media_ready_timeout_s=0.0,
        workers=args.workers,
        poll_interval_s=args.poll_interval,
        sweeper_interval_s=3600.0,  # no sweeps during the measurement
        model_timeout_s=30.0,
        # More turns than the default budget allows an hour; each still claims it, as in production.
        model_turns_per_hour=10**9,
        model_turns_per_day=10**9,
    )


def monitor_engine(database_url: str) -> AsyncEngine:
    """A plain engine for the progress polls: on SQLite it reads without ``BEGIN IMMEDIATE``,
    so polling does not take the write lock the workers are competing for."""
    if make_url(database_url).get_backend_name() == "sqlite":
        return create_async_engine(database_url)
    return create_async_engine(database_url, pool_size=1, max_overflow=0)


async def scalar(engine: AsyncEngine, query: Any) -> int:
    async with engine.connect() as conn:
        return int((await conn.scalar(query)) or 0)


async def stage_means(
    db: Database, after_trace_id: int, until_trace_id: int | None = None
) -> tuple[dict[str, float], int]:
    async with db.transaction() as session:
        query = select(TurnTrace.latency_ms).where(TurnTrace.id > after_trace_id)
        if until_trace_id is not None:
            query = query.where(TurnTrace.id <= until_trace_id)
        rows = list(await session.scalars(query))
    means: dict[str, float] = {}
    missing = sum(1 for r in rows if not all(s in r for s in STAGES))
    for stage in STAGES:
        values = [float(r[stage]) for r in rows if stage in r]
        means[stage] = statistics.fmean(values) if values else float("nan")
    return means, missing


async def max_id(db: Database, model: Any) -> int:
    async with db.transaction() as session:
        return int(await session.scalar(select(func.max(model.id))) or 0)


async def run_backend(name: str, database_url: str, args: argparse.Namespace) -> BackendResult:
    result = BackendResult(name)
    db = Database.from_url(database_url)
    await upgrade(db)
    runtime = Runtime.build(bench_settings(database_url, args), gateway=zero_gateway(), db=db)
    monitor = monitor_engine(database_url)
    try:
        accounts = await seed_demo(db, runtime.clock, runtime.channel_deps.media)
        account = accounts.terminal_id
        run = secrets.token_hex(3)
        counter = 0

        async def one_turn(session: str) -> tuple[float, float, DatabaseWork, DatabaseWork]:
            nonlocal counter
            counter += 1
            w0 = db.work.copy()
            t0 = time.perf_counter()
            ingested = await runtime.ingestor.ingest(
                InboundMessage(
                    channel_account_id=account,
                    contact_external_id=session,
                    channel_message_id=f"{session}:{counter}",
                    text=f"hello #{counter}",
                )
            )
            t1 = time.perf_counter()
            w1 = db.work.copy()
            turns = await runtime.assembler.process(ingested.conversation_id, f"bench/{run}")
            t2 = time.perf_counter()
            if turns != 1:
                raise RuntimeError(f"expected one turn for {session}, ran {turns}")
            return (t2 - t0) * 1000, (t1 - t0) * 1000, db.work - w0, w1 - w0

        # -- sequential
        for i in range(WARMUP_TURNS):
            await one_turn(f"warm-{run}-{i}")
        first_trace = await max_id(db, TurnTrace)
        first_receipt = await max_id(db, Receipt)
        started, cpu_started = time.perf_counter(), time.process_time()
        for i in range(args.turns):
            total_ms, ingest_ms, turn_work, ingest_work = await one_turn(f"seq-{run}-{i % args.sessions}")
            result.latencies_ms.append(total_ms)
            result.ingest_ms.append(ingest_ms)
            result.turn_work += turn_work
            result.ingest_work += ingest_work
        result.seq_wall_s = time.perf_counter() - started
        result.seq_cpu_s = time.process_time() - cpu_started
        result.stages, result.traces_missing = await stage_means(db, first_trace)
        result.receipts_not_sent = await scalar(
            monitor,
            select(func.count()).select_from(Receipt).where(Receipt.id > first_receipt, Receipt.status != "sent"),
        )

        # The sequential turns were run directly, so their ingest-enqueued jobs are still queued:
        # retire them so the workers below only see the concurrent phase's jobs.
        async with db.transaction() as session:
            await session.execute(update(Job).where(Job.status == "queued").values(status="done"))

        # -- concurrent
        result.conc_workers = args.workers
        conc_first_trace = await max_id(db, TurnTrace)
        conc_first_receipt = await max_id(db, Receipt)
        runtime.runner.start()
        await asyncio.sleep(0.05)  # workers idle, waiting for work
        messages = [
            InboundMessage(
                channel_account_id=account,
                contact_external_id=f"conc-{run}-{i}",
                channel_message_id=f"conc-{run}-{i}:1",
                text=f"hello concurrent #{i}",
            )
            for i in range(args.concurrent)
        ]
        final = (
            select(func.count())
            .select_from(Receipt)
            .where(Receipt.id > conc_first_receipt, Receipt.status.in_(FINAL_RECEIPT))
        )
        started, cpu_started = time.perf_counter(), time.process_time()
        await asyncio.gather(*(runtime.ingestor.ingest(m) for m in messages))
        deadline = started + args.timeout
        done = 0
        while time.perf_counter() < deadline:
            done = await scalar(monitor, final)
            if done >= args.concurrent:
                break
            await asyncio.sleep(0.01)
        result.conc_wall_s = time.perf_counter() - started
        result.conc_cpu_s = time.process_time() - cpu_started
        result.conc_turns = done
        await runtime.runner.stop()
        if done < args.concurrent:
            print(f"  [{name}] concurrent phase timed out: {done}/{args.concurrent} receipts final", file=sys.stderr)
        result.conc_stages, _ = await stage_means(db, conc_first_trace)
    finally:
        await runtime.close()
        await monitor.dispose()
    return result


# -- PostgreSQL throwaway database


def _asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def create_pg_database(admin_url: str) -> tuple[str, str]:
    import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type stubs

    name = f"frontdesk_bench_{secrets.token_hex(4)}"
    conn = await asyncpg.connect(_asyncpg_dsn(admin_url))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return name, make_url(admin_url).set(database=name).render_as_string(hide_password=False)


async def drop_pg_database(admin_url: str, name: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(_asyncpg_dsn(admin_url))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


# -- report


def print_report(results: list[BackendResult], args: argparse.Namespace) -> None:
    names = [r.name for r in results]
    width = max(12, *(len(n) + 2 for n in names))

    def row(label: str, values: list[str]) -> None:
        print(f"  {label:<42}" + "".join(f"{v:>{width}}" for v in values))

    print()
    print(
        f"frontdesk turn overhead — zero-latency script model, quiet window 0, "
        f"{args.turns} sequential turns over {args.sessions} sessions "
        f"(+{WARMUP_TURNS} warm-up), {args.concurrent} concurrent turns"
    )
    load = os.getloadavg()
    print(f"host: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end")
    row("", names)
    row("sequential p50 (ms)", [f"{r.p50:.2f}" for r in results])
    row("sequential p99 (ms)", [f"{r.p99:.2f}" for r in results])
    row("sequential mean (ms)", [f"{r.mean:.2f}" for r in results])
    row("sequential turns/s", [f"{r.seq_rate:.1f}" for r in results])
    row("sequential CPU ms/turn (this process)", [f"{1000 * r.seq_cpu_s / len(r.latencies_ms):.2f}" for r in results])
    for label, pick in (
        ("write transactions/turn (of which ingest)", lambda w: w.write_transactions),
        ("read transactions/turn (of which ingest)", lambda w: w.read_transactions),
        ("SQL statements/turn (of which ingest)", lambda w: w.statements),
    ):
        row(
            label,
            [
                f"{pick(r.turn_work) / len(r.latencies_ms):.1f} ({pick(r.ingest_work) / len(r.latencies_ms):.1f})"
                for r in results
            ],
        )
    row("concurrent turns/s", [f"{r.conc_rate:.1f}" for r in results])
    row("  (workers, turns done, wall s)", [f"{r.conc_workers},{r.conc_turns},{r.conc_wall_s:.2f}" for r in results])
    row("concurrent CPU ms/turn (this process)", [f"{1000 * r.conc_cpu_s / max(r.conc_turns, 1):.2f}" for r in results])
    print("  mean per sequential turn (ms):")
    for r in results:
        r.stages["ingest_ms"] = statistics.fmean(r.ingest_ms)
        accounted = sum(r.stages[s] for s in ("ingest_ms", *STAGES))
        r.stages["other_ms"] = r.mean - accounted
    for label, key in (
        ("ingest (message + job rows)", "ingest_ms"),
        ("model call (generation_ms)", "generation_ms"),
        ("commit reply (commit_ms)", "commit_ms"),
        ("delivery + receipt (delivery_ms)", "delivery_ms"),
        ("lease, collect, history, trace (rest)", "other_ms"),
    ):
        row(f"  {label}", [f"{r.stages[key]:.2f}" for r in results])
    row("  model call share of turn", [f"{100 * r.stages['generation_ms'] / r.mean:.1f}%" for r in results])
    print("  mean per concurrent turn, from traces (ms):")
    for key in STAGES:
        row(f"  {key}", [f"{r.conc_stages.get(key, float('nan')):.2f}" for r in results])
    problems = [f"{r.name}: {r.receipts_not_sent} receipts not 'sent'" for r in results if r.receipts_not_sent]
    problems += [f"{r.name}: {r.traces_missing} traces without stage timings" for r in results if r.traces_missing]
    for problem in problems:
        print(f"  WARNING {problem}")
    by_name = {r.name: r for r in results}
    if "sqlite" in by_name and "postgresql" in by_name:
        sq, pg = by_name["sqlite"], by_name["postgresql"]
        print(
            f"  ratio PostgreSQL/SQLite: p50 {pg.p50 / sq.p50:.2f}x, mean {pg.mean / sq.mean:.2f}x, "
            f"concurrent turns/s {pg.conc_rate / sq.conc_rate:.2f}x"
        )


async def main_async(args: argparse.Namespace) -> int:
    results: list[BackendResult] = []
    with tempfile.TemporaryDirectory(prefix="frontdesk-bench-") as tmp:
        sqlite_url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        print(f"sqlite: {args.turns} turns ...", file=sys.stderr)
        results.append(await run_backend("sqlite", sqlite_url, args))
    if args.postgres_url:
        name, url = await create_pg_database(args.postgres_url)
        print(f"postgresql (database {name}): {args.turns} turns ...", file=sys.stderr)
        try:
            results.append(await run_backend("postgresql", url, args))
        finally:
            await drop_pg_database(args.postgres_url, name)
    print_report(results, args)
    incomplete = [r for r in results if r.conc_turns < args.concurrent or r.receipts_not_sent]
    return 1 if incomplete else 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    parser.add_argument("--turns", type=int, default=300, help="sequential turns per backend (default 300)")
    parser.add_argument(
        "--sessions", type=int, default=50, help="sessions the sequential turns rotate over (default 50)"
    )
    parser.add_argument(
        "--concurrent", type=int, default=200, help="turns enqueued at once in the concurrent phase (default 200)"
    )
    parser.add_argument("--workers", type=int, default=4, help="JobRunner workers in the concurrent phase (default 4)")
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=0.05,
        help="JobRunner idle poll interval, s (default 0.05; ingest wakes workers in-process anyway)",
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="bound on the concurrent phase, seconds (default 60)"
    )
    parser.add_argument(
        "--postgres-url",
        help="also run on PostgreSQL: a server URL (postgresql+asyncpg://...); "
        "a throwaway database is created in it and dropped",
    )
    args = parser.parse_args(argv)
    if args.turns < 1 or args.sessions < 1 or args.concurrent < 1 or args.workers < 1:
        parser.error("--turns, --sessions, --concurrent and --workers must be >= 1")
    if args.postgres_url and make_url(args.postgres_url).get_backend_name() != "postgresql":
        parser.error("--postgres-url must be a postgresql+asyncpg:// URL")
    return args


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("alembic", "sqlalchemy", "httpx", "pydantic_ai"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    sys.exit(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()
