"""Tool loading on the loyalty pack: every tool in every prompt (naive) vs the routed bundle.

For each labelled utterance in ``bench/data/loyalty_utterances.jsonl`` (see the README there):

* naive: the definitions of all the server's tools are sent;
* routed: ``catalog.bundle(router.route(text, RouterState(...)))`` with the loyalty lexicon and
  policies, over the in-process MCP server (``build_server`` on a temp database, no network).

Printed: schema tokens per turn (name + description + JSON schema of each definition, serialised
as the context budget counts them, counted with the shipped o200k tokenizer), tool recall against
the labels (overall and per kind), precision, write tools exposed where none should be, and the
worst misses. A tool whose policy phase is ``staged_submit`` (``rule_create``, ``rule_update``)
is run by the staged flow's submit step, never by the model: it counts as covered when the
decision carries the ``confirmed`` signal.

Exits 1 if an unknown or low-confidence turn sees a write tool, 2 if the data names a tool the
server does not have.

Run:
    .venv/bin/python bench/tool_loading.py [--data PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontdesk.capabilities.mcp import McpToolSource
from frontdesk.capabilities.policy import CONFIRMED_SIGNAL, MIN_WRITE_CONFIDENCE, RoutingDecision, ToolPolicyCatalog
from frontdesk.context.budget import schema_text
from frontdesk.packs.loyalty.policies import DISCOVERY_DOMAINS, POLICIES, STAGED_ONLY
from frontdesk.packs.loyalty.server import build_server
from frontdesk.platform.tokens import count_tokens
from frontdesk.reasoning.action_router import ActionLexicon, ActionRouter
from frontdesk.reasoning.router import RouterState

TOKENIZER = "frontdesk.platform.tokens.count_tokens (o200k_base, shipped files)"


ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench/data/loyalty_utterances.jsonl"
LEXICON = ROOT / "src/frontdesk/packs/loyalty/data/lexicon.json"
KINDS = ("single", "multi", "side_query", "confirm", "unknown")


@dataclass(frozen=True)
class Turn:
    id: str
    text: str
    kind: str
    state: RouterState
    needs: frozenset[str]
    writes: bool


@dataclass(frozen=True)
class Outcome:
    turn: Turn
    decision: RoutingDecision
    bundle: tuple[str, ...]
    tokens: int
    missing: tuple[str, ...]

    @property
    def recall(self) -> float | None:
        needs = self.turn.needs
        return None if not needs else 1 - len(self.missing) / len(needs)

    @property
    def precision(self) -> float | None:
        return len(self.turn.needs & set(self.bundle)) / len(self.bundle) if self.bundle else None

    @property
    def unsure(self) -> bool:
        return self.decision.intent == "unknown" or self.decision.confidence < MIN_WRITE_CONFIDENCE

    @property
    def exposed_writes(self) -> list[str]:
        return [name for name in self.bundle if POLICIES[name].writes]


def load_turns(path: Path) -> list[Turn]:
    turns = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row: dict[str, Any] = json.loads(line)
        state = row.get("state") or {}
        turns.append(
            Turn(
                row["id"],
                row["text"],
                row["kind"],
                RouterState(
                    workflow_phase=state.get("workflow_phase"),
                    workflow_domains=frozenset(state.get("workflow_domains", ())),
                ),
                frozenset(row["needs"]),
                bool(row["writes"]),
            )
        )
    return turns


async def build_catalog(directory: Path) -> ToolPolicyCatalog:
    source = McpToolSource("loyalty", build_server(directory / "loyalty.db"))
    await source.connect()
    try:
        return ToolPolicyCatalog(source.tools(), POLICIES, discovery_domains=DISCOVERY_DOMAINS)
    finally:
        await source.close()


def evaluate(turns: Sequence[Turn], catalog: ToolPolicyCatalog, router: ActionRouter) -> list[Outcome]:
    tokens = {t.name: count_tokens(schema_text(t.definition())) for t in catalog.tools}
    outcomes = []
    for turn in turns:
        decision = router.route(turn.text, turn.state)
        bundle = tuple(catalog.bundle(decision).tool_names)
        confirmed = CONFIRMED_SIGNAL in decision.signals

        def covered(name: str, bundle: tuple[str, ...] = bundle, confirmed: bool = confirmed) -> bool:
            policy = catalog.policy(name)
            return name in bundle or (confirmed and policy is not None and policy.phases == STAGED_ONLY)

        missing = tuple(sorted(n for n in turn.needs if not covered(n)))
        outcomes.append(Outcome(turn, decision, bundle, sum(tokens[n] for n in bundle), missing))
    return outcomes


def p95(values: Sequence[int]) -> int:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:6.1%}"


def report(outcomes: Sequence[Outcome], naive: int, tool_count: int) -> int:
    routed = [o.tokens for o in outcomes]
    print(f"tokenizer: {TOKENIZER}")
    print(f"turns: {len(outcomes)}   tools on the server: {tool_count}\n")

    print("schema tokens per turn       median      p95     mean")
    print(f"  naive (all {tool_count} tools)   {naive:8,} {naive:8,} {naive:8,}")
    r_med, r_p95, r_mean = statistics.median(routed), p95(routed), statistics.fmean(routed)
    print(f"  routed bundle          {r_med:8,.0f} {r_p95:8,} {r_mean:8,.0f}")
    print(f"  routed / naive         {r_med / naive:8.1%} {r_p95 / naive:8.1%} {r_mean / naive:8.1%}")
    sizes = [len(o.bundle) for o in outcomes]
    print(f"  tools per routed turn: median {statistics.median(sizes):.0f}, p95 {p95(sizes)}, max {max(sizes)}\n")

    header = f"{'kind':<12}{'turns':>6}{'full recall':>13}{'mean recall':>13}{'precision':>11}"
    print(header + f"{'tokens p50':>12}{'writes on read':>16}")
    for kind in (*KINDS, "all"):
        group = [o for o in outcomes if kind in ("all", o.turn.kind)]
        if not group:
            continue
        needing = [o for o in group if o.turn.needs]
        full = sum(o.recall == 1 for o in needing) / len(needing) if needing else None
        reads = sum(len(o.exposed_writes) for o in group if not o.turn.writes)
        print(
            f"{kind:<12}{len(group):>6}{pct(full):>13}{pct(mean([o.recall for o in group])):>13}"
            f"{pct(mean([o.precision for o in group])):>11}{statistics.median(o.tokens for o in group):>12,.0f}"
            f"{reads:>16}"
        )
    print("  (recall over turns that need a tool; precision over turns with a non-empty bundle)\n")

    unsure = [o for o in outcomes if o.unsure]
    unsure_writes = sum(len(o.exposed_writes) for o in unsure)
    read_turns = [o for o in outcomes if not o.turn.writes and o.exposed_writes]
    read_writes = sum(len(o.exposed_writes) for o in read_turns)
    print(f"write tools exposed on unknown/low-confidence turns: {unsure_writes}  ({len(unsure)} such turns)")
    print(f"write tools exposed on turns labelled writes=false:  {read_writes}  (on {len(read_turns)} turns)")
    for o in read_turns[:6]:
        print(f"    {o.turn.id} {o.turn.text!r} -> {o.decision.intent}: {', '.join(o.exposed_writes)}")
    if len(read_turns) > 6:
        print(f"    ... and {len(read_turns) - 6} more")

    misses = sorted((o for o in outcomes if o.missing), key=lambda o: (o.recall or 0, -len(o.missing), o.turn.id))
    print(f"\nturns with recall < 1: {len(misses)}; the worst {min(10, len(misses))}:")
    for o in misses[:10]:
        d = o.decision
        phase = f" phase={d.phase}" if d.phase != "idle" else ""
        print(f"  {o.turn.id} [{o.turn.kind}] {o.turn.text!r}")
        print(f"      missing {', '.join(o.missing)}")
        print(
            f"      decision {d.intent} {sorted(d.domains)} conf={d.confidence}{phase}"
            f"{' side' if d.side_query else ''} ({len(o.bundle)} tools)"
        )
    return 1 if unsure_writes else 0


async def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DATA, help="labelled utterances (JSON lines)")
    args = parser.parse_args(argv)

    turns = load_turns(args.data)
    router = ActionRouter(ActionLexicon(**json.loads(LEXICON.read_text(encoding="utf-8"))))
    with tempfile.TemporaryDirectory(prefix="frontdesk-bench-") as directory:
        catalog = await build_catalog(Path(directory))
    names = {t.name for t in catalog.tools}
    unknown = sorted({n for t in turns for n in t.needs} - names)
    if unknown:
        print(f"the data names tools the server does not have: {unknown}", file=sys.stderr)
        return 2
    naive = sum(count_tokens(schema_text(t.definition())) for t in catalog.tools)
    return report(evaluate(turns, catalog, router), naive, len(names))


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
