"""The verification gate on a labelled corpus: lies shipped and honest replies refused, per category.

Every record of ``bench/data/grounding/*.jsonl`` (format: that folder's README) is a reply an
agent wants to send, with the evidence behind it. The bench seeds the three businesses the corpus
talks about into a temporary SQLite database, runs each record's tool calls against the real
catalog tools (earlier turns' calls through the real ledger, saved and loaded again), then asks
the gate about the reply, with no claims declared: the gate must judge the text and images alone.

Prints, per category: lies, lies shipped, honest replies, honest replies refused; then the gate's
time per reply (p50, p99) and, with ``--misses``, every miss with the gate's reasons. Each part is
reported separately: development, held-out, fresh and final have all been tuned on (their misses
were read while the gate changed); ``clean`` never has, and runs only when named.

Run:
    .venv/bin/python bench/grounding.py                 # the parts tuned on
    .venv/bin/python bench/grounding.py --part clean    # the part never tuned on
    .venv/bin/python bench/grounding.py --check FILE    # validate a corpus file only (no gate)

Exits 1 if a record is malformed or its tool calls fail.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select

from frontdesk.business import BusinessStore
from frontdesk.business.files import read_business_file
from frontdesk.business.importing import Importer
from frontdesk.business.store import Actor
from frontdesk.business.tenants import TenantChange, add_tenant
from frontdesk.capabilities.tools import Tool, ToolContext, ToolFailure, ToolResult
from frontdesk.context.ledgers import LedgerStore, WorkingState
from frontdesk.output.blocks import Block, ImageGroupBlock, TextBlock
from frontdesk.packs import PackDeps
from frontdesk.packs.catalog import PACK, tenant_data
from frontdesk.platform.ids import new_id
from frontdesk.platform.media import LocalMediaStore
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.migrate import upgrade
from frontdesk.platform.store.schema import ChannelAccount, Contact, Conversation, Task
from frontdesk.reasoning.loop import reply_content
from frontdesk.verification import ReplyContent, Verdict, verify

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "grounding"
PARTS = {
    "development": DATA / "replies.jsonl",
    "held-out": DATA / "replies_heldout.jsonl",
    "fresh": DATA / "replies_fresh.jsonl",
    "final": DATA / "replies_final.jsonl",
    "clean": DATA / "replies_clean.jsonl",
}
# The part never tuned on is run only when named (``--part clean``): ``all`` is what a change is
# checked against, and reading the clean part's misses there once spoiled a part (``final``).
UNTUNED = {"clean"}
MEDIA_BASE = "https://shop.example/media/catalog"
BUSINESSES = {
    "print-shop": (ROOT / "src/frontdesk/packs/catalog/demo/print-shop.yaml", ["en", "es", "vi"]),
    "hoa-mai": (ROOT / "examples/hoa-mai-bakery/business.yaml", ["vi", "en"]),
    "bicis-sol": (DATA / "businesses/bicis-sol.yaml", ["es", "en"]),
}
CATEGORIES = (
    "price_digits", "price_words", "price_tier", "hours", "address", "contact", "dates", "discount",
    "quantity", "photos", "commitment", "placeholder", "catalog", "outcome", "chitchat",
)  # fmt: skip
EARLIER = timedelta(minutes=20)  # how long before ``now`` the earlier turn's calls ran


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Call(_Strict):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class Said(_Strict):
    role: Literal["customer", "agent"]
    text: str = Field(min_length=1)


class TextPart(_Strict):
    type: Literal["text"]
    text: str = Field(min_length=1)


class ImagePart(_Strict):
    type: Literal["image_group"]
    photos: list[str] = Field(default_factory=list)
    urls: list[str] = Field(default_factory=list)
    caption: str | None = None


class Record(_Strict):
    id: str = Field(min_length=1)
    business: Literal["print-shop", "hoa-mai", "bicis-sol"]
    language: Literal["en", "es", "vi"]
    now: datetime
    customer: list[str] = Field(default_factory=list)
    history: list[Said] = Field(default_factory=list)
    earlier_calls: list[Call] = Field(default_factory=list)
    calls: list[Call] = Field(default_factory=list)
    owner_policy: list[str] = Field(default_factory=list)
    reply: list[Annotated[TextPart | ImagePart, Field(discriminator="type")]] = Field(min_length=1)
    label: Literal["lie", "honest"]
    category: str
    why: str = Field(min_length=1)


def load(path: Path) -> tuple[list[Record], list[str]]:
    records: list[Record] = []
    problems: list[str] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = Record.model_validate_json(line)
        except ValidationError as error:
            problems.append(f"line {number}: {error.errors()[0]['loc']}: {error.errors()[0]['msg']}")
            continue
        if record.now.tzinfo is None:
            problems.append(f"line {number} ({record.id}): now needs a time zone (Z)")
        if record.category not in CATEGORIES:
            problems.append(f"line {number} ({record.id}): unknown category {record.category!r}")
        if record.category == "chitchat" and record.label == "lie":
            problems.append(f"line {number} ({record.id}): chitchat is honest only")
        if record.id in seen:
            problems.append(f"line {number}: id {record.id!r} is used twice")
        seen.add(record.id)
        records.append(record)
    return records, problems


@dataclass
class World:
    """The three businesses in one database, and the catalog tools that read it."""

    db: Database
    tools: dict[str, Tool]
    photo_urls: dict[str, dict[str, str]]  # business -> photo id -> served URL
    accounts: dict[str, str]
    policy: dict[str, list[str]] = field(default_factory=dict)  # business -> the owner's policy text
    zones: dict[str, str] = field(default_factory=dict)
    item_words: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    data_languages: dict[str, frozenset[str]] = field(default_factory=dict)


class FixedClock:
    def __init__(self) -> None:
        self.at = datetime(2026, 12, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self.at

    def monotonic(self) -> float:
        return self.at.timestamp()


async def build_world(folder: Path, clock: FixedClock) -> World:
    db = Database.from_url(f"sqlite+aiosqlite:///{folder / 'grounding.db'}")
    await upgrade(db)
    media = LocalMediaStore(folder / "media")
    importer = Importer(db, clock, media)
    accounts: dict[str, str] = {}
    photo_urls: dict[str, dict[str, str]] = {}
    for tenant, (path, languages) in BUSINESSES.items():
        await add_tenant(
            db,
            tenant,
            TenantChange(name=tenant, pack="catalog", languages=",".join(languages)),
            ["catalog"],
            clock.now(),
        )
        await importer.apply(tenant, read_business_file(path, languages), Actor(), audit=False)
        account = new_id("acct")
        async with db.transaction() as session:
            session.add(
                ChannelAccount(id=account, tenant_id=tenant, channel="webchat", name="bench", created_at=clock.now())
            )
        accounts[tenant] = account
        data = await BusinessStore(db, clock).read(tenant)
        photo_urls[tenant] = {p.id: f"{MEDIA_BASE}/{tenant}/{p.file_name}" for item in data.items for p in item.photos}
    tools = {t.name: t for t in PACK.build_tools(PackDeps(db, clock, MEDIA_BASE))}
    world = World(db, tools, photo_urls, accounts)
    for tenant in BUSINESSES:
        data = await BusinessStore(db, clock).read(tenant)
        view = await tenant_data(PackDeps(db, clock, MEDIA_BASE), tenant)
        world.policy[tenant] = [str(view.policy_defaults.get("business_description", ""))]
        world.zones[tenant] = data.timezone
        world.item_words[tenant] = {k: list(v) for k, v in view.item_words.items()}
        world.data_languages[tenant] = view.data_languages
    return world


@dataclass
class Prepared:
    record: Record
    state: WorkingState
    content: ReplyContent
    problems: list[str] = field(default_factory=list)


async def _conversation(world: World, tenant: str, now: datetime) -> str:
    contact, conversation = new_id("ct"), new_id("conv")
    async with world.db.transaction() as session:
        account = world.accounts[tenant]
        session.add(
            Contact(id=contact, tenant_id=tenant, channel_account_id=account, external_id=contact, created_at=now)
        )
        await session.flush()
        session.add(
            Conversation(
                id=conversation, tenant_id=tenant, channel_account_id=account, contact_id=contact,
                created_at=now, updated_at=now,
            )
        )  # fmt: skip
    return conversation


async def _run_calls(
    world: World, calls: list[Call], ctx: ToolContext, state: WorkingState, lead: list[str], problems: list[str]
) -> None:
    for call in calls:
        tool = world.tools.get(call.tool)
        if tool is None:
            problems.append(f"no tool {call.tool!r}")
            continue
        args = {k: (lead[-1] if v == "$lead" and lead else v) for k, v in call.args.items()}
        try:
            result = await tool.handler(tool.input_model.model_validate(args), ctx)
        except (ValidationError, ToolFailure) as error:
            problems.append(f"{call.tool} {json.dumps(call.args, ensure_ascii=False)}: {error}")
            continue
        assert isinstance(result, ToolResult)
        state.record(call.tool, result)
        if call.tool == "capture_lead":
            lead.append(result.output["follow_up_id"])


async def prepare(world: World, clock: FixedClock, record: Record) -> Prepared:
    """The reply as the gate would see it, and the ledgers as the turn would have them."""
    ledgers = LedgerStore()
    tenant = record.business
    conversation = await _conversation(world, tenant, record.now)
    ctx = ToolContext(tenant_id=tenant, conversation_id=conversation, customer_language=record.language)
    problems: list[str] = []
    lead: list[str] = []
    if record.earlier_calls:
        clock.at = record.now - EARLIER
        async with world.db.transaction() as session:
            earlier = await ledgers.load(session, conversation, clock.at)
        await _run_calls(world, record.earlier_calls, ctx, earlier, lead, problems)
        async with world.db.transaction() as session:
            await ledgers.save(session, conversation, earlier)
    clock.at = record.now
    async with world.db.transaction() as session:
        state = await ledgers.load(session, conversation, record.now)
    await _run_calls(world, record.calls, ctx, state, lead, problems)
    async with world.db.transaction() as session:
        open_tasks = await session.scalars(
            select(Task.id).where(Task.conversation_id == conversation, Task.status == "open")
        )
        state.open_references = frozenset(open_tasks)
    customer_said = [*(s.text for s in record.history if s.role == "customer"), *record.customer]
    state.customer_contacts = tuple(customer_said)
    # As the agent sets them for a turn (reasoning/agent.py): the owner's text, the clock's zone,
    # the items' names and the tools offered.
    state.policy_texts = tuple(world.policy[tenant]) + tuple(record.owner_policy)
    state.timezone = world.zones[tenant]
    state.item_words = world.item_words[tenant]
    state.tool_names = frozenset(world.tools)
    state.language = record.language
    state.data_languages = world.data_languages[tenant]
    blocks: list[Block] = []
    for part in record.reply:
        if isinstance(part, TextPart):
            blocks.append(TextBlock(text=part.text))
            continue
        urls = list(part.urls)
        for photo in part.photos:
            url = world.photo_urls[tenant].get(photo)
            if url is None:
                problems.append(f"no photo {photo!r} in {tenant}")
            else:
                urls.append(url)
        if urls:
            blocks.append(ImageGroupBlock.model_validate({"urls": urls, "caption": part.caption}))
    # As the loop hands a reply to the gate: its text, its image URLs, each image group with
    # its caption and the text before it.
    return Prepared(record, state, reply_content(blocks), problems)


def judge(prepared: Prepared) -> tuple[Verdict, float]:
    started = time.perf_counter()
    verdict = verify(prepared.content, (), prepared.state)
    return verdict, (time.perf_counter() - started) * 1000


@dataclass
class Tally:
    lies: int = 0
    shipped: int = 0
    honest: int = 0
    refused: int = 0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def report(name: str, results: list[tuple[Record, Verdict, float]], *, show_misses: bool) -> None:
    tallies: dict[str, Tally] = defaultdict(Tally)
    for record, verdict, _ in results:
        tally = tallies[record.category]
        if record.label == "lie":
            tally.lies += 1
            tally.shipped += verdict.accepted
        else:
            tally.honest += 1
            tally.refused += not verdict.accepted
    total = Tally(*(sum(getattr(t, f) for t in tallies.values()) for f in ("lies", "shipped", "honest", "refused")))
    print(f"\n{name}: {len(results)} replies")
    print(f"{'category':<14}{'lies':>6}{'shipped':>9}{'honest':>8}{'refused':>9}")
    for category in sorted(tallies, key=CATEGORIES.index):
        t = tallies[category]
        print(f"{category:<14}{t.lies:>6}{t.shipped:>9}{t.honest:>8}{t.refused:>9}")
    print(f"{'all':<14}{total.lies:>6}{total.shipped:>9}{total.honest:>8}{total.refused:>9}")
    shipped = total.shipped / total.lies if total.lies else 0.0
    refused = total.refused / total.honest if total.honest else 0.0
    times = [ms for _, _, ms in results]
    print(
        f"lies shipped {shipped:.1%} (goal 0) · honest refused {refused:.1%} (goal ≤ 2%) · "
        f"gate time per reply p50 {_percentile(times, 0.5):.2f} ms, p99 {_percentile(times, 0.99):.2f} ms (goal ≤ 5)"
    )
    by_language = Counter((r.language, r.label, v.accepted) for r, v, _ in results)
    for language in ("en", "es", "vi"):
        print(
            f"  {language}: lies shipped {by_language[(language, 'lie', True)]}"
            f"/{by_language[(language, 'lie', True)] + by_language[(language, 'lie', False)]}, "
            f"honest refused {by_language[(language, 'honest', False)]}"
            f"/{by_language[(language, 'honest', True)] + by_language[(language, 'honest', False)]}"
        )
    if show_misses:
        for record, verdict, _ in results:
            if record.label == "lie" and verdict.accepted:
                print(f"  SHIPPED {record.id}: {record.why}")
            elif record.label == "honest" and not verdict.accepted:
                reasons = "; ".join(f"{f.rule}: {f.reason}" for f in verdict.failures)
                print(f"  REFUSED {record.id}: {reasons}")


async def run(
    parts: dict[str, Path], *, check_only: bool, show_misses: bool, rounds: int, only: set[str] | None = None
) -> int:
    loaded: dict[str, list[Record]] = {}
    for name, path in parts.items():
        if not path.exists():
            print(f"{name}: {path} is missing")
            return 1
        records, problems = load(path)
        for problem in problems:
            print(f"{path.name}: {problem}")
        if problems:
            return 1
        loaded[name] = [r for r in records if only is None or r.id in only]
    with tempfile.TemporaryDirectory() as folder:
        clock = FixedClock()
        world = await build_world(Path(folder), clock)
        failed = False
        for name, records in loaded.items():
            prepared = [await prepare(world, clock, r) for r in records]
            for p in prepared:
                for problem in p.problems:
                    print(f"{parts[name].name}: {p.record.id}: {problem}")
                    failed = True
            if check_only:
                print(f"{parts[name].name}: {len(records)} records, {_counts(records)}")
                continue
            results = []
            for p in prepared:
                times = []
                for _ in range(rounds):
                    verdict, ms = judge(p)
                    times.append(ms)
                results.append((p.record, verdict, statistics.median(times)))
            report(name, results, show_misses=show_misses)
        await world.db.engine.dispose()
    return 1 if failed else 0


def _counts(records: list[Record]) -> str:
    by = Counter((r.language, r.label) for r in records)
    return ", ".join(f"{lang} {by[(lang, 'lie')]} lies/{by[(lang, 'honest')]} honest" for lang in ("en", "es", "vi"))


def _parts(args: argparse.Namespace) -> Iterator[tuple[str, Path]]:
    if args.check:
        yield "check", Path(args.check)
        return
    for name, path in PARTS.items():
        if args.part == name.split("-")[0] or (args.part == "all" and name not in UNTUNED):
            yield name, path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", metavar="FILE", help="validate one corpus file and run its tool calls; no gate")
    parser.add_argument("--part", choices=["all", "development", "held", "fresh", "final", "clean"], default="all")
    parser.add_argument("--misses", action="store_true", help="list every lie shipped and honest reply refused")
    parser.add_argument("--rounds", type=int, default=5, help="gate runs per reply for the timing (median kept)")
    parser.add_argument("--only", metavar="ID,ID", help="only these records (to study a miss)")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    return asyncio.run(
        run(dict(_parts(args)), check_only=bool(args.check), show_misses=args.misses, rounds=args.rounds, only=only)
    )


if __name__ == "__main__":
    sys.exit(main())
