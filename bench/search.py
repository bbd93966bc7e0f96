"""Catalog search: recall@3 of word matching alone vs hybrid (words + vectors) on labelled queries.

Indexes the print shop's catalog into a temporary SQLite database (or ``--database-url``) and runs
every query of ``bench/data/search_queries.jsonl`` (typos, word forms, paraphrases that share no
word with the service, other languages without accents) twice: lexical only, then hybrid with the
``--embeddings`` slot (default ``script:hash``, the offline embedder, which knows spelling but not
meaning). Prints recall@1 and recall@3 per kind of query, the mean search time, and the misses.

Run:
    .venv/bin/python bench/search.py
    .venv/bin/python bench/search.py --embeddings openai-compatible:http://127.0.0.1:11434/v1#nomic-embed-text
    .venv/bin/python bench/search.py --database-url postgresql+asyncpg://postgres@127.0.0.1:5432/frontdesk_bench

With the default slot nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from frontdesk.capabilities.search import SearchIndex
from frontdesk.demo import demo_documents as documents
from frontdesk.packs.catalog.items import COLLECTION
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.models.embeddings import build_embedder
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench/data/search_queries.jsonl"


@dataclass(frozen=True)
class Query:
    id: str
    kind: str
    query: str
    expected: str


@dataclass(frozen=True)
class Run:
    name: str
    ranked: dict[str, list[str]]  # query id -> doc ids, best first
    mean_ms: float


async def run(name: str, index: SearchIndex, queries: list[Query]) -> Run:
    ranked: dict[str, list[str]] = {}
    started = time.perf_counter()
    for q in queries:
        ranked[q.id] = [hit.doc_id for hit in await index.search(COLLECTION, q.query)]
    return Run(name, ranked, (time.perf_counter() - started) * 1000 / len(queries))


def recall(run: Run, queries: list[Query], k: int) -> float:
    return sum(q.expected in run.ranked[q.id][:k] for q in queries) / len(queries)


def report(runs: list[Run], queries: list[Query]) -> None:
    by_kind: dict[str, list[Query]] = defaultdict(list)
    for q in queries:
        by_kind[q.kind].append(q)
    header = f"{'queries':<14}{'n':>4}" + "".join(f"{r.name + ' @1':>16}{r.name + ' @3':>16}" for r in runs)
    print(header)
    for kind, group in [*by_kind.items(), ("all", queries)]:
        cells = "".join(f"{recall(r, group, 1):>16.2f}{recall(r, group, 3):>16.2f}" for r in runs)
        print(f"{kind:<14}{len(group):>4}{cells}")
    print("mean search time: " + ", ".join(f"{r.name} {r.mean_ms:.1f} ms" for r in runs))
    for r in runs:
        misses = [q for q in queries if q.expected not in r.ranked[q.id][:3]]
        print(f"\n{r.name} misses at 3 ({len(misses)}):")
        for q in misses:
            print(f"  {q.id} [{q.kind}] {q.query!r}: want {q.expected}, got {r.ranked[q.id][:3]}")


async def main(args: argparse.Namespace) -> None:
    queries = [Query(**json.loads(line)) for line in args.data.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        db = Database.from_url(args.database_url or f"sqlite+aiosqlite:///{tmp}/search.db")
        try:
            await upgrade(db)
            embedder = build_embedder(args.embeddings)
            hybrid = SearchIndex(db, SystemClock(), embedder, vector_weight=args.weight)
            indexed = await hybrid.sync(COLLECTION, documents())
            vectors = f"{indexed.embedded} embedded by {embedder.name}"
            print(f"indexed {len(indexed.added)} services ({vectors}) on {db.dialect}")
            lexical = SearchIndex(db, SystemClock())
            runs = [await run("lexical", lexical, queries), await run("hybrid", hybrid, queries)]
            print(f"{len(queries)} labelled queries from {args.data.relative_to(ROOT)}, vector weight {args.weight}\n")
            report(runs, queries)
        finally:
            await db.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embeddings", default="script:hash", help="embeddings slot string")
    parser.add_argument("--weight", type=float, default=0.5, help="search_vector_weight")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--database-url", default=None)
    asyncio.run(main(parser.parse_args()))
