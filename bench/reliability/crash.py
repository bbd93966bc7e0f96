"""Crash: ``kill -9`` one instance while hundreds of turns are in flight, then restart it.

Starts ``--instances`` (default 3) real ``frontdesk serve`` processes on a scratch PostgreSQL
database (or one on a temp SQLite file with ``--backend sqlite``: the only instance is the one
killed), a script chat model that answers each turn after ``--model-delay-ms`` with two blocks
("got: <the batch's texts>" and "(2/2) ..."), and the Telegram, Messenger, WhatsApp and LINE APIs
faked on loopback, each call taking ``--send-delay-ms`` (so some kills land mid-delivery).

``--conversations`` customers (spread over the four platforms) each send a burst of
``--messages`` messages in the platform's real, signed payload format, to instances in turn. Once
at least ``--min-in-flight`` conversations have messages stored but not yet answered, and some
instance is inside a turn, the instance running the most turns is killed with SIGKILL. While it
is down, ``--followups`` customers write again; webhooks that reach the dead instance (or get a
5xx) are redelivered to the next one after a short backoff, as the platforms do. After
``--down-s`` it is restarted on the same port. Leases are ``--lease-s`` (production: 30/60 s).

Prints one line per figure:

* the kill: when, which instance, turns in flight (and running on it);
* inbound messages lost: acknowledged but not stored, never processed, or processed without a
  reply (must be 0);
* turns answered more than once: a customer message quoted by two replies in the database, or
  shown twice at a platform (must be 0);
* interrupted sends left visible as ``sending``/``partial``: counted, each one listed (by
  design these are never resent by themselves: an operator replays them);
* time to recover: kill until the messages of every turn the victim was running are answered
  (lease expiry + sweep + a new model call); time to drain (every message stored before the kill
  answered: mostly the backlog) and time to idle;
* what became of the turns the victim was running, replies to the wrong customer (must be 0),
  server errors other than 503 (must be 0), receipts, dead jobs.

Exits 1 on a loss, a double answer, a misdelivery or a 5xx other than 503; 2 if the run could not
be completed as asked (fewer turns in flight than ``--min-in-flight``, not idle in time).

Only 127.0.0.1 is contacted; every wait is bounded; the servers are stopped and the scratch
database dropped at the end, also on failure or Ctrl-C. The workload is fixed by ``--seed``.

Run:
    .venv/bin/python bench/reliability/crash.py
    .venv/bin/python bench/reliability/crash.py --quick
    .venv/bin/python bench/reliability/crash.py --backend sqlite --min-in-flight 100
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
from common import (
    Attempt,
    Server,
    acked,
    add_common_arguments,
    answer_kind,
    cluster,
    finish_common_arguments,
    http_client,
    new_vault_key,
    post_webhook,
    prepare_database,
    run_main,
    scratch_database,
    script_model,
    server_env,
    spread,
    warm_up,
)
from fakes import Fleet, Shown, refused, visible
from outcome import ANSWER, TAIL, Expected, Outcome, analyse, counts, describe, listing
from payloads import Platform, Webhook, platforms, tokens_in
from queries import (
    Reply,
    UserRow,
    dead_jobs,
    leases,
    monitor_engine,
    processed_at,
    replies,
    sending,
    still_unprocessed,
    turn_workers,
    unprocessed,
    user_rows,
    wait_idle,
)
from sqlalchemy.ext.asyncio import AsyncEngine

BACKOFF_S = (0.25, 0.5, 1.0, 2.0)  # then 2 s until acknowledged or --timeout
INTERRUPTED = ("sending", "partial")


@dataclass
class Message:
    hook: Webhook
    instance: int  # where it is sent first
    at: float  # seconds after the first webhook
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def acked(self) -> bool:
        return any(acked(a) for a in self.attempts)


async def deliver(client: httpx2.AsyncClient, servers: list[Server], m: Message, deadline: float) -> None:
    """POST until a 2xx, moving on to the next instance after no answer or a 5xx (a platform's
    redelivery behind a load balancer), bounded by ``deadline``."""
    index = m.instance
    for n in range(10_000):
        attempt = await post_webhook(client, servers[index], index, m.hook, min(n, 1))
        m.attempts.append(attempt)
        if acked(attempt) or (attempt.status is not None and attempt.status < 500):
            return  # acknowledged, or refused for good (a 4xx: reported, never retried)
        if time.monotonic() > deadline:
            return
        await asyncio.sleep(BACKOFF_S[min(n, len(BACKOFF_S) - 1)])
        index = (index + 1) % len(servers)


@dataclass
class Kill:
    victim: int
    pids: set[int]  # the killed instance's processes
    at: float  # monotonic
    wall: datetime
    after_s: float  # since the first webhook
    in_flight: int  # conversations with stored, unanswered messages
    running: list[str]  # conversations whose turn the victim held
    pending: list[tuple[int, str]]  # (message, conversation) unanswered at the kill
    unacked: int  # first-wave webhooks not acknowledged yet
    delivering: int  # of the victim's turns, those with a reply on its way to the platform

    @property
    def pending_ids(self) -> list[int]:
        return [mid for mid, _ in self.pending]

    @property
    def victim_pending_ids(self) -> list[int]:
        """The unanswered messages of the conversations whose turn the victim held."""
        running = set(self.running)
        return [mid for mid, cid in self.pending if cid in running]


async def kill_when_busy(
    engine: AsyncEngine,
    servers: list[Server],
    accounts: list[str],
    args: argparse.Namespace,
    burst_done: asyncio.Event,
    first_wave: list[Message],
    started: float,
) -> Kill:
    """SIGKILL an instance inside its turns once ``--min-in-flight`` conversations wait for an
    answer (or once the first wave is in and that is as busy as it gets): preferably at a moment
    when it is delivering a reply (within ``--aim-s``), else the one running the most turns."""
    deadline = time.monotonic() + args.timeout
    best = 0
    ready_since: float | None = None
    while time.monotonic() < deadline:
        pending = await unprocessed(engine, accounts)
        in_flight = len({cid for _, cid in pending})
        held = await leases(engine, accounts)
        delivering = await sending(engine, accounts) if held else set()
        current = {pid: i for i, s in enumerate(servers) for pid in s.family()}
        running = Counter(current[pid] for pid in held.values() if pid in current)
        mid_delivery = Counter(current[pid] for cid, pid in held.items() if pid in current and cid in delivering)
        if ready_since is None and (in_flight >= args.min_in_flight or (burst_done.is_set() and in_flight < best)):
            ready_since = time.monotonic()
        best = max(best, in_flight)
        aimed = ready_since is not None and (mid_delivery or time.monotonic() - ready_since > args.aim_s)
        if aimed and running:
            victim, _ = max((mid_delivery or running).items(), key=lambda i: (i[1], running[i[0]], -i[0]))
            pids = servers[victim].family()
            kill = Kill(
                victim=victim,
                pids=pids,
                at=time.monotonic(),
                wall=datetime.now(UTC),
                after_s=time.monotonic() - started,
                in_flight=in_flight,
                running=sorted(cid for cid, owner in held.items() if owner in pids),
                pending=pending,
                unacked=sum(1 for m in first_wave if not m.acked),
                delivering=mid_delivery[victim],
            )
            await servers[victim].kill()
            return kill
        await asyncio.sleep(0.05)
    raise SystemExit(f"no instance was inside a turn within {args.timeout:.0f}s; nothing to kill")


async def wait_answered(engine: AsyncEngine, message_ids: list[int], since: float, timeout_s: float) -> float | None:
    """Seconds from ``since`` until every one of ``message_ids`` is processed (None: not in time)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if await still_unprocessed(engine, message_ids) == 0:
            return time.monotonic() - since
        await asyncio.sleep(0.1)
    return None


@dataclass
class Run:
    """Everything one run measured."""

    servers: list[Server]
    kill: Kill
    first_wave: list[Message]
    followups: list[Message]
    down_s: float  # kill until the restarted victim answered /healthz
    healthy_s: float  # its restart until then
    recover_s: float | None
    drain_s: float | None
    idle: tuple[bool, int, int]
    idle_s: float
    shown: list[Shown]
    rows: list[UserRow]
    replies: list[Reply]
    outcome: Outcome
    workers: dict[int, int]  # turn id -> pid
    answered_at: dict[int, datetime | None]  # the messages waiting at the kill -> when answered
    dead: int
    refusals: dict[str, int]

    @property
    def messages(self) -> list[Message]:
        return self.first_wave + self.followups


def bursts(args: argparse.Namespace, accounts: list[Platform], n: int, run: str) -> list[Message]:
    """Customer c (on platform c mod 4) sends its burst at c x span / conversations, to instance
    (c + k) mod n for its message k."""
    return [
        Message(
            accounts[c % len(accounts)].webhook(c // len(accounts), k, run),
            (c + k) % n,
            c * args.post_span_s / args.conversations + k * 0.1,
        )
        for c in range(args.conversations)
        for k in range(args.messages)
    ]


async def run_crash(args: argparse.Namespace, tmp: Path, fleet: Fleet, rng: random.Random) -> Run:
    run = f"{args.seed:03d}{rng.randrange(16**3):03x}"
    accounts = platforms(rng, fleet.bases)
    ids = [p.account_id for p in accounts]
    async with scratch_database(args, tmp, "crash") as url:
        blocks = [ANSWER + "{user_text}", TAIL + "end of the reply to: {user_text}"]
        env = server_env(
            tmp,
            url,
            new_vault_key(),
            model_chat=script_model(tmp, blocks, args.model_delay_ms),
            quiet_window_s=args.quiet_window,
            workers=args.workers,
            lease_ttl_s=args.lease_s,
            job_lease_s=args.lease_s,
            sweeper_interval_s=1.0,
            poll_interval_s=0.5,
        )
        await prepare_database(env, url, accounts)
        engine = monitor_engine(url)
        try:
            async with (
                cluster(args.instances, env, tmp, show_logs=args.server_log) as servers,
                http_client(connections=args.conversations * args.messages + 50) as client,
            ):
                await warm_up(client, servers)
                first_wave = bursts(args, accounts, len(servers), run)
                started = time.monotonic()
                deadline = started + args.timeout
                burst_done = asyncio.Event()

                async def post_at(m: Message) -> None:
                    await asyncio.sleep(max(0.0, started + m.at - time.monotonic()))
                    await deliver(client, servers, m, deadline)

                async def post_all(messages: list[Message], done: asyncio.Event | None = None) -> None:
                    await asyncio.gather(*(post_at(m) for m in messages))
                    if done is not None:
                        done.set()

                background: list[asyncio.Task[Any]] = [asyncio.create_task(post_all(first_wave, burst_done))]
                try:
                    kill = await kill_when_busy(engine, servers, ids, args, burst_done, first_wave, started)
                    # While the victim is down, some customers write again; some of it is sent to it first.
                    chosen = sorted(rng.sample(range(args.conversations), min(args.followups, args.conversations)))
                    gap = args.down_s / max(1, len(chosen))
                    followups = [
                        Message(
                            accounts[c % len(accounts)].webhook(c // len(accounts), args.messages, run),
                            (c + args.messages) % len(servers),
                            kill.after_s + i * gap,
                        )
                        for i, c in enumerate(chosen)
                    ]
                    background += [
                        asyncio.create_task(post_all(followups)),
                        asyncio.create_task(wait_answered(engine, kill.victim_pending_ids, kill.at, args.timeout)),
                        asyncio.create_task(wait_answered(engine, kill.pending_ids, kill.at, args.timeout)),
                    ]
                    await asyncio.sleep(max(0.0, kill.at + args.down_s - time.monotonic()))
                    victim = servers[kill.victim]
                    await victim.start(env)
                    healthy_s = await victim.wait_healthy()
                    down_s = time.monotonic() - kill.at
                    _, _, recover_s, drain_s = await asyncio.wait_for(asyncio.gather(*background), args.timeout)
                finally:
                    for task in background:
                        task.cancel()
                idle = await wait_idle(engine, ids, args.timeout)
                idle_s = time.monotonic() - kill.at
                await asyncio.sleep(1.0 + args.send_delay_ms / 500)  # the last deliveries' platform calls
                messages = first_wave + followups
                expected = [Expected(m.hook.token, m.hook.platform, m.hook.customer) for m in messages if m.acked]
                shown = visible(fleet, {t: c for p in accounts for t, c in p.reply_tokens.items()})
                rows = await user_rows(engine, ids)
                assistant = await replies(engine, ids)
                return Run(
                    servers=servers,
                    kill=kill,
                    first_wave=first_wave,
                    followups=followups,
                    down_s=down_s,
                    healthy_s=healthy_s,
                    recover_s=recover_s,
                    drain_s=drain_s,
                    idle=idle,
                    idle_s=idle_s,
                    shown=shown,
                    rows=rows,
                    replies=assistant,
                    outcome=analyse(expected, rows, assistant, shown),
                    workers=await turn_workers(engine, [r.turn_id for r in assistant if r.turn_id is not None]),
                    answered_at=await processed_at(engine, kill.pending_ids),
                    dead=len(await dead_jobs(engine)),
                    refusals=refused(fleet),
                )
        finally:
            await engine.dispose()


def other_pending_ids(kill: Kill) -> list[int]:
    theirs = set(kill.victim_pending_ids)
    return [mid for mid in kill.pending_ids if mid not in theirs]


def waits(r: Run, message_ids: list[int]) -> str:
    """Median and max seconds from the kill until these messages were answered."""
    delays = sorted(
        (at - r.kill.wall).total_seconds() for mid in message_ids if (at := r.answered_at.get(mid)) is not None
    )
    if not delays:
        return "n/a"
    unanswered = len(message_ids) - len(delays)
    return (
        f"median {delays[len(delays) // 2]:.1f} s, max {delays[-1]:.1f} s over {len(delays)}"
        f"{f' ({unanswered} unanswered)' if unanswered else ''}"
    )


def victim_turns(r: Run) -> Counter[str]:
    """Who answered the messages waiting in the conversations whose turn the victim held."""
    victim = r.servers[r.kill.victim]
    pending_at_kill = set(r.kill.pending_ids)
    answered_by: Counter[str] = Counter()
    for conversation in r.kill.running:
        waiting = [row for row in r.rows if row.conversation_id == conversation and row.id in pending_at_kill]
        pids = {r.workers.get(row.turn_id) if row.turn_id is not None else None for row in waiting}
        if not waiting:
            answered_by["none left (its reply was committed, on its way)"] += 1
        elif None in pids:
            answered_by["nobody"] += 1
        elif r.kill.pids & pids:
            # A dead process commits nothing: it did in the instant between the bench's read and the kill.
            answered_by["itself, just before the kill"] += 1
        elif pids <= {victim.pids[-1], *victim.children.get(victim.pids[-1], set())}:
            answered_by["the restarted instance"] += 1
        else:
            answered_by["other instances"] += 1
    return answered_by


def report(args: argparse.Namespace, r: Run) -> int:
    """Print one line per figure; the exit code."""
    kill, outcome = r.kill, r.outcome
    victim = r.servers[kill.victim]
    attempts = [a for m in r.messages for a in m.attempts]
    retried = [m for m in r.messages if len(m.attempts) > 1]
    never_acked = [m.hook.token for m in r.messages if not m.acked]
    server_errors = [a for a in attempts if a.status is not None and a.status >= 500 and a.status != 503]
    rejected = [a for a in attempts if a.status is not None and 400 <= a.status < 500]
    interrupted = [x for x in outcome.undelivered if x.receipt_status in INTERRUPTED]
    failed = [x for x in outcome.undelivered if x.receipt_status not in INTERRUPTED]
    per_customer = Counter((x.account, x.customer) for x in r.replies if x.texts and x.texts[0].startswith(ANSWER))
    double = len(outcome.answered_twice) + len(outcome.duplicate_sends)

    def took(seconds: float | None) -> str:
        return f"{seconds:.1f} s" if seconds is not None else f"not within {args.timeout:.0f} s"

    print(
        f"crash: {args.instances} instance(s) on {args.backend}, {args.conversations} conversations over 4 platforms "
        f"x {args.messages} messages, model delay {args.model_delay_ms} ms, platform latency {args.send_delay_ms} ms "
        f"per call, lease {args.lease_s:g} s, quiet window {args.quiet_window:g} s, workers {args.workers}, "
        f"seed {args.seed}"
    )
    print(
        f"kill -9: {victim.name} (pids {sorted(kill.pids)}) {kill.after_s:.1f} s after the first webhook, "
        f"with {kill.in_flight} turns in flight ({len(kill.running)} running on it, "
        f"{kill.delivering} of them delivering; "
        f"{kill.unacked} first-wave webhooks not yet acknowledged)"
    )
    print(
        f"webhooks: {len(r.first_wave)} in bursts + {len(r.followups)} follow-ups while {victim.name} was down, "
        f"{len(attempts)} POSTs; {len(retried)} redelivered after no answer or a 5xx "
        f"(finally {counts(Counter(answer_kind(m.attempts[-1]) for m in retried))})"
    )
    print(f"restart: {victim.name} healthy {r.healthy_s:.1f} s after its restart (down {r.down_s:.1f} s in all)")
    print(
        f"inbound messages lost: {outcome.lost} (not stored {len(outcome.not_stored)}, never processed "
        f"{len(outcome.unprocessed)}, processed without a reply {len(outcome.unanswered)}; "
        f"never acknowledged {len(never_acked)})"
    )
    print(
        f"turns answered more than once: {double} (messages quoted by two replies {len(outcome.answered_twice)}, "
        f"shown twice at a platform {len(outcome.duplicate_sends)})"
    )
    print(
        f"interrupted sends left visible: {len(interrupted)} "
        f"({counts(Counter(x.receipt_status or '' for x in interrupted))})"
    )
    for reply in interrupted:
        print(f"  {describe(reply)}; the platform showed the customer: {what_was_shown(reply, r.shown)}")
    print(f"time to recover: {took(r.recover_s)} (kill -> the messages of every turn the victim was running answered)")
    print(f"time to drain: {took(r.drain_s)} (kill -> every message stored before the kill answered)")
    print(f"time to idle: {r.idle_s:.1f} s (kill -> no turn queued or running, every message answered)")
    print(
        f"wait after the kill for a reply, messages waiting at the kill: in the victim's turns "
        f"{waits(r, r.kill.victim_pending_ids)}, elsewhere {waits(r, other_pending_ids(r.kill))}"
    )
    print(
        f"turns the victim was running: {len(kill.running)} "
        f"(their waiting messages answered by {counts(victim_turns(r))})"
    )
    print(f"replies per customer: {spread(sorted(per_customer.values()))} over {len(per_customer)} customers")
    print(f"replies to the wrong customer: {len(outcome.wrong_customer)}")
    print(f"server errors (5xx other than 503): {len(server_errors)}")
    print(f"receipts: {counts(outcome.receipts)}")
    print(f"platform refusals: {r.refusals or 'none'}")
    print(f"dead jobs: {r.dead}")
    # The evidence behind a figure that is not 0.
    for label, tokens in (
        ("not stored", outcome.not_stored),
        ("never processed", outcome.unprocessed),
        ("processed without a reply", outcome.unanswered),
        ("quoted by two replies", outcome.answered_twice),
        ("never acknowledged", never_acked),
        ("replied to but never shown", outcome.not_shown),
    ):
        if tokens:
            print(listing(label, tokens))
    for message in outcome.duplicate_sends[:10]:
        print(f"  shown twice: {message.platform} {message.customer}: {message.text[:160]!r}")
    for message in outcome.wrong_customer[:10]:
        print(f"  wrong customer: {message.platform} {message.customer}: {message.text[:160]!r}")
    for reply in failed[:10]:
        print(f"  failed delivery: {describe(reply)}")
    for a in (server_errors + rejected)[:5]:
        print(f"  HTTP {a.status} from instance{a.instance}: {str(a.answer)[:200]}")

    musts = {
        "inbound messages lost": outcome.lost,
        "never acknowledged": len(never_acked),
        "turns answered more than once": double,
        "replies to the wrong customer": len(outcome.wrong_customer),
        "server errors": len(server_errors),
        "webhooks refused with a 4xx": len(rejected),
    }
    failures = [f"{name}: {value}" for name, value in musts.items() if value]
    setup: list[str] = []
    if kill.in_flight < args.min_in_flight:
        setup.append(f"only {kill.in_flight} turns in flight at the kill (asked for >= {args.min_in_flight})")
    idle, jobs, pending = r.idle
    if not idle:
        setup.append(f"not idle after {args.timeout:.0f}s: {jobs} turn jobs, {pending} unprocessed messages")
    if r.dead:
        setup.append(f"{r.dead} dead jobs")
    for failure in failures + setup:
        print(f"FAIL {failure}")
    print(f"result: {'FAIL' if failures or setup else 'PASS'}")
    return 1 if failures else 2 if setup else 0


def what_was_shown(reply: Reply, shown: list[Shown]) -> str:
    """Which of an interrupted reply's two blocks reached the customer (the database cannot know)."""
    quoted = set(tokens_in(reply.texts[0])) if reply.texts else set()
    theirs = [m for m in shown if m.customer == reply.customer and quoted & set(tokens_in(m.text))]
    blocks = [
        f"{label} {'yes' if any(m.text.startswith(p) for m in theirs) else 'no'}"
        for label, p in (("block 1", ANSWER), ("block 2", TAIL))
    ]
    return ", ".join(blocks)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    add_common_arguments(parser, instances=3)
    parser.add_argument(
        "--conversations", type=int, help="customers, spread over the platforms (default 240; --quick 40)"
    )
    parser.add_argument("--messages", type=int, default=2, help="messages per customer burst (default 2)")
    parser.add_argument(
        "--post-span-s", type=float, help="the bursts start within this many seconds (default 6; --quick 2)"
    )
    parser.add_argument("--min-in-flight", type=int, help="kill once this many turns wait (default 200; --quick 20)")
    parser.add_argument("--followups", type=int, help="customers writing again while the victim is down (default 1/4)")
    parser.add_argument(
        "--aim-s",
        type=float,
        default=10.0,
        help="once enough turns are in flight, wait up to this long for an instance to be mid-delivery (default 10)",
    )
    parser.add_argument("--down-s", type=float, default=3.0, help="seconds the victim stays dead (default 3)")
    parser.add_argument("--model-delay-ms", type=int, help="script model latency (default 4000; --quick 2000)")
    parser.add_argument("--send-delay-ms", type=int, default=250, help="fake platform latency per call (default 250)")
    parser.add_argument("--lease-s", type=float, default=5.0, help="lease_ttl_s and job_lease_s (default 5)")
    parser.add_argument("--quiet-window", type=float, default=1.0, help="FRONTDESK_QUIET_WINDOW_S (default 1.0)")
    args = parser.parse_args(argv)
    finish_common_arguments(parser, args, instances=3)
    args.conversations = args.conversations or (40 if args.quick else 240)
    args.post_span_s = args.post_span_s if args.post_span_s is not None else (2.0 if args.quick else 6.0)
    args.min_in_flight = args.min_in_flight if args.min_in_flight is not None else (20 if args.quick else 200)
    args.followups = args.followups if args.followups is not None else args.conversations // 4
    args.model_delay_ms = args.model_delay_ms or (2000 if args.quick else 4000)
    if args.conversations < 1 or args.messages < 1 or args.conversations > 4 * 999:
        parser.error("--conversations must be 1-3996, --messages >= 1")
    return args


def main() -> None:
    args = parse_args()

    async def bench() -> int:
        with tempfile.TemporaryDirectory(prefix="frontdesk-crash-") as tmp, Fleet(args.send_delay_ms / 1000) as fleet:
            return report(args, await run_crash(args, Path(tmp), fleet, random.Random(args.seed)))

    run_main(bench)


if __name__ == "__main__":
    main()
