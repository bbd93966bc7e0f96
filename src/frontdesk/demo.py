"""The demo business (one tenant with a web chat and a terminal account, created idempotently) and
the demo's offline model."""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from frontdesk.platform.clock import Clock
from frontdesk.platform.models.local import LocalModelClient
from frontdesk.platform.models.local_weights import DEFAULT_LOCAL_MODEL, builtin_available
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, Tenant
from frontdesk.settings import Settings

DEMO_TENANT = "demo"
DEMO_WEBCHAT = "demo-webchat"
DEMO_TERMINAL = "demo-terminal"
DEMO_BUSINESS = "Demo Print Shop"


@dataclass(frozen=True)
class DemoAccounts:
    tenant_id: str
    webchat_id: str
    terminal_id: str


async def seed_demo(db: Database, clock: Clock) -> DemoAccounts:
    now = clock.now()
    async with db.transaction() as session:
        if await session.get(Tenant, DEMO_TENANT) is None:
            session.add(Tenant(id=DEMO_TENANT, name=DEMO_BUSINESS, pack="printshop", policy={}, created_at=now))
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


def load_with_progress(client: LocalModelClient, console: Console) -> None:
    """Join and verify the weights (the first time: a progress bar over 1.1 GB) and load them,
    saying what happens; once the file is verified, only the load is reported."""
    started = time.perf_counter()
    with Progress(
        TextColumn("  {task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn(), console=console
    ) as progress:
        task = progress.add_task("preparing the offline model", total=None)

        def joined(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total, description="joining and verifying the weights (once)")

        def stage(text: str) -> None:
            progress.update(task, description=text)

        client.load(joined, stage)
        progress.remove_task(task)
    console.print(f"  offline model ready in {time.perf_counter() - started:.1f} s")
