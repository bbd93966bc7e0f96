"""Lock takeovers are counted: a conversation lease taken from a holder whose lease expired, and
jobs re-queued because their worker stopped renewing."""

from __future__ import annotations

import asyncio

from prometheus_client.parser import text_string_to_metric_families

from frontdesk.ingestion.lease import ConversationLease
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.jobs import JobPolicy, JobQueue
from frontdesk.platform.observability import Observability
from frontdesk.settings import Settings
from harness import make_runtime, message, reply


def takeovers(observability: Observability) -> dict[str, float]:
    assert observability.metrics is not None
    families = text_string_to_metric_families(observability.metrics.render().decode())
    return {
        s.labels["lock"]: s.value
        for f in families
        if f.name == "frontdesk_lock_takeovers"
        for s in f.samples
        if s.name.endswith("_total")
    }


async def test_only_a_lease_taken_from_an_expired_holder_counts_as_a_takeover(db):
    runtime, accounts = await make_runtime(db, {"name": "t", "default": [reply("hi")]})
    conversation_id = (await runtime.ingestor.ingest(message(accounts.webchat_id, "hello"))).conversation_id
    lease = ConversationLease(db, SystemClock(), ttl_s=0.05)
    observability = Observability.from_settings(Settings())
    with observability.activated():
        assert await lease.acquire(conversation_id, "worker-a")
        assert await lease.acquire(conversation_id, "worker-a")  # its own lease again: no takeover
        assert not await lease.acquire(conversation_id, "worker-b")  # held and live: refused
        await lease.release(conversation_id, "worker-a")
        assert await lease.acquire(conversation_id, "worker-b")  # released: free, no takeover
        assert takeovers(observability) == {}
        await asyncio.sleep(0.1)  # worker-b stops renewing (it died)
        assert await lease.acquire(conversation_id, "worker-c")
    assert takeovers(observability) == {"conversation": 1.0}


async def test_jobs_abandoned_by_a_dead_worker_count_as_takeovers(db):
    queue = JobQueue(db, SystemClock(), JobPolicy(lease_s=0.05))
    async with db.transaction() as session:
        for n in range(2):
            await queue.enqueue(session, "summarize_conversation", {"n": n})
    assert await queue.claim("dead-worker") is not None
    assert await queue.claim("dead-worker") is not None
    await asyncio.sleep(0.1)
    observability = Observability.from_settings(Settings())
    with observability.activated():
        assert await queue.requeue_abandoned() == 2
        assert await queue.requeue_abandoned() == 0
    assert takeovers(observability) == {"job": 2.0}
