"""Durable drafts: one live draft per flow, compare-and-set on version, TTL, restarts, and submits
whose side effect runs at most once per idempotency key. Real database, both backends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from frontdesk.errors import NotFoundError
from frontdesk.platform.clock import ManualClock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import ChannelAccount, Contact, Conversation, Tenant, WorkflowDraft
from frontdesk.workflows import (
    Draft,
    DraftClosed,
    DraftExists,
    DraftExpired,
    DraftNotFound,
    IdempotencyKeyReused,
    NotBeingSubmitted,
    StaleDraft,
    SubmitPending,
    Submitted,
    WorkflowStore,
)

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
FLOW = "loyalty.create_rule"
HOUR = 3600.0


class CountingAction:
    """The real side effect, counted: it must run exactly once per key."""

    def __init__(self, delay_s: float = 0.0, fail: bool = False) -> None:
        self.calls: list[Draft] = []
        self.delay_s = delay_s
        self.fail = fail

    async def __call__(self, draft: Draft) -> dict[str, Any]:
        self.calls.append(draft)
        await asyncio.sleep(self.delay_s)
        if self.fail:
            raise RuntimeError("loyalty service said no")
        return {"rule_id": f"rule-{len(self.calls)}", "name": draft.data.get("name")}


async def add_conversation(db: Database, n: int = 1) -> str:
    async with db.transaction() as session:
        if await session.get(Tenant, "t1") is None:
            session.add(Tenant(id="t1", name="Shop", created_at=T0))
            await session.flush()  # no relationships declared, so the unit of work needs the order spelled out
            session.add(ChannelAccount(id="ca1", tenant_id="t1", channel="webchat", name="Web", created_at=T0))
            await session.flush()
        session.add(Contact(id=f"ct{n}", tenant_id="t1", channel_account_id="ca1", external_id=f"s{n}", created_at=T0))
        await session.flush()
        session.add(
            Conversation(
                id=f"conv{n}",
                tenant_id="t1",
                channel_account_id="ca1",
                contact_id=f"ct{n}",
                created_at=T0,
                updated_at=T0,
            )
        )
    return f"conv{n}"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
async def store(db: Database, clock: ManualClock) -> WorkflowStore:
    return WorkflowStore(db, clock)


@pytest.fixture
async def conv(db: Database) -> str:
    return await add_conversation(db)


@pytest.fixture
async def second_db(db: Database, database_url: str) -> AsyncIterator[Database]:
    """Another instance on the same database (another process, as far as the store can tell)."""
    other = Database.from_url(database_url)
    yield other
    await other.dispose()


async def rows(db: Database) -> list[WorkflowDraft]:
    async with db.read() as session:
        return list(await session.scalars(select(WorkflowDraft).order_by(WorkflowDraft.created_at)))


# -- start / current / expiry ----------------------------------------------------------------------


async def test_a_started_draft_is_current_until_its_ttl_runs_out(store, conv, clock):
    draft = await store.start(conv, FLOW, "agent", {"name": "Gold"}, phase="choose_formula", ttl_s=HOUR)

    assert (draft.version, draft.status, draft.phase, draft.data) == (1, "open", "choose_formula", {"name": "Gold"})
    assert draft.expires_at == T0 + timedelta(hours=1)
    assert await store.current(conv, FLOW) == draft
    assert await store.current(conv, "loyalty.edit_rule") is None

    clock.advance(HOUR)
    assert await store.current(conv, FLOW) is None
    assert (await store.get(draft.id)).status == "open"  # still stored until the sweep

    again = await store.start(conv, FLOW, "agent", {"name": "Silver"}, ttl_s=HOUR)
    assert await store.current(conv, FLOW) == again
    assert (await store.get(draft.id)).status == "expired"


async def test_starting_a_second_live_draft_of_the_same_flow_raises_with_the_first(store, db, conv):
    first = await store.start(conv, FLOW, "agent", {"name": "Gold"})

    with pytest.raises(DraftExists) as refused:
        await store.start(conv, FLOW, "operator:ana", {"name": "Other"})

    assert refused.value.draft == first
    assert refused.value.details == {"draft_id": first.id, "status": "open", "version": 1}
    # Another flow, or the same flow in another conversation, is independent.
    await store.start(conv, "loyalty.edit_rule", "agent")
    await store.start(await add_conversation(db, 2), FLOW, "agent")
    assert len(await rows(db)) == 3


async def test_concurrent_starts_on_two_instances_open_exactly_one_draft(db, second_db, conv, clock):
    stores = [WorkflowStore(db, clock), WorkflowStore(second_db, clock)] * 3

    outcomes = await asyncio.gather(
        *(s.start(conv, FLOW, f"agent-{i}", {"i": i}) for i, s in enumerate(stores)), return_exceptions=True
    )

    started = [o for o in outcomes if isinstance(o, Draft)]
    assert len(started) == 1
    assert all(isinstance(o, DraftExists) and o.draft.id == started[0].id for o in outcomes if o is not started[0])
    assert len(await rows(db)) == 1


async def test_a_draft_for_an_unknown_conversation_is_refused_by_the_foreign_key(store, db):
    with pytest.raises(NotFoundError, match="no-such-conversation"):
        await store.start("no-such-conversation", FLOW, "agent")
    assert await rows(db) == []


# -- compare-and-set -------------------------------------------------------------------------------


async def test_update_moves_the_phase_merges_data_and_bumps_the_version(store, conv, clock):
    draft = await store.start(conv, FLOW, "agent", {"name": "Gold", "formula": None}, ttl_s=HOUR)
    clock.advance(60)

    moved = await store.update(draft.id, 1, phase="set_formula", data_changes={"formula": {"type": "points"}})
    kept = await store.update(moved.id, 2, data_changes={"criteria": ["vip"]}, ttl_s=2 * HOUR)

    assert (moved.version, moved.phase, moved.expires_at) == (2, "set_formula", draft.expires_at)
    assert kept.version == 3
    assert kept.phase == "set_formula"
    assert kept.data == {"name": "Gold", "formula": {"type": "points"}, "criteria": ["vip"]}
    assert kept.expires_at == clock.now() + timedelta(hours=2)
    assert kept.updated_at == clock.now() > kept.created_at
    assert await store.current(conv, FLOW) == kept


async def test_two_writers_with_the_same_version_one_wins_and_the_other_gets_stale_draft(db, second_db, conv, clock):
    draft = await WorkflowStore(db, clock).start(conv, FLOW, "agent", {"name": "Gold"})
    writers = [WorkflowStore(db, clock), WorkflowStore(second_db, clock)]

    outcomes = await asyncio.gather(
        *(w.update(draft.id, 1, data_changes={"name": f"writer-{i}"}) for i, w in enumerate(writers)),
        return_exceptions=True,
    )

    (won,) = [o for o in outcomes if isinstance(o, Draft)]
    (lost,) = [o for o in outcomes if isinstance(o, StaleDraft)]
    assert won.version == 2
    assert (lost.current_version, lost.expected_version) == (2, 1)
    assert lost.draft == won
    assert (await writers[0].get(draft.id)).data == won.data  # the loser overwrote nothing


async def test_a_stale_version_never_overwrites(store, conv):
    draft = await store.start(conv, FLOW, "agent", {"name": "Gold"})
    await store.update(draft.id, 1, data_changes={"name": "Platinum"})

    with pytest.raises(StaleDraft) as stale:
        await store.update(draft.id, 1, data_changes={"name": "Bronze"})

    assert stale.value.current_version == 2
    assert stale.value.code == "draft_stale"
    assert (await store.get(draft.id)).data == {"name": "Platinum"}


async def test_writes_to_expired_unknown_or_closed_drafts_are_refused(store, conv, clock):
    draft = await store.start(conv, FLOW, "agent", ttl_s=HOUR)
    with pytest.raises(DraftNotFound):
        await store.update("draft_missing", 1, phase="x")

    clock.advance(HOUR + 1)
    with pytest.raises(DraftExpired):
        await store.update(draft.id, 1, phase="review")
    with pytest.raises(DraftExpired):
        await store.cancel(draft.id, 1)

    live = await store.start(conv, FLOW, "agent", ttl_s=HOUR)
    cancelled = await store.cancel(live.id, 1)
    assert (cancelled.status, cancelled.version) == ("cancelled", 2)
    assert await store.current(conv, FLOW) is None
    with pytest.raises(DraftClosed):
        await store.update(live.id, 2, phase="review")


# -- submit ----------------------------------------------------------------------------------------


async def test_submit_runs_the_action_once_and_a_duplicate_gets_the_first_result(store, conv):
    draft = await store.start(conv, FLOW, "agent", {"name": "Gold"}, phase="review")
    action = CountingAction()

    first = await store.submit(draft.id, 1, "key-1", action)
    again = await store.submit(draft.id, 1, "key-1", action)

    assert isinstance(first, Submitted)
    assert isinstance(again, Submitted)
    assert len(action.calls) == 1
    assert action.calls[0].status == "submitting"  # the action sees the claimed draft
    assert first.result == again.result == {"rule_id": "rule-1", "name": "Gold"}
    assert (first.replayed, again.replayed) == (False, True)
    done = first.draft
    assert (done.status, done.version, done.idempotency_key, done.result) == ("submitted", 3, "key-1", first.result)
    assert done.phase == "review"
    assert done.submitted_at is not None
    assert await store.current(conv, FLOW) is None  # a new flow may start
    await store.start(conv, FLOW, "agent")


async def test_concurrent_submits_with_the_same_key_run_the_action_once_and_share_its_result(
    db, second_db, conv, clock
):
    draft = await WorkflowStore(db, clock).start(conv, FLOW, "agent", {"name": "Gold"})
    stores = [WorkflowStore(db, clock), WorkflowStore(second_db, clock)] * 3
    action = CountingAction(delay_s=0.2)  # long enough for every racer to arrive while it runs

    outcomes = await asyncio.gather(*(s.submit(draft.id, 1, "key-1", action) for s in stores))

    assert len(action.calls) == 1
    assert all(isinstance(o, Submitted) for o in outcomes)
    assert {str(o.result) for o in outcomes} == {str({"rule_id": "rule-1", "name": "Gold"})}
    assert sorted(o.replayed for o in outcomes) == [False] + [True] * 5


async def test_racing_submits_of_two_drafts_with_one_key_run_one_action(db, second_db, conv, clock):
    one = await WorkflowStore(db, clock).start(conv, FLOW, "agent", {"name": "one"})
    two = await WorkflowStore(db, clock).start(await add_conversation(db, 2), FLOW, "agent", {"name": "two"})
    action = CountingAction(delay_s=0.1)

    outcomes = await asyncio.gather(
        WorkflowStore(db, clock).submit(one.id, 1, "shared-key", action),
        WorkflowStore(second_db, clock).submit(two.id, 1, "shared-key", action),
        return_exceptions=True,
    )

    assert len(action.calls) == 1
    (done,) = [o for o in outcomes if isinstance(o, Submitted)]
    (conflict,) = [o for o in outcomes if isinstance(o, IdempotencyKeyReused)]
    assert conflict.draft.id == done.draft.id == action.calls[0].id


@pytest.mark.parametrize("same_draft", [True, False], ids=["same-draft", "other-draft"])
async def test_a_claim_committed_while_a_submit_is_in_flight_stops_that_submit(db, second_db, conv, clock, same_draft):
    store = WorkflowStore(db, clock)
    one = await store.start(conv, FLOW, "agent")
    two = one if same_draft else await store.start(await add_conversation(db, 2), FLOW, "agent")
    action = CountingAction()

    # Another instance claims draft one with the key and has not committed yet. Our submit's look-up
    # cannot see that claim; on PostgreSQL its write then waits on the row lock (same draft) or on the
    # unique index (other draft) and fails once the claim commits. On SQLite it waits for the lock.
    async with second_db.engine.connect() as other:
        await other.begin()
        await other.execute(
            update(WorkflowDraft)
            .where(WorkflowDraft.id == one.id)
            .values(status="submitting", idempotency_key="key-1", version=2)
        )
        racing = asyncio.create_task(store.submit(two.id, 1, "key-1", action, wait_s=0))
        await asyncio.sleep(0.3)
        await other.commit()

    if same_draft:
        outcome = await racing
        assert isinstance(outcome, SubmitPending)
        assert outcome.draft.version == 2
    else:
        with pytest.raises(IdempotencyKeyReused) as conflict:
            await racing
        assert conflict.value.draft.id == one.id
    assert action.calls == []


async def test_the_unique_index_is_the_last_line_against_a_reused_key(store, db, conv):
    draft = await store.start(conv, FLOW, "agent")
    await store.submit(draft.id, 1, "key-1", CountingAction())
    other = await store.start(await add_conversation(db, 2), FLOW, "agent")

    async def give_key(draft_id: str, key: str) -> None:  # bypassing the store, as a bug would
        async with db.transaction() as session:
            (await session.get(WorkflowDraft, draft_id)).idempotency_key = key

    with pytest.raises(IntegrityError):
        await give_key(other.id, "key-1")


async def test_submit_after_expiry_is_refused_and_runs_nothing(store, conv, clock):
    draft = await store.start(conv, FLOW, "agent", ttl_s=HOUR)
    clock.advance(HOUR)
    action = CountingAction()

    with pytest.raises(DraftExpired) as refused:
        await store.submit(draft.id, 1, "key-1", action)

    assert action.calls == []
    assert refused.value.details["expires_at"] == (T0 + timedelta(hours=1)).isoformat()


async def test_a_submitted_draft_cannot_be_submitted_again_with_another_key(store, conv):
    draft = await store.start(conv, FLOW, "agent")
    action = CountingAction()
    await store.submit(draft.id, 1, "key-1", action)

    with pytest.raises(DraftClosed) as refused:
        await store.submit(draft.id, 3, "key-2", action)
    with pytest.raises(DraftClosed):
        await store.update(draft.id, 3, phase="edit")

    assert len(action.calls) == 1
    assert refused.value.draft.result == {"rule_id": "rule-1", "name": None}


async def test_a_failing_action_reopens_the_draft_so_a_retry_runs_it_again(store, conv):
    draft = await store.start(conv, FLOW, "agent", {"name": "Gold"})
    action = CountingAction(fail=True)

    with pytest.raises(RuntimeError, match="said no"):
        await store.submit(draft.id, 1, "key-1", action)

    reopened = await store.get(draft.id)
    assert (reopened.status, reopened.version, reopened.idempotency_key) == ("open", 3, None)
    action.fail = False
    done = await store.submit(draft.id, 3, "key-1", action)
    assert isinstance(done, Submitted)
    assert not done.replayed
    assert len(action.calls) == 2


async def test_a_submit_that_died_after_claiming_is_pending_for_retries_until_resolved(store, conv):
    draft = await store.start(conv, FLOW, "agent", {"name": "Gold"})
    started = asyncio.Event()

    async def hangs(claimed: Draft) -> dict[str, Any]:
        started.set()
        await asyncio.Event().wait()  # the remote call never returns; then the process dies
        raise AssertionError("unreachable")

    crashed = asyncio.create_task(store.submit(draft.id, 1, "key-1", hangs))
    await started.wait()
    crashed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await crashed

    action = CountingAction()
    retry = await store.submit(draft.id, 1, "key-1", action, wait_s=0.1)
    assert isinstance(retry, SubmitPending)
    assert action.calls == []
    assert retry.draft.status == "submitting"
    assert await store.current(conv, FLOW) == retry.draft  # visible, and it still holds the flow
    with pytest.raises(DraftExists):
        await store.start(conv, FLOW, "agent")
    assert [d.id for d in await store.stuck_submissions(T0 + timedelta(seconds=1))] == [draft.id]

    with pytest.raises(NotBeingSubmitted):
        await store.resolve(draft.id, "other-key", {"rule_id": "r9"})
    resolved = await store.resolve(draft.id, "key-1", {"rule_id": "r9"})
    assert resolved.status == "submitted"
    replay = await store.submit(draft.id, 1, "key-1", action, wait_s=0)
    assert isinstance(replay, Submitted)
    assert replay.replayed
    assert replay.result == {"rule_id": "r9"}
    assert action.calls == []


async def test_resolving_a_dead_submit_as_not_done_reopens_the_draft(store, conv):
    draft = await store.start(conv, FLOW, "agent")
    async with store._db.transaction() as session:  # a claim whose process died before the action
        row = await session.get(WorkflowDraft, draft.id)
        row.status, row.idempotency_key, row.version = "submitting", "key-1", 2

    reopened = await store.resolve(draft.id, "key-1", None)

    assert (reopened.status, reopened.idempotency_key, reopened.version) == ("open", None, 3)
    done = await store.submit(draft.id, 3, "key-1", CountingAction())
    assert isinstance(done, Submitted)
    assert not done.replayed


# -- cleanup ---------------------------------------------------------------------------------------


async def test_cleanup_removes_only_expired_drafts_that_were_never_submitted(db, clock):
    store = WorkflowStore(db, clock, keep_submitted_s=30 * 86400)
    convs = [await add_conversation(db, n) for n in range(1, 6)]
    expired = await store.start(convs[0], FLOW, "agent", ttl_s=HOUR)
    live = await store.start(convs[1], FLOW, "agent", ttl_s=3 * HOUR)
    submitted = await store.start(convs[2], FLOW, "agent", ttl_s=HOUR)
    await store.submit(submitted.id, 1, "key-sub", CountingAction())
    cancelled = await store.start(convs[3], FLOW, "agent", ttl_s=3 * HOUR)
    await store.cancel(cancelled.id, 1)
    claimed = await store.start(convs[4], FLOW, "agent", ttl_s=HOUR)
    async with db.transaction() as session:  # a submit that died mid-way: never deleted
        (await session.get(WorkflowDraft, claimed.id)).status = "submitting"

    assert await store.cleanup_expired(T0 + timedelta(hours=2)) == 2

    assert {r.id for r in await rows(db)} == {live.id, submitted.id, claimed.id}
    assert {expired.id, cancelled.id}.isdisjoint(r.id for r in await rows(db))
    assert await store.cleanup_expired(T0 + timedelta(days=29)) == 1  # the live one expired meanwhile
    assert await store.cleanup_expired(T0 + timedelta(days=31)) == 1  # the record outlived its retention
    assert [r.id for r in await rows(db)] == [claimed.id]


# -- restarts --------------------------------------------------------------------------------------


async def test_a_flow_continues_after_a_restart_and_finishes_exactly_once(db, database_url, conv, clock):
    # The first process runs half the flow, then goes away.
    first = Database.from_url(database_url)
    draft = await WorkflowStore(first, clock).start(conv, FLOW, "agent", {"name": "Gold"}, phase="choose_formula")
    draft = await WorkflowStore(first, clock).update(draft.id, 1, phase="set_criteria", data_changes={"type": "points"})
    await first.dispose()

    # A new process (new engine, new store) picks it up from the database alone.
    second = Database.from_url(database_url)
    store = WorkflowStore(second, clock)
    resumed = await store.current(conv, FLOW)
    assert resumed == draft
    resumed = await store.update(resumed.id, resumed.version, phase="review", data_changes={"criteria": ["vip"]})
    action = CountingAction()
    done = await store.submit(resumed.id, resumed.version, "key-1", action)
    await second.dispose()

    third = Database.from_url(database_url)
    replay = await WorkflowStore(third, clock).submit(resumed.id, resumed.version, "key-1", action)
    await third.dispose()
    assert isinstance(done, Submitted)
    assert isinstance(replay, Submitted)
    assert replay.replayed
    assert replay.result == done.result
    assert action.calls[0].data == {"name": "Gold", "type": "points", "criteria": ["vip"]}
    assert len(action.calls) == 1


async def test_a_sqlite_file_keeps_a_half_finished_flow_across_restarts(tmp_path, clock):
    from frontdesk.platform.store.migrate import upgrade

    url = f"sqlite+aiosqlite:///{tmp_path / 'restart.db'}"
    first = Database.from_url(url)
    await upgrade(first)
    conv = await add_conversation(first)
    draft = await WorkflowStore(first, clock).start(conv, FLOW, "agent", {"name": "Gold"})
    await first.dispose()

    second = Database.from_url(url)
    try:
        store = WorkflowStore(second, clock)
        resumed = await store.current(conv, FLOW)
        assert resumed == draft
        done = await store.submit(draft.id, 1, "key-1", CountingAction())
        assert isinstance(done, Submitted)
        assert done.draft.status == "submitted"
    finally:
        await second.dispose()
