"""The openings evaluated ahead at start are, byte for byte, what the businesses' turns open with
(else the evaluation is wasted: llama.cpp reuses only an exact prefix), newest businesses first,
and a business whose pack is not available is skipped without stopping the others."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from frontdesk.context.identity import prefix_hash
from frontdesk.platform.clock import ManualClock
from frontdesk.platform.store.schema import Tenant
from frontdesk.turns.warm import warm_openings
from harness import make_runtime, message, reply, traces


class Recorder:
    """Stands in for the embedded model: what it was asked to evaluate ahead."""

    def __init__(self) -> None:
        self.openings: list[str] = []

    async def prefill(self, system_text: str) -> int:
        self.openings.append(system_text)
        return len(system_text) // 4


async def test_each_business_opening_is_what_its_turns_open_with(db):
    clock = ManualClock()
    runtime, accounts = await make_runtime(
        db, {"name": "hi", "default": [reply("Hello! How can we help?")]}, clock=clock, chat_prompt_style="compact"
    )
    created = datetime(2026, 1, 1, tzinfo=UTC)
    async with db.transaction() as session:
        demo = await session.get(Tenant, accounts.tenant_id)
        assert demo is not None
        demo.policy = {"escalate_when": "Any order over 5000 pieces."}  # the owner's words open it too
        demo.created_at = created
        # Newer, but its pack's server is not connected: skipped, the others still evaluated.
        session.add(Tenant(id="t-loyal", name="Loyal", pack="loyalty", policy={}, created_at=created + timedelta(1)))
    assert runtime.agent is not None
    model = Recorder()

    assert await warm_openings(runtime.db, runtime.agent, model) == 1

    await runtime.ingestor.ingest(message(accounts.webchat_id, "hello"))
    clock.advance(5)
    await runtime.runner.run_until_idle()
    (trace,) = await traces(db)
    (opening,) = model.openings
    assert prefix_hash(opening) == trace.prefix_hash
    assert "Any order over 5000 pieces." in opening


async def test_only_the_newest_businesses_are_evaluated_ahead(db):
    runtime, _accounts = await make_runtime(db, {"name": "none", "default": [reply("hi")]}, chat_prompt_style="compact")
    base = datetime(2030, 1, 1, tzinfo=UTC)  # after the demo business, created now
    async with db.transaction() as session:
        for n in range(3):
            session.add(
                Tenant(id=f"t-{n}", name=f"Shop {n}", pack="catalog", policy={}, created_at=base + timedelta(n))
            )
    assert runtime.agent is not None
    model = Recorder()

    assert await warm_openings(runtime.db, runtime.agent, model, limit=2) == 2

    assert model.openings == [
        await runtime.agent.opening_of("t-2", "catalog", "Shop 2", {}, 0),
        await runtime.agent.opening_of("t-1", "catalog", "Shop 1", {}, 0),
    ]
    assert "Shop 2" in model.openings[0]
