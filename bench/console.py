"""The inbox at size: how fast an operator's list, views and search answer with many threads.

Per backend (SQLite always; PostgreSQL with ``--postgres-url``), a fresh database is migrated and
filled with ``--conversations`` threads of one tenant (``--messages`` messages each, customer and
assistant in turn, in en/es/vi; a name, phone and e-mail saved on a third of the contacts; hand-offs,
failed deliveries, assignments and read marks on some), then the real app (``create_app``, the
console mounted) answers a signed-in operator over ASGI, ``--rounds`` times each:

* the list: ``/console/conversations`` with every view (all, mine, unassigned, handed over, needs
  attention, unread), with the counts of every view in the navigation;
* search: a customer's phone as they typed it, a local phone form, a word in Vietnamese without
  accents, two English words, a name, a word nobody wrote;
* the live list's partial (what an SSE "changed" event fetches) and an open thread's page.

Printed: p50 / p95 / max milliseconds per request kind, per backend, and the rows each answer
listed (a search that lists nothing it should have is no speed figure).

Run:
    .venv/bin/python bench/console.py
    .venv/bin/python bench/console.py --postgres-url postgresql+asyncpg://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import re
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import httpx2
from sqlalchemy import Table, insert
from turn_overhead import create_pg_database, drop_pg_database, zero_gateway

from frontdesk.app import create_app, freeze_startup_heap
from frontdesk.cli_operators import add_operator
from frontdesk.demo import seed_demo
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.migrate import upgrade
from frontdesk.platform.store.schema import Contact, Conversation, Message, Receipt, Task
from frontdesk.platform.store.schema_inbox import ThreadRead, ThreadTerm
from frontdesk.platform.store.thread_index import contact_row, message_row
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings

PASSWORD = "correct horse battery staple"
BATCH = 2000
CUSTOMER = [
    "How much are 500 business cards?",
    "Do you print flyers on glossy paper?",
    "Chủ nhật shop có mở cửa không?",
    "Cho mình xem mẫu thiệp cưới",
    "¿Cuánto cuestan 1000 volantes?",
    "¿Hacen tarjetas de presentación con esquinas redondeadas?",
    "Can I pick up my order tomorrow morning?",
    "I need 200 posters for an event next week",
]
ASSISTANT = [
    "500 business cards are $45, ready in 3 days.",
    "Yes, glossy flyers start at $60 for 500.",
    "Dạ, Chủ nhật shop nghỉ ạ. Thứ Hai mở cửa từ 8 giờ.",
    "Sí, 1000 volantes cuestan $90.",
    "We open at 8 tomorrow; your order will be ready.",
]
NAMES = ["Ana", "Bao", "Carlos", "Dung", "Elena", "Hoa", "Jorge", "Lan", "Minh", "Sofia", "Tuan", "Lucia"]


def bench_settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, sweeper_interval_s=3600.0)


def _phone(i: int) -> str:
    return f"+1 212 {i // 10000 % 1000:03d} {i % 10000:04d}"


async def fill(db: Database, account: str, args: argparse.Namespace, owner_id: str, agent_id: str) -> None:
    """``args.conversations`` threads of the demo tenant, written in batches with Core (as the
    webhook path writes them), each message and contact with its words in ``thread_terms``."""
    rng = random.Random(7)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    tables = {
        m: cast(Table, m.__table__) for m in (Contact, Conversation, Message, Receipt, Task, ThreadRead, ThreadTerm)
    }
    message_id = 0
    for first in range(0, args.conversations, BATCH):
        contacts, conversations, messages, terms, tasks, receipts, reads = [], [], [], [], [], [], []
        for i in range(first, min(first + BATCH, args.conversations)):
            when = start + timedelta(minutes=i)
            saved = i % 3 == 0
            name = f"{rng.choice(NAMES)} {i}" if saved else None
            phone, email = (_phone(i), f"customer{i}@mail.example") if saved else (None, None)
            contact = {
                "id": f"ct_{i}",
                "tenant_id": "demo",
                "channel_account_id": account,
                "external_id": f"web-{i:06d}",
                "display_name": None,
                "name": name,
                "phone": phone,
                "email": email,
                "created_at": when,
            }
            contacts.append(contact)
            conversations.append(
                {
                    "id": f"conv_{i}",
                    "tenant_id": "demo",
                    "channel_account_id": account,
                    "contact_id": f"ct_{i}",
                    "ai_enabled": i % 11 != 0,
                    "version": 0,
                    "created_at": when,
                    "updated_at": when,
                    "assignee_id": (owner_id if i % 10 == 0 else agent_id if i % 10 == 1 else None),
                }
            )
            terms.append(contact_row("demo", f"conv_{i}", name, None, phone, email, f"web-{i:06d}"))
            for n in range(args.messages):
                message_id += 1
                user = n % 2 == 0
                text = rng.choice(CUSTOMER if user else ASSISTANT)
                if user and n == 0 and saved:
                    text = f"I'm {name}, {phone}. {text}"
                content = text if user else json.dumps([{"type": "text", "text": text}])
                messages.append(
                    {
                        "id": message_id,
                        "conversation_id": f"conv_{i}",
                        "channel_account_id": account,
                        "channel_message_id": f"web-{i}-{n}" if user else None,
                        "role": "user" if user else "assistant",
                        "content_type": "text" if user else "blocks",
                        "content": content,
                        "metadata": {},
                        "status": "ready",
                        "processed_at": when,
                        "created_at": when + timedelta(seconds=n),
                    }
                )
                terms.append(message_row("demo", f"conv_{i}", message_id, "text" if user else "blocks", content))
                if not user:  # every reply has its receipt; one thread in 50 has a failed one
                    failed = i % 50 == 0 and n == 1
                    receipts.append(
                        {
                            "kind": "delivery",
                            "message_id": message_id,
                            "conversation_id": f"conv_{i}",
                            "channel_account_id": account,
                            "status": "failed" if failed else "sent",
                            "parts_total": 1,
                            "parts_sent": 0 if failed else 1,
                            "errors": [{"error": "platform unavailable"}] if failed else [],
                            "created_at": when,
                        }
                    )
            if i % 20 == 0:
                tasks.append(
                    {
                        "id": f"task_{i}",
                        "tenant_id": "demo",
                        "conversation_id": f"conv_{i}",
                        "kind": "handoff",
                        "priority": "high",
                        "status": "open",
                        "title": "Customer asked for a person",
                        "details": {},
                        "created_at": when,
                        "updated_at": when,
                    }
                )
            if i % 2 == 0:
                reads.append(
                    {"operator_id": owner_id, "conversation_id": f"conv_{i}", "message_id": message_id, "read_at": when}
                )
        async with db.transaction() as session:
            for model, rows in (
                (Contact, contacts), (Conversation, conversations), (Message, messages), (ThreadTerm, terms),
                (Task, tasks), (Receipt, receipts), (ThreadRead, reads),
            ):  # fmt: skip
                if rows:
                    await session.execute(insert(tables[model]), rows)
    if db.dialect == "postgresql":
        async with db.engine.begin() as conn:
            await conn.exec_driver_sql("SELECT setval(pg_get_serial_sequence('messages', 'id'), max(id)) FROM messages")
            await conn.exec_driver_sql("ANALYZE")


def requests(args: argparse.Namespace) -> list[tuple[str, str, dict[str, str]]]:
    """(kind, path, query) of every request a round makes."""
    some = 3 * (args.conversations // 7)  # a contact with a saved phone
    views = [("list: " + v, "/console/conversations", {"view": v}) for v in
             ("all", "mine", "unassigned", "handed_over", "attention", "unread")]  # fmt: skip
    searches = [
        ("search: phone as typed", {"q": _phone(some)}),
        ("search: phone, digits only", {"q": re.sub(r"\D", "", _phone(some))[1:]}),
        ("search: 'chu nhat' (vi, no accents)", {"q": "chu nhat"}),
        ("search: 'business cards'", {"q": "business cards"}),
        ("search: a name", {"q": f"{NAMES[0]}"}),
        ("search: a word nobody wrote", {"q": "zeppelin"}),
        ("search: unread + 'flyers'", {"q": "flyers", "view": "unread"}),
    ]
    return [
        *views,
        *[(kind, "/console/conversations", q) for kind, q in searches],
        ("live list partial (SSE refetch)", "/console/conversations", {"_partial": "1"}),
        ("thread page (list + thread + contact)", f"/console/conversations/conv_{some}", {}),
    ]


ROW = re.compile(r'<li class="row[^"]*" data-conversation=')


Measured = tuple[dict[str, list[float]], dict[str, int]]  # ms per request kind; rows each listed


async def measure(name: str, database_url: str, args: argparse.Namespace) -> Measured:
    db = Database.from_url(database_url)
    await upgrade(db)
    runtime = Runtime.build(bench_settings(database_url), gateway=zero_gateway(), db=db)
    timings: dict[str, list[float]] = {}
    listed: dict[str, int] = {}
    try:
        now = runtime.clock.now()
        accounts = await seed_demo(db, runtime.clock, runtime.channel_deps.media)
        owner = await add_operator(db, tenant_id="demo", email="owner@bench.test", name="Owner", role="owner",
                                   password=PASSWORD, language="en", now=now)  # fmt: skip
        agent = await add_operator(db, tenant_id="demo", email="agent@bench.test", name="Agent", role="agent",
                                   password=PASSWORD, language="en", now=now)  # fmt: skip
        t0 = time.perf_counter()
        await fill(db, accounts.webchat_id, args, owner.id, agent.id)
        print(f"{name}: {args.conversations} threads, {args.conversations * args.messages} messages written in "
              f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)  # fmt: skip
        app = create_app(runtime, run_workers=False)
        freeze_startup_heap()  # as the app's start-up does (ASGI here runs no lifespan)
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://bench") as http:
            form = await http.get("/console/login")
            token = re.search(r'name="csrf" value="([^"]+)"', form.text)
            assert token is not None
            await http.post(
                "/console/login", data={"csrf": token[1], "email": "owner@bench.test", "password": PASSWORD}
            )
            plan = requests(args)
            for round_ in range(args.rounds + 1):  # the first round warms caches and is not counted
                for kind, path, query in plan:
                    headers = {"HX-Request": "true"} if query.get("_partial") else {}
                    params = {k: v for k, v in query.items() if not k.startswith("_")}
                    started = time.perf_counter()
                    answer = await http.get(path, params=params, headers=headers)
                    elapsed = (time.perf_counter() - started) * 1000
                    if answer.status_code != 200:
                        raise RuntimeError(f"{kind}: {answer.status_code} {answer.text[:300]}")
                    if round_:
                        timings.setdefault(kind, []).append(elapsed)
                    listed[kind] = len(ROW.findall(answer.text))
    finally:
        await runtime.close()
    return timings, listed


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(results: dict[str, Measured], args: argparse.Namespace) -> None:
    print(
        f"\nfrontdesk console at size: {args.conversations} threads x {args.messages} messages, one tenant, "
        f"{args.rounds} rounds (after one warm-up round), over ASGI in one process"
    )
    load = os.getloadavg()
    print(f"host: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end")
    kinds = list(next(iter(results.values()))[0])
    header = "".join(f"{name + ' p50 / p95 / max ms (rows)':>40}" for name in results)
    print(f"  {'request':<40}{header}")
    worst = dict.fromkeys(results, 0.0)
    for kind in kinds:
        cells = []
        for name, (timings, listed) in results.items():
            values = timings[kind]
            worst[name] = max(worst[name], p(values, 0.95))
            median, p95, top = statistics.median(values), p(values, 0.95), max(values)
            cells.append(f"{median:.1f} / {p95:.1f} / {top:.1f} ({listed[kind]})")
        print(f"  {kind:<40}" + "".join(f"{c:>40}" for c in cells))
    print("  worst p95 of any request kind: " + ", ".join(f"{n} {w:.1f} ms" for n, w in worst.items()))


async def main(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING)
    results: dict[str, Measured] = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["sqlite"] = await measure("sqlite", f"sqlite+aiosqlite:///{Path(tmp) / 'console.db'}", args)
    if args.postgres_url:
        name, url = await create_pg_database(args.postgres_url)
        try:
            results["postgresql"] = await measure("postgresql", url, args)
        finally:
            await drop_pg_database(args.postgres_url, name)
    report(results, args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--postgres-url", default=os.environ.get("FRONTDESK_BENCH_POSTGRES_URL", ""))
    asyncio.run(main(parser.parse_args()))
