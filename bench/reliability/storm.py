"""Redelivery storm: every webhook delivered three times at once, to three different instances.

Starts ``--instances`` (default 3) real ``frontdesk serve`` processes on a scratch PostgreSQL
database (or one on a temp SQLite file with ``--backend sqlite``), with a script chat model that
echoes each turn's batch ("got: <texts>") and the Telegram, Messenger, WhatsApp and LINE APIs
faked on loopback ports (the doubles of ``tests/channels``). One channel account per platform,
its secrets sealed in the vault.

Then ``--customers`` customers per platform each send ``--messages`` messages, in the platform's
real payload format (its ``message__text.json`` fixture with new ids, sender and text), signed
with that account's secret. Customers start at random times; a customer's messages come with
random gaps, some inside the quiet window (one turn), some outside it (a new turn). Every
message is POSTed three times at the same instant, copy j to instance (s + j) mod N. A message
that got no 2xx at all is redelivered (up to 3 more times, as the platforms do). Once idle, every
message is delivered once more (a late redelivery).

Prints one line per figure:

* webhooks sent, and how they were answered (stored / duplicate / other statuses);
* duplicate message rows: customer message rows beyond one per message (must be 0);
* messages answered by two replies: a customer message quoted by two assistant messages in the
  database (must be 0);
* duplicate outbound sends: messages a fake platform accepted that answer a customer message
  already answered by an earlier one (must be 0);
* replies to the wrong customer: a reply quoting another customer's message (must be 0);
* lost messages: sent but not stored, stored but never processed, or processed without a reply
  (must be 0);
* replies not delivered: receipts not ``sent``, each listed with its error (must be 0: nothing
  here kills a process or fails a platform call on purpose);
* server errors: 5xx answers other than 503 (must be 0; 503 is the documented "database busy,
  redeliver" answer and is only counted);
* replies per conversation, receipts by status, platform refusals, dead jobs (must be 0);
* the late redelivery: new message rows and new sends (must be 0).

A POST that got no HTTP answer at all is counted and listed, not failed: the platform would
redeliver it, and its two other copies stand in for it.

Exits 1 if a must-be-0 figure is not 0, 2 if the run could not be completed (not idle in time).

Only 127.0.0.1 is contacted; every wait is bounded; the servers are stopped and the scratch
database dropped at the end, also on failure or Ctrl-C. The workload is fixed by ``--seed``.

Run:
    .venv/bin/python bench/reliability/storm.py
    .venv/bin/python bench/reliability/storm.py --quick
    .venv/bin/python bench/reliability/storm.py --backend sqlite
    .venv/bin/python bench/reliability/storm.py --instances 4 --customers 20 \
        --postgres postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

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
from fakes import Fleet, refused, visible
from outcome import ANSWER, Expected, Outcome, analyse, counts, describe, listing
from payloads import Platform, Webhook, platforms
from queries import dead_jobs, monitor_engine, replies, user_rows, wait_idle
from sqlalchemy.ext.asyncio import AsyncEngine

COPIES = 3
REDELIVERY_ROUNDS = 3


@dataclass
class Sent:
    platform: Platform
    customer_index: int
    k: int
    at: float  # seconds after the start of the stream
    first_instance: int
    attempts: list[Attempt] = field(default_factory=list)
    _hook: Webhook | None = None

    def build(self, run: str) -> None:
        """The payload, dated now (LINE reply tokens live a minute): built just before the stream."""
        self._hook = self.platform.webhook(self.customer_index, self.k, run)

    @property
    def hook(self) -> Webhook:
        assert self._hook is not None, "build() first"
        return self._hook


def workload(args: argparse.Namespace, accounts: list[Platform], rng: random.Random) -> list[Sent]:
    """Every message of every customer, with its send time and the instance of its first copy."""
    sent: list[Sent] = []
    for platform in accounts:
        for i in range(args.customers):
            at = rng.uniform(0, args.spread_s)
            for k in range(args.messages):
                if k:
                    inside = rng.random() < 0.5  # half the gaps fall inside the quiet window
                    at += (
                        rng.uniform(0.05, args.quiet_window * 0.4)
                        if inside
                        else rng.uniform(args.quiet_window + 0.4, args.quiet_window + 1.5)
                    )
                sent.append(Sent(platform, i, k, at, rng.randrange(args.instances)))
    return sorted(sent, key=lambda s: s.at)


async def storm(client: httpx2.AsyncClient, servers: list[Server], messages: list[Sent]) -> float:
    """Each message's three copies at once, at its time. Returns the stream's duration."""
    n = len(servers)
    started = time.monotonic()

    async def fire(s: Sent) -> None:
        await asyncio.sleep(max(0.0, started + s.at - time.monotonic()))
        copies = [
            post_webhook(client, servers[(s.first_instance + j) % n], (s.first_instance + j) % n, s.hook, j)
            for j in range(COPIES)
        ]
        s.attempts += await asyncio.gather(*copies)

    await asyncio.gather(*(fire(s) for s in messages))
    return time.monotonic() - started


async def redeliver_unacked(client: httpx2.AsyncClient, servers: list[Server], messages: list[Sent]) -> int:
    """What a platform does with a message no copy of which got a 2xx: send it again, later."""
    redelivered = 0
    for round_ in range(REDELIVERY_ROUNDS):
        pending = [s for s in messages if not any(acked(a) for a in s.attempts)]
        if not pending:
            break
        await asyncio.sleep(1.0 + round_)
        redelivered += len(pending)
        targets = [(s.first_instance + round_) % len(servers) for s in pending]
        attempts = await asyncio.gather(
            *(post_webhook(client, servers[i], i, s.hook, COPIES) for s, i in zip(pending, targets, strict=True))
        )
        for s, attempt in zip(pending, attempts, strict=True):
            s.attempts.append(attempt)
    return redelivered


async def tally(engine: AsyncEngine, accounts: list[Platform], messages: list[Sent], fleet: Fleet) -> Outcome:
    ids = [p.account_id for p in accounts]
    expected = [Expected(s.hook.token, s.hook.platform, s.hook.customer) for s in messages]
    shown = visible(fleet, {t: c for p in accounts for t, c in p.reply_tokens.items()})
    return analyse(expected, await user_rows(engine, ids), await replies(engine, ids), shown)


@dataclass
class Run:
    """Everything one run measured: the outcome once idle, and again after the late redelivery."""

    accounts: list[Platform]
    messages: list[Sent]
    duration_s: float
    redelivered: int
    idle: tuple[bool, int, int]
    before: Outcome
    late: list[Attempt]
    idle_after: bool
    after: Outcome
    dead: int
    refusals: dict[str, int]


async def run_storm(args: argparse.Namespace, tmp: Path, fleet: Fleet, rng: random.Random) -> Run:
    run = f"{args.seed:03d}{rng.randrange(16**3):03x}"
    accounts = platforms(rng, fleet.bases)
    ids = [p.account_id for p in accounts]
    messages = workload(args, accounts, rng)
    async with scratch_database(args, tmp, "storm") as url:
        model = script_model(tmp, [ANSWER + "{user_text}"], args.model_delay_ms)
        env = server_env(
            tmp, url, new_vault_key(), model_chat=model, quiet_window_s=args.quiet_window, workers=args.workers
        )
        await prepare_database(env, url, accounts)
        engine = monitor_engine(url)
        try:
            async with (
                cluster(args.instances, env, tmp, show_logs=args.server_log) as servers,
                http_client(connections=len(messages) * COPIES + 10) as client,
            ):
                await warm_up(client, servers)
                for s in messages:
                    s.build(run)
                duration_s = await storm(client, servers, messages)
                redelivered = await redeliver_unacked(client, servers, messages)
                idle = await wait_idle(engine, ids, args.timeout)
                await asyncio.sleep(1.0)  # the last deliveries' platform calls
                before = await tally(engine, accounts, messages, fleet)

                # Once everything is answered, every message once more (a platform retrying late).
                targets = [rng.randrange(len(servers)) for _ in messages]
                late = await asyncio.gather(
                    *(
                        post_webhook(client, servers[i], i, s.hook, COPIES)
                        for s, i in zip(messages, targets, strict=True)
                    )
                )
                await asyncio.sleep(args.quiet_window + args.model_delay_ms / 1000 + 1.0)
                idle_after, _, _ = await wait_idle(engine, ids, args.timeout)
                await asyncio.sleep(1.0)
                return Run(
                    accounts=accounts,
                    messages=messages,
                    duration_s=duration_s,
                    redelivered=redelivered,
                    idle=idle,
                    before=before,
                    late=list(late),
                    idle_after=idle_after,
                    after=await tally(engine, accounts, messages, fleet),
                    dead=len(await dead_jobs(engine)),
                    refusals=refused(fleet),
                )
        finally:
            await engine.dispose()


def report(args: argparse.Namespace, r: Run) -> int:
    """Print one line per figure; the exit code."""
    before, after = r.before, r.after
    attempts = [a for s in r.messages for a in s.attempts]
    server_errors = [a for a in attempts if a.status is not None and a.status >= 500 and a.status != 503]
    no_answer = Counter(str(a.answer).split(":")[0] for a in attempts if a.status is None)
    per_platform = Counter(s.hook.platform for s in r.messages)
    musts = {
        "duplicate message rows": before.duplicate_rows,
        "messages answered by two replies": len(before.answered_twice),
        "duplicate outbound sends": len(before.duplicate_sends),
        "replies to the wrong customer": len(before.wrong_customer),
        "lost messages": before.lost,
        "replies not delivered": len(before.undelivered),
        "server errors": len(server_errors),
        "dead jobs": r.dead,
        "late redelivery: new message rows": after.rows - before.rows,
        "late redelivery: new sends": after.shown - before.shown,
    }

    print(
        f"storm: {args.instances} instance(s) on {args.backend}, {args.customers} customers per platform "
        f"({', '.join(f'{p.name} {per_platform[p.name]}' for p in r.accounts)} messages), "
        f"{COPIES} concurrent copies per message, quiet window {args.quiet_window:g} s, "
        f"model delay {args.model_delay_ms} ms, seed {args.seed}"
    )
    unacked = f", + {r.redelivered} redeliveries of unacknowledged messages" if r.redelivered else ""
    print(
        f"webhooks sent: {len(attempts)} ({len(r.messages)} messages x {COPIES} copies "
        f"over {r.duration_s:.1f} s{unacked})"
    )
    print(f"webhook answers: {counts(Counter(answer_kind(a) for a in attempts))}")
    print(f"duplicate message rows: {before.duplicate_rows}")
    print(f"messages answered by two replies: {len(before.answered_twice)}")
    print(f"duplicate outbound sends: {len(before.duplicate_sends)}")
    print(f"replies to the wrong customer: {len(before.wrong_customer)}")
    print(
        f"lost messages: {before.lost} (not stored {len(before.not_stored)}, never processed "
        f"{len(before.unprocessed)}, processed without a reply {len(before.unanswered)})"
    )
    print(
        f"replies not delivered: {len(before.undelivered)} "
        f"(messages never shown at a platform: {len(before.not_shown)})"
    )
    print(f"server errors (5xx other than 503): {len(server_errors)}")
    print(
        f"replies per conversation: {spread(before.replies_per_conversation)} "
        f"over {len(before.replies_per_conversation)} conversations"
    )
    print(f"receipts: {counts(before.receipts)}")
    print(f"platform refusals: {r.refusals or 'none'}")
    print(f"dead jobs: {r.dead}")
    print(
        f"late redelivery: {len(r.late)} webhooks ({counts(Counter(answer_kind(a) for a in r.late))}), "
        f"new message rows {after.rows - before.rows}, new sends {after.shown - before.shown}"
    )
    # The evidence behind a figure that is not 0.
    for what, items in (("duplicate send", before.duplicate_sends), ("to the wrong customer", before.wrong_customer)):
        for shown in items[:10]:
            print(f"  {what}: {shown.platform} {shown.customer}: {shown.text[:160]!r}")
    for label, tokens in (
        ("not stored", before.not_stored),
        ("never processed", before.unprocessed),
        ("processed without a reply", before.unanswered),
        ("answered by two replies", before.answered_twice),
        ("never shown", before.not_shown),
    ):
        if tokens:
            print(listing(label, tokens))
    for reply in before.undelivered[:10]:
        print(f"  not delivered: {describe(reply)}")
    if no_answer:
        print(f"  no HTTP answer (the other copies stand in): {counts(no_answer)}")
        for s in [s for s in r.messages if any(a.status is None for a in s.attempts)][:5]:
            errors = "; ".join(f"instance{a.instance}: {a.answer}" for a in s.attempts if a.status is None)
            print(f"    {s.hook.token} ({s.hook.platform}, sent at +{s.at:.2f} s): {errors}")
    for a in server_errors[:5]:
        print(f"  server error: instance{a.instance} HTTP {a.status} {str(a.answer)[:200]}")

    failures = [f"{name}: {value}" for name, value in musts.items() if value]
    idle, jobs, pending = r.idle
    if not idle:
        failures.append(f"not idle after {args.timeout:.0f}s: {jobs} turn jobs, {pending} unprocessed messages")
    if not r.idle_after:
        failures.append("not idle after the late redelivery")
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"result: {'FAIL' if failures else 'PASS'}")
    if any(musts.values()):
        return 1
    return 2 if failures else 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    add_common_arguments(parser, instances=3)
    parser.add_argument("--customers", type=int, help="customers per platform (default 25; --quick 3)")
    parser.add_argument("--messages", type=int, help="messages per customer (default 4; --quick 3)")
    parser.add_argument(
        "--spread-s", type=float, help="customers start within this many seconds (default 4; --quick 2)"
    )
    parser.add_argument("--quiet-window", type=float, default=1.0, help="FRONTDESK_QUIET_WINDOW_S (default 1.0)")
    parser.add_argument("--model-delay-ms", type=int, default=150, help="script model latency (default 150)")
    parser.add_argument(
        "--platform-keepalive-s",
        type=int,
        default=5,
        help="how long the fake platforms keep an idle connection open (default 5, uvicorn's and Node's default)",
    )
    args = parser.parse_args(argv)
    finish_common_arguments(parser, args, instances=3)
    args.customers = args.customers or (3 if args.quick else 25)
    args.messages = args.messages or (3 if args.quick else 4)
    args.spread_s = args.spread_s if args.spread_s is not None else (2.0 if args.quick else 4.0)
    if args.customers < 1 or args.messages < 1 or args.customers > 999:
        parser.error("--customers must be 1-999, --messages >= 1")
    return args


def main() -> None:
    args = parse_args()

    async def bench() -> int:
        with (
            tempfile.TemporaryDirectory(prefix="frontdesk-storm-") as tmp,
            Fleet(keepalive_s=args.platform_keepalive_s) as fleet,
        ):
            return report(args, await run_storm(args, Path(tmp), fleet, random.Random(args.seed)))

    run_main(bench)


if __name__ == "__main__":
    main()
