"""Model requests and prompt size per turn, over the shipped scenarios.

Runs every scenario in ``scenarios/`` (or the paths given) through the real pipeline with its
scripted model and reads the turn traces: model requests per turn, and the prompt's parts per
request — static prefix, tool schemas of the routed bundle, history, dynamic tail, new messages —
as the prompt recorded them in ``prompt_size``. Counts are real tokens (tiktoken ``o200k_base``,
shipped with frontdesk, no network). Tool schemas go with every request of a turn, so the input
tokens per turn are printed with them counted once per request. For comparison it also prints the
schema size if every tool of the pack were offered on every turn (naive loading).

    .venv/bin/python bench/model_calls.py [scenario paths...]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
from pathlib import Path

from sqlalchemy import select

from frontdesk.capabilities.policy import ToolPolicyCatalog
from frontdesk.context.budget import BudgetConfig, schema_text
from frontdesk.evals import load_scenario, run_scenario, scenario_files
from frontdesk.packs import PACKS, PackDeps
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import TurnTrace
from frontdesk.platform.tokens import count_tokens
from frontdesk.reasoning.terminal import reply_tool_definition
from frontdesk.runtime import Runtime


def naive_schema_tokens() -> int:
    """Every tool of the print-shop pack plus `reply`, as a naive loader would send each turn."""
    db = Database.from_url("sqlite+aiosqlite:///:memory:")
    tools = PACKS["catalog"].build_tools(PackDeps(db, SystemClock(), "http://bench/media"))
    catalog = ToolPolicyCatalog(tools, PACKS["catalog"].policies, discovery_domains=())
    budget = BudgetConfig().for_model("openai:gpt-4o-mini")
    return budget.schema_tokens([*(t.definition() for t in catalog.tools), reply_tool_definition()])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main(targets: list[Path]) -> None:
    traces: list[TurnTrace] = []

    async def collect(runtime: Runtime) -> None:
        async with runtime.db.read() as session:
            traces.extend(await session.scalars(select(TurnTrace).order_by(TurnTrace.id)))

    files = scenario_files(targets)
    failed = 0
    for path in files:
        result = await run_scenario(load_scenario(path), inspect=collect)
        failed += not result.passed
    turns = [t for t in traces if t.prompt_size]
    requests = [len(t.usage) for t in turns]
    parts = {
        "static prefix": [float(t.prompt_size["static_prefix_tokens"]) for t in turns],
        "tool schemas": [float(t.prompt_size["tool_schema_tokens"]) for t in turns],
        "history": [float(t.prompt_size["history_tokens"]) for t in turns],
        "dynamic tail": [float(t.prompt_size["tail_tokens"]) for t in turns],
        "new messages": [float(t.prompt_size["batch_tokens"]) for t in turns],
        "first request": [float(t.prompt_size["total_tokens"]) for t in turns],
    }
    whole_turn = [float(sum(u.get("input_tokens") or 0 for u in t.usage)) for t in turns]
    # The scripted model counts the messages only; each request also carried the turn's tool schemas.
    with_schemas = [
        w + len(t.usage) * t.prompt_size["tool_schema_tokens"] for w, t in zip(whole_turn, turns, strict=True)
    ]
    schema_per_request = [float(t.prompt_size["tool_schema_tokens"]) for t in turns for _ in t.usage]
    naive = naive_schema_tokens()
    print(f"{len(files)} scenarios ({failed} failed), {len(turns)} agent turns, {sum(requests)} model requests")
    print(
        f"model requests per turn: mean {statistics.mean(requests):.2f}, median {statistics.median(requests):.0f}, "
        f"max {max(requests)}"
    )
    print("prompt tokens per turn (o200k_base), first request of the turn:")
    print(f"  {'part':<14} {'mean':>7} {'p50':>7} {'p95':>7} {'max':>7}")
    for name, values in parts.items():
        print(
            f"  {name:<14} {statistics.mean(values):>7.0f} {pct(values, 0.5):>7.0f} "
            f"{pct(values, 0.95):>7.0f} {max(values):>7.0f}"
        )
    print(
        f"input tokens per turn, all requests (as the script model reports them: o200k tokens of the messages, "
        f"without tool schemas): mean {statistics.mean(whole_turn):.0f}, p95 {pct(whole_turn, 0.95):.0f}"
    )
    print(
        f"input tokens per turn, all requests, tool schemas included: mean {statistics.mean(with_schemas):.0f}, "
        f"p50 {pct(with_schemas, 0.5):.0f}, p95 {pct(with_schemas, 0.95):.0f}, total {sum(with_schemas):.0f}"
    )
    print(
        f"tool schema tokens per request: mean {statistics.mean(schema_per_request):.0f}, "
        f"of which the reply tool {count_tokens(schema_text(reply_tool_definition()))}"
    )
    routed = statistics.mean(parts["tool schemas"])
    print(f"tool schemas if every tool were offered: {naive} tokens per request")
    print(f"routed / all tools: {routed / naive:.2f}x")
    over = [t for t in turns if t.prompt_size["tool_schema_tokens"] > t.prompt_size["tool_schema_budget_tokens"]]
    print(f"turns over the tool-schema budget ({turns[0].prompt_size['tool_schema_budget_tokens']}): {len(over)}")
    distinct = {t.prefix_hash for t in turns}
    print(f"distinct static-prefix hashes across all turns: {len(distinct)}")


if __name__ == "__main__":
    asyncio.run(main([Path(p) for p in sys.argv[1:]] or [Path(__file__).resolve().parents[1] / "scenarios"]))
