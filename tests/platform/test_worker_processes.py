"""``frontdesk serve`` runs its turns in worker processes beside the HTTP one (platform/worker_pool.py).

What an operator relies on: a customer's message is answered by a worker process; ``/metrics``
counts the turns the workers ran; a worker that dies is replaced and its turn answered once; a
SIGTERM drains every process; and a worker never outlives the server that started it.
Real processes on a real SQLite file; the model is a script that answers after a delay.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from instances_kit import (
    _cli,
    alive,
    base_env,
    children_of,
    conversation_of,
    echo_script,
    every_process_exits,
    http_client,
    instances,
    lease_holder,
    outcome,
    pid_of_owner,
    post_message,
    wait_for,
    wait_idle,
)
from pool_targets import echo_worker
from prometheus_client.parser import text_string_to_metric_families

from frontdesk.demo import seed_demo
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.observability.metrics import Metrics
from frontdesk.platform.store.engine import Database
from frontdesk.platform.worker_pool import WorkerPool

METRICS_TOKEN = "metrics-token-for-the-worker-process-tests"


def samples(exposition: bytes, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(exposition.decode())
        for s in family.samples
        if s.name == name
    }


# -- the pool's plumbing, with stand-in workers


async def test_the_pool_wakes_its_workers_in_turn_relays_their_changes_adds_up_their_metrics_and_replaces_a_dead_one():
    changed: list[str] = []
    two_changes = asyncio.Event()

    def on_changed(conversation_id: str) -> None:
        changed.append(conversation_id)
        if len(changed) == 2:
            two_changes.set()

    pool = WorkerPool(2, echo_worker, (3,), on_changed=on_changed, restart_delay_s=0.0)
    await pool.start()
    try:
        await pool.wait_ready(60)
        pool.wake()
        pool.wake()
        await asyncio.wait_for(two_changes.wait(), 30)
        assert sorted(changed) == ["woken-0", "woken-1"]  # one wake-up each, not both to one

        total = Metrics(process_metrics=False).render(await pool.metrics())
        assert samples(total, "frontdesk_turns_total") == {(("outcome", "answered"),): 6.0}

        dead = pool.pids[0]
        os.kill(dead, signal.SIGKILL)
        await wait_for(lambda: _replaced(pool, dead), 60, "a new worker process")
        await pool.wait_ready(60)
        assert pool.restarts == 1
        assert samples(Metrics(process_metrics=False).render(await pool.metrics()), "frontdesk_turns_total") == {
            (("outcome", "answered"),): 6.0
        }
    finally:
        pids = pool.pids
        await pool.stop(grace_s=1.0)
    assert not [pid for pid in pids if alive(pid)]


async def _replaced(pool: WorkerPool, dead: int) -> bool:
    return dead not in pool.pids and len(pool.pids) == 2


def test_metrics_of_several_processes_add_up_as_if_one_process_had_counted():
    edge, worker = Metrics(process_metrics=False), Metrics(process_metrics=False)
    worker.turns.labels("t1", "answered").inc(2)
    worker.turn_seconds.labels("answered").observe(0.7)
    edge.turns.labels("t1", "answered").inc(1)
    edge.turns.labels("t2", "held").inc(1)

    total = edge.render([worker.render()])

    assert samples(total, "frontdesk_turns_total") == {
        (("outcome", "answered"), ("tenant", "t1")): 3.0,
        (("outcome", "held"), ("tenant", "t2")): 1.0,
    }
    buckets = samples(total, "frontdesk_turn_duration_seconds_bucket")
    assert buckets[(("le", "0.5"), ("outcome", "answered"))] == 0.0
    assert buckets[(("le", "1.0"), ("outcome", "answered"))] == 1.0
    assert total.count(b"# TYPE frontdesk_turns_total counter") == 1  # one family, as Prometheus requires


# -- real `frontdesk serve` processes


@pytest.fixture
async def sqlite_url(tmp_path: Path) -> AsyncIterator[str]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'frontdesk.db'}"
    await _cli(base_env(tmp_path, url), "db", "upgrade")
    db = Database.from_url(url)
    try:
        await seed_demo(db, SystemClock())
    finally:
        await db.dispose()
    return url


def serve_env(tmp_path: Path, url: str, delay_ms: int, **settings: object) -> dict[str, str]:
    return base_env(
        tmp_path,
        url,
        model_chat=echo_script(tmp_path, delay_ms=delay_ms),
        worker_processes=1,
        workers=2,
        quiet_window_s=0.2,
        metrics_token=METRICS_TOKEN,
        **settings,
    )


async def message_in_a_turn(http, base: str, db: Database, session: str, text: str) -> tuple[str, str]:
    """Post ``text`` as ``session``'s message; once a turn holds its conversation, (its id, the owner)."""
    assert await post_message(http, base, session, "m1", text) == 202
    conversation_id = await wait_for(lambda: conversation_of(db, session), 10, "the conversation")
    owner = await wait_for(lambda: lease_holder(db, conversation_id), 20, "a turn holding the lease")
    return conversation_id, owner


async def test_a_worker_process_answers_the_customer_and_the_servers_metrics_count_its_turn(tmp_path, sqlite_url):
    db = Database.from_url(sqlite_url)
    try:
        async with (
            instances(1, serve_env(tmp_path, sqlite_url, delay_ms=0), tmp_path) as (server,),
            http_client() as http,
        ):
            assert await post_message(http, server.base, "worker-process-session-1", "m1", "hello") == 202
            await wait_idle(db, timeout_s=30)
            scraped = await http.get(f"{server.base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
            workers = children_of(server.pid)
            conversation_id = await conversation_of(db, "worker-process-session-1")
            assert conversation_id is not None
            stored = await outcome(db, conversation_id)
    finally:
        await db.dispose()

    (turn,) = stored.turns
    assert stored.replies == {turn: ["got: hello"]}
    assert pid_of_owner(stored.turns[turn]) in workers  # run by a worker process, not the HTTP one
    assert scraped.status_code == 200
    assert sum(samples(scraped.content, "frontdesk_turns_total").values()) == 1.0  # counted by the worker
    assert "process_cpu_seconds_total" in scraped.text  # the HTTP process's own series stay


async def test_a_worker_process_killed_mid_turn_is_replaced_and_the_customer_gets_one_reply_at_once(
    tmp_path, sqlite_url
):
    # Leases far longer than the wait below: only the server's recovery of its dead worker's
    # jobs and leases can get the turn answered in time, not their running out.
    lease_s = 600.0
    env = serve_env(
        tmp_path,
        sqlite_url,
        delay_ms=3000,
        lease_ttl_s=lease_s,
        job_lease_s=lease_s,
        poll_interval_s=0.2,
    )
    db = Database.from_url(sqlite_url)
    try:
        async with instances(1, env, tmp_path) as (server,), http_client() as http:
            conversation_id, owner = await message_in_a_turn(
                http, server.base, db, "worker-process-session-2", "killed"
            )
            victim = pid_of_owner(owner)
            assert victim in children_of(server.pid)
            os.kill(victim, signal.SIGKILL)

            await wait_idle(db, timeout_s=45)
            stored = await outcome(db, conversation_id)
            replacement = children_of(server.pid)
            log = server.log()
    finally:
        await db.dispose()

    (turn,) = stored.turns
    assert stored.replies == {turn: ["got: killed"]}  # answered once, by the process that replaced it
    assert pid_of_owner(stored.turns[turn]) in replacement
    assert victim not in replacement
    assert f"worker process 0 (pid {victim}) exited with -9" in log
    assert "1 running job(s) queued again, 1 conversation lease(s) let go" in log


async def test_sigterm_lets_the_worker_process_finish_its_turn_and_every_process_exits(tmp_path, sqlite_url):
    env = serve_env(tmp_path, sqlite_url, delay_ms=2000, shutdown_grace_s=30)
    db = Database.from_url(sqlite_url)
    try:
        async with instances(1, env, tmp_path) as (server,), http_client() as http:
            session = "worker-process-session-3"
            conversation_id, _owner = await message_in_a_turn(http, server.base, db, session, "drain")
            family = {server.pid, *children_of(server.pid)}
            server.signal(signal.SIGTERM)
            code = await server.wait_exit(60)
            stored = await outcome(db, conversation_id)
    finally:
        await db.dispose()

    assert code == 0, server.log()[-3000:]
    (turn,) = stored.turns
    assert stored.replies == {turn: ["got: drain"]}  # finished inside the grace, not abandoned
    await every_process_exits(family)


async def test_a_worker_process_leaves_when_the_server_that_started_it_is_killed(tmp_path, sqlite_url):
    env = serve_env(tmp_path, sqlite_url, delay_ms=0, shutdown_grace_s=1)
    async with instances(1, env, tmp_path) as (server,):
        workers = children_of(server.pid)
        assert workers
        server.signal(signal.SIGKILL)  # the HTTP process only: nobody tells the worker
        await server.wait_exit(10)

        async def all_gone() -> bool:
            return not [pid for pid in workers if alive(pid)]

        await wait_for(all_gone, 30, "the worker process to leave")
