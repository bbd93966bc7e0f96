"""End-to-end channel harness: our real app on loopback, a platform double on another port, a
channel account of the demo tenant pointing its API calls at the double, scripted models."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from fake_telegram import TOKEN, FakeTelegram
from loopback import FakePlatform, client, running, serve
from sqlalchemy import select

from frontdesk.app import create_app
from frontdesk.cli_accounts import upsert_account
from frontdesk.demo import seed_demo
from frontdesk.ingestion.channels import CHANNELS
from frontdesk.output.blocks import Block
from frontdesk.output.rendering import DeliveryTarget
from frontdesk.platform.models.gateway import ModelClient, ModelGateway
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Message
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from harness import FAST, script_client


@dataclass
class Live:
    runtime: Runtime
    platform: FakePlatform
    http: httpx2.AsyncClient
    account_id: str
    channel: str

    async def idle(self) -> int:
        """Run every job the posts queued (turns, media) until none is left: the app runs no job
        runner of its own here, so a test sees the outcome without polling. Returns how many ran."""
        return await self.runtime.runner.run_until_idle()

    async def messages(self, role: str = "user") -> list[Message]:
        async with self.runtime.db.read() as session:
            return list(await session.scalars(select(Message).where(Message.role == role).order_by(Message.id)))

    async def deliver(self, contact: str, blocks: list[Block], reply_context: dict[str, Any] | None = None) -> str:
        """Stage and deliver ``blocks`` to ``contact`` as a turn would (the conversation must exist)."""
        conversation_id = await self.runtime.ingestor.find_conversation(self.account_id, contact)
        assert conversation_id is not None, "post a customer message first"
        account = await self.runtime.channel_deps.accounts.get(self.account_id, (self.channel,))
        target = DeliveryTarget(
            self.channel, self.account_id, conversation_id, contact, 0, account.config, reply_context or {}
        )
        async with self.runtime.db.transaction() as session:
            staged = await self.runtime.deliverer.stage(session, target, blocks, turn_id=None, origin="test")
        return await self.runtime.deliverer.deliver(staged)


def _client(script: dict[str, Any] | ModelClient) -> ModelClient:
    return script if not isinstance(script, dict) else script_client(script)


@contextlib.asynccontextmanager
async def live_channel(
    db: Database,
    tmp_path: Path,
    platform: FakePlatform,
    *,
    channel: str,
    account_id: str,
    config: dict[str, Any],
    secrets: dict[str, str],
    chat: dict[str, Any] | ModelClient,
    transcription: dict[str, Any] | ModelClient | None = None,
    **settings: Any,
) -> AsyncIterator[Live]:
    clients = {"chat": _client(chat)}
    if transcription is not None:
        clients["transcription"] = _client(transcription)
    async with running(platform):
        runtime = Runtime.build(
            # No workers: the test runs the jobs itself (``Live.idle``).
            Settings(**{**FAST, "workers": 0, "media_dir": tmp_path / "media", **settings}),
            gateway=ModelGateway.with_clients(clients),
            db=db,
        )
        await seed_demo(db, runtime.clock)
        await upsert_account(
            db,
            account_id=account_id,
            tenant_id="demo",
            channel=channel,
            name=f"Demo {channel}",
            config={**config, "api_base_url": platform.base_url},
            secrets=secrets,
            now=runtime.clock.now(),
            vault=runtime.channel_deps.accounts.vault,  # sealed when the settings carry a vault key
            own_id=CHANNELS[channel].own_id,
        )
        try:
            async with serve(create_app(runtime)) as base_url, client(base_url) as http:
                yield Live(runtime, platform, http, account_id, channel)
        finally:
            await runtime.close()


def live_telegram(
    db: Database,
    tmp_path: Path,
    *,
    account_id: str,
    webhook_secret: str,
    chat: dict[str, Any] | ModelClient,
    **options: Any,
) -> contextlib.AbstractAsyncContextManager[Live]:
    """``live_channel`` for a Telegram account bound to the fake Bot API's bot."""
    return live_channel(
        db,
        tmp_path,
        FakeTelegram(),
        channel="telegram",
        account_id=account_id,
        config={"bot_id": "7351862094"},
        secrets={"bot_token": TOKEN, "webhook_secret": webhook_secret},
        chat=chat,
        **options,
    )
