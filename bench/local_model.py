"""The embedded model on the print shop: what the customer got, seconds per turn, first actions.

Everything runs through the real pipeline (router, bundle, generation loop under the grammar,
verification gate, delivery) with the demo business, on a temporary SQLite database, one turn at
a time. The sets:

* ``dev``, ``aside`` and ``aside2``: labelled conversations
  (``bench/data/local_conversations_<set>.jsonl``, 1-3 customer messages each, en/es/vi), each
  turn scored on what the customer got (``local_scoring.py``: the right price, photo or hours;
  the request saved with the contact given; a hand-over with a courtesy reply; always: an answer,
  not the hold message, in the customer's language, no placeholder, not an echo). The ``aside``
  sets were written blind and are never tuned on: only their figures are printed (``--show-aside``
  prints their turns too), and they are reported separately. ``aside``'s turns were read once
  while tuning (by mistake), so it is no longer a held-out figure; ``aside2`` replaced it.
* ``first``: the older figure, one new conversation per message of
  ``bench/data/local_model_messages.jsonl``; is the first action (first tool, or ``reply``)
  one of the sensible ones?

Per turn: generation seconds (every model call and tool run, not the quiet window), and the
prompt tokens llama.cpp evaluated anew or reused from its cache. Prints one line per turn (with
the reply, and why it failed; not for sets kept aside), then per set: the share served right, mean and p95 seconds, and
the tokens reused. Nothing leaves this machine.

Run (needs the ``local`` extra: ``pip install -e '.[local]'``):
    .venv/bin/python bench/local_model.py
    .venv/bin/python bench/local_model.py --sets dev --only vi-,lead
    .venv/bin/python bench/local_model.py --model local:/path/to/other.gguf --limit 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local_scoring import Catalog, TurnSeen, score_turn
from sqlalchemy import func, select

from frontdesk import demo
from frontdesk.demo import seed_demo
from frontdesk.ingestion.events import InboundMessage
from frontdesk.output.blocks import blocks_adapter
from frontdesk.platform.models.local import LocalModelClient
from frontdesk.platform.models.local_weights import DEFAULT_LOCAL_MODEL
from frontdesk.platform.store.migrate import upgrade
from frontdesk.platform.store.schema import ClaimRejection, Conversation, Job, Message, Task, TurnTrace
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings

DATA = Path(__file__).with_name("data")
FIRST_ACTIONS = DATA / "local_model_messages.jsonl"
BUSINESS_FILE = Path(demo.__file__).parent / "packs" / "catalog" / "demo" / "print-shop.yaml"
PHOTO_ID = re.compile(r"-[0-9a-f]{8}\.\w+$")  # a photo URL's last part is <photo id>-<8 hex>.<ext>


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


NO_TURN = {"seconds": 0.0, "evaluated": 0, "reused": 0, "outputs": [], "steps": ""}  # a person has the conversation


def timing(rows: list[dict[str, Any]]) -> str:
    seconds = [r["seconds"] for r in rows if r["seconds"]]
    evaluated = sum(r["evaluated"] for r in rows)
    reused = sum(r["reused"] for r in rows)
    outputs = [n for r in rows for n in r["outputs"]]
    if not seconds:
        return "no model turns"
    return (
        f"seconds per turn mean {statistics.fmean(seconds):.1f}, p95 {p95(seconds):.1f}, max {max(seconds):.1f}; "
        f"prompt tokens evaluated {evaluated:,}, reused from the cache {reused:,} "
        f"({reused / max(1, evaluated + reused):.0%}); tokens written per request mean "
        f"{statistics.fmean(outputs or [0]):.0f}, p95 {p95(outputs or [0]):.0f}"
    )


class PromptMeter:
    """Counts, per completion, the prompt tokens llama.cpp evaluated and those it reused from its
    cache: its ``eval`` is wrapped, and a completion's first ``eval`` is its prompt's unreused part
    (each generated token is one more call of one token). Measured here, not read from the
    client's report, so that any version of the client is measured the same way."""

    def __init__(self, llama: Any) -> None:
        self.evaluated = 0
        self.reused = 0
        self._calls: list[int] = []
        evaluate, complete = llama.eval, llama.create_completion

        def counted_eval(tokens: Any) -> Any:
            self._calls.append(len(tokens))
            return evaluate(tokens)

        def counted_completion(*args: Any, **kwargs: Any) -> Any:
            self._calls = []
            prompt = kwargs.get("prompt", args[0] if args else [])
            try:
                return complete(*args, **kwargs)
            finally:
                evaluated = self._calls[0] if self._calls else 0
                self.evaluated += evaluated
                self.reused += max(0, len(prompt) - evaluated)

        llama.eval, llama.create_completion = counted_eval, counted_completion

    def take(self) -> tuple[int, int]:
        """(evaluated, reused) since the last call."""
        taken = (self.evaluated, self.reused)
        self.evaluated = self.reused = 0
        return taken


def turn_figures(trace: TurnTrace, meter: PromptMeter | None) -> dict[str, Any]:
    """Generation seconds (every model call and tool run, not the quiet window) and the prompt
    tokens llama.cpp evaluated anew or reused from its cache since the last turn."""
    evaluated, reused = meter.take() if meter is not None else (0, 0)
    return {
        "seconds": float(trace.latency_ms.get("generation_ms", 0)) / 1000,
        "evaluated": evaluated,
        "reused": reused,
        "outputs": [int(u.get("output_tokens", 0)) for u in trace.usage or []],
        # Each model request as "<seconds>s/<tokens written>": where a slow turn's time went.
        "steps": " ".join(f"{u.get('ms', 0) / 1000:.1f}s/{u.get('output_tokens', 0)}" for u in trace.usage or []),
    }


async def wait_for_trace(runtime: Runtime, conversation_id: str, count: int, timeout_s: float) -> TurnTrace | None:
    """The conversation's ``count``-th finished turn, once nothing is queued or running; None when
    a person has the conversation (no turn runs: the message waits for them)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        async with runtime.db.transaction() as session:
            traces = list(
                await session.scalars(
                    select(TurnTrace)
                    .where(TurnTrace.conversation_id == conversation_id, TurnTrace.finished_at.is_not(None))
                    .order_by(TurnTrace.id)
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
            conversation = await session.get(Conversation, conversation_id)
        if not busy and len(traces) >= count and not pending:
            return traces[count - 1]
        if not busy and conversation is not None and not conversation.ai_enabled and len(traces) < count:
            return None
        await asyncio.sleep(0.1)
    raise TimeoutError(f"no finished turn for {conversation_id} within {timeout_s:.0f} s")


async def explain(runtime: Runtime, trace: TurnTrace, conversation_id: str) -> None:
    """Each refused reply's failed rules and text (a retry accepted or not); for a turn that did not
    end in an accepted reply with none refused, the loop's own reason (the figures say how often;
    this says why)."""
    async with runtime.db.transaction() as session:
        found = list(
            await session.scalars(
                select(ClaimRejection).where(ClaimRejection.turn_id == trace.id).order_by(ClaimRejection.id)
            )
        )
    for r in found:
        rules = ", ".join(sorted({f["rule"] for f in r.failures}))
        print(f"{'':32s}refused ({rules}): {' '.join(r.reply_text.split())[:150]}", flush=True)
    if not found and trace.outcome != "replied":
        print(f"{'':32s}{trace.outcome}: {trace.detail}", flush=True)


async def refusals(runtime: Runtime, trace: TurnTrace | None) -> int:
    """How many of the turn's replies the gate refused."""
    if trace is None:
        return 0
    async with runtime.db.transaction() as session:
        count = await session.scalar(select(func.count()).where(ClaimRejection.turn_id == trace.id))
    return int(count or 0)


def retry_line(turns: list[dict[str, Any]]) -> str:
    """What the gate's retry bought: of the turns with a refused reply, how many had the retry
    accepted, and how many were served right in the end (by the retry, or by the tools' words)."""
    refused = [t for t in turns if t["refused"]]
    accepted = [t for t in refused if t["outcome"] == "replied"]
    served = sum(t["served"] for t in refused)
    return (
        f"turns with a refused reply {len(refused)}: the retry accepted {len(accepted)} "
        f"({sum(t['served'] for t in accepted)} served right), served right in the end {served}"
    )


async def last_assistant_id(runtime: Runtime, conversation_id: str) -> int:
    async with runtime.db.transaction() as session:
        newest = await session.scalar(
            select(func.max(Message.id)).where(Message.conversation_id == conversation_id, Message.role == "assistant")
        )
    return int(newest or 0)


async def what_was_seen(
    runtime: Runtime, conversation_id: str, after: int, text: str, said: list[str], trace: TurnTrace | None
) -> TurnSeen:
    """The turn as the customer saw it (what was sent after message ``after``) and the team (the
    saved requests and hand-overs of the conversation)."""
    async with runtime.db.transaction() as session:
        sent = list(
            await session.scalars(
                select(Message)
                .where(Message.conversation_id == conversation_id, Message.role == "assistant", Message.id > after)
                .order_by(Message.id)
            )
        )
        tasks = list(await session.scalars(select(Task).where(Task.conversation_id == conversation_id)))
    texts: list[str] = []
    photos: list[str] = []
    for message in sent:
        for block in blocks_adapter.validate_json(message.content):
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "image_group":
                photos += [PHOTO_ID.sub("", str(url).rsplit("/", 1)[-1]) for url in block.urls]
    return TurnSeen(
        customer=text,
        said_before=list(said),
        reply=" ".join(" ".join(texts).split()) if sent else None,
        held=trace is not None and trace.outcome == "fallback",
        photo_ids=photos,
        leads=[t.details for t in tasks if t.kind == "follow_up" and t.status == "open"],
        handed_over=any(t.kind == "handoff" for t in tasks),
    )


@dataclass
class Bench:
    runtime: Runtime
    webchat_id: str
    catalog: Catalog
    meter: PromptMeter | None = None
    counter: int = 0

    async def send(self, contact: str, text: str) -> str:
        self.counter += 1
        ingested = await self.runtime.ingestor.ingest(
            InboundMessage(
                channel_account_id=self.webchat_id,
                contact_external_id=contact,
                channel_message_id=f"bench-{self.counter}",
                text=text,
            )
        )
        return ingested.conversation_id


async def first_actions(bench: Bench, cases: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The old figure: one new conversation per message; was the first action sensible?"""
    rows: list[dict[str, Any]] = []
    for index, case in enumerate(cases, 1):
        conversation_id = await bench.send(f"first-{index}", case["text"])
        trace = await wait_for_trace(bench.runtime, conversation_id, 1, args.timeout * 10)
        assert trace is not None
        first = trace.tool_calls[0]["name"] if trace.tool_calls else "reply"
        row = {**turn_figures(trace, bench.meter), "sensible": first in case["sensible"]}
        rows.append(row)
        mark = "ok " if row["sensible"] else "NO "
        print(
            f"{index:2d} {mark} {row['seconds']:5.1f}s {trace.steps} steps "
            f"{row['evaluated']:5d}+{row['reused']:<5d} tok {trace.outcome:8s} first={first:20s} {case['text'][:60]}",
            flush=True,
        )
        await explain(bench.runtime, trace, conversation_id)
    return rows


async def conversations(bench: Bench, cases: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The outcome set: each labelled conversation turn by turn, scored on what the customer got."""
    results: list[dict[str, Any]] = []
    for case in cases:
        said: list[str] = []
        turns: list[dict[str, Any]] = []
        conversation_id = ""
        for number, turn in enumerate(case["turns"], 1):
            last_seen = await last_assistant_id(bench.runtime, conversation_id) if conversation_id else 0
            conversation_id = await bench.send(f"conv-{case['id']}", turn["text"])
            trace = await wait_for_trace(bench.runtime, conversation_id, number, args.timeout * 10)
            seen = await what_was_seen(bench.runtime, conversation_id, last_seen, turn["text"], said, trace)
            score = score_turn(seen, turn["expect"], case["lang"], bench.catalog)
            figures = turn_figures(trace, bench.meter) if trace is not None else {**NO_TURN}
            refused = await refusals(bench.runtime, trace)
            outcome = trace.outcome if trace is not None else "(none)"
            turns.append({**figures, "served": score.served, "refused": refused, "outcome": outcome})
            said.append(turn["text"])
            if case["set"].startswith("aside") and not args.show_aside:
                continue  # a set kept aside is read only as its figures: nobody tunes on its lines
            mark = "ok " if score.served else "NO "
            print(
                f"{case['id']:28s} {number} {mark} {figures['seconds']:5.1f}s {figures['evaluated']:5d}+"
                f"{figures['reused']:<5d} tok {outcome:8s} {turn['text'][:50]}",
                flush=True,
            )
            print(f"{'':32s}steps: {figures['steps']}", flush=True)
            if trace is not None and trace.tool_calls:
                calls = ", ".join(
                    f"{c['name']}({c['args'][:60]}){'' if c['ok'] else ' failed'}" for c in trace.tool_calls
                )
                print(f"{'':32s}tools: {calls}", flush=True)
            shown = seen.reply if seen.reply is not None else "(nothing sent)"
            photos = f" [{len(seen.photo_ids)} photo(s)]" if seen.photo_ids else ""
            print(f"{'':32s}> {shown[:150]}{photos}", flush=True)
            for failure in score.failures:
                print(f"{'':32s}! {failure}", flush=True)
            if trace is not None and trace.outcome != "replied":
                await explain(bench.runtime, trace, conversation_id)
        results.append(
            {"id": case["id"], "set": case["set"], "served": all(t["served"] for t in turns), "turns": turns}
        )
    return results


async def run(args: argparse.Namespace) -> int:
    sets = args.sets.split(",")
    firsts = [json.loads(line) for line in FIRST_ACTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    cases = [
        {**json.loads(line), "set": name}
        for name in sets
        if name != "first"
        for line in (DATA / f"local_conversations_{name}.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    if args.only:
        cases = [c for c in cases if any(part in c["id"] for part in args.only.split(","))]
    if args.limit:
        firsts, cases = firsts[: args.limit], cases[: args.limit]
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
        meter = PromptMeter(client._llama) if isinstance(client, LocalModelClient) else None
        bench = Bench(runtime, accounts.webchat_id, Catalog.read(BUSINESS_FILE), meter)
        runtime.runner.start()
        try:
            first_rows = await first_actions(bench, firsts, args) if "first" in sets else []
            results = await conversations(bench, cases, args) if cases else []
        finally:
            await runtime.close()

    print()
    print(
        f"model: {args.model} (load {load_s:.1f} s, threads {args.threads or 'all'}, load average at the end "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores), prompt: {args.prompt}"
    )
    if first_rows:
        sensible = sum(r["sensible"] for r in first_rows)
        share = f"{sensible}/{len(first_rows)} ({sensible / len(first_rows):.0%})"
        print(f"first actions: sensible {share}; {timing(first_rows)}")
    for name in sets:
        chosen = [r for r in results if r["set"] == name]
        if chosen:
            served = sum(r["served"] for r in chosen)
            turns = [t for r in chosen for t in r["turns"]]
            print(
                f"conversations ({name}): served right {served}/{len(chosen)} ({served / len(chosen):.0%}), "
                f"turns {sum(t['served'] for t in turns)}/{len(turns)}; {timing(turns)}"
            )
            print(f"conversations ({name}): {retry_line(turns)}")
    every = [t for r in results for t in r["turns"]] + first_rows
    if every:
        print(f"all turns: {timing(every)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    parser.add_argument(
        "--model", default=f"local:{DEFAULT_LOCAL_MODEL}", help="chat slot (default: the built-in model)"
    )
    parser.add_argument(
        "--sets",
        default="first,dev,aside2",
        help="first (first actions), dev, aside, aside2 (conversations: bench/data/local_conversations_<set>.jsonl)",
    )
    parser.add_argument(
        "--show-aside", action="store_true", help="print the turns of sets kept aside too (never while tuning)"
    )
    parser.add_argument("--only", help="only conversations whose id contains one of these, comma-separated")
    parser.add_argument("--limit", type=int, default=0, help="only the first N of each set")
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
