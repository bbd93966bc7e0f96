"""The demo business (one tenant with a web chat and a terminal account, created idempotently,
with the print shop's profile and catalog imported from its business file) and the demo's
offline model. Only ``frontdesk demo`` and ``frontdesk chat`` seed it, in the demo's own
database (``demo_database_url``)."""

from __future__ import annotations

import importlib.util
import json
import time
from dataclasses import dataclass
from functools import cache
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from sqlalchemy import func, select

from frontdesk.business import Actor, BusinessData, BusinessFile, CatalogItem, Importer, read_business_file
from frontdesk.capabilities.search import Document
from frontdesk.packs.catalog import DEMO_BUSINESS_FILE, DEMO_POLICY_FILE, PACK, item_index, item_words
from frontdesk.packs.catalog.items import documents
from frontdesk.platform.clock import Clock
from frontdesk.platform.media import MediaStore
from frontdesk.platform.models.local import LocalModelClient
from frontdesk.platform.models.local_weights import DEFAULT_LOCAL_MODEL, builtin_available
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, Tenant
from frontdesk.platform.store.schema_business import CatalogItemRow
from frontdesk.settings import Settings

DEMO_TENANT = "demo"
DEMO_WEBCHAT = "demo-webchat"
DEMO_TERMINAL = "demo-terminal"
DEMO_BUSINESS = "Demo Print Shop"
DEMO_LANGUAGES = ["en", "es", "vi"]


@dataclass(frozen=True)
class DemoAccounts:
    tenant_id: str
    webchat_id: str
    terminal_id: str


@cache
def demo_business_file() -> BusinessFile:
    """The print shop's business file, read and checked once per process."""
    return read_business_file(DEMO_BUSINESS_FILE, DEMO_LANGUAGES)


def demo_documents() -> tuple[Document, ...]:
    """The demo catalog as the search index sees it (benchmarks and tests of the index)."""
    items = tuple(
        CatalogItem.model_validate({**loaded.spec.model_dump(exclude={"photos"}), "photos": []})
        for loaded in demo_business_file().items
    )
    return documents(BusinessData(DEMO_TENANT, DEMO_BUSINESS, tuple(DEMO_LANGUAGES), 0, "UTC", None, items))


def demo_item_words() -> dict[str, list[str]]:
    """The demo catalog's words as the router hears them (tests and benchmarks of the router)."""
    return item_words(loaded.spec for loaded in demo_business_file().items)


def demo_playbook(*, compact: bool = False) -> str:
    """The catalog pack's playbook (or its compact one) as the demo tenant's turns read it: with
    the demo catalog's item index."""
    playbook = (PACK.compact_playbook or PACK.playbook) if compact else PACK.playbook
    return f"{playbook}\n{item_index([loaded.spec for loaded in demo_business_file().items], 'en')}"


def demo_policy() -> dict[str, Any]:
    """The print shop owner's policy fields the demo tenant is seeded with."""
    policy: dict[str, Any] = json.loads(DEMO_POLICY_FILE.read_text(encoding="utf-8"))
    return policy


async def seed_demo(db: Database, clock: Clock, media: MediaStore | None = None) -> DemoAccounts:
    """The demo tenant and its two accounts; with ``media``, also its profile and catalog (once:
    an owner's later edits of the demo's own data are kept)."""
    now = clock.now()
    async with db.transaction() as session:
        if await session.get(Tenant, DEMO_TENANT) is None:
            policy = demo_policy()
            session.add(
                Tenant(
                    id=DEMO_TENANT,
                    name=DEMO_BUSINESS,
                    pack="catalog",
                    policy=policy,
                    languages=DEMO_LANGUAGES,
                    data_revision=0,
                    created_at=now,
                )
            )
            await session.flush()
        for account_id, channel, name in (
            (DEMO_WEBCHAT, "webchat", f"{DEMO_BUSINESS} — web chat"),
            (DEMO_TERMINAL, "terminal", f"{DEMO_BUSINESS} — terminal"),
        ):
            if await session.get(ChannelAccount, account_id) is None:
                session.add(
                    ChannelAccount(
                        id=account_id, tenant_id=DEMO_TENANT, channel=channel, name=name, config={}, created_at=now
                    )
                )
        seeded = await session.scalar(
            select(func.count()).select_from(CatalogItemRow).where(CatalogItemRow.tenant_id == DEMO_TENANT)
        )
    if media is not None and not seeded:
        await Importer(db, clock, media).apply(DEMO_TENANT, demo_business_file(), Actor(via="demo"), audit=False)
    return DemoAccounts(DEMO_TENANT, DEMO_WEBCHAT, DEMO_TERMINAL)


def offline_chat_model(settings: Settings) -> str | None:
    """The demo's chat model when none is configured: the built-in embedded model, when llama.cpp
    and its weights are installed (the README's demo command installs both); else None, and the
    demo answers from its labelled offline script."""
    if settings.model_chat or not settings.demo_local_model:
        return None
    if importlib.util.find_spec("llama_cpp") is None or not builtin_available(cache_dir=settings.model_cache_dir):
        return None
    return f"local:{DEFAULT_LOCAL_MODEL}"


def load_with_progress(client: LocalModelClient, console: Console, *, load: bool = True) -> None:
    """Join and verify the weights (the first time: a progress bar over 1.1 GB) and, with
    ``load``, load them, saying what happens; once the file is verified, only the load is
    reported. Without ``load`` the worker process that runs the turns loads them."""
    started = time.perf_counter()
    with Progress(
        TextColumn("  {task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn(), console=console
    ) as progress:
        task = progress.add_task("preparing the offline model", total=None)

        def joined(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total, description="joining and verifying the weights (once)")

        def stage(text: str) -> None:
            progress.update(task, description=text)

        if load:
            client.load(joined, stage)
        else:
            client.prepare(joined)
        progress.remove_task(task)
    if load:
        console.print(f"  offline model ready in {time.perf_counter() - started:.1f} s")
    else:
        console.print("  offline model verified; the worker process loads it before its first turn")
