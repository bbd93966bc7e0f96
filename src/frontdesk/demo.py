"""The demo business: one tenant with a web chat and a terminal account, created idempotently."""

from __future__ import annotations

from dataclasses import dataclass

from frontdesk.platform.clock import Clock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, Tenant

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
