"""Read-only queries of what the servers did, for storm.py and crash.py: customer message rows,
replies with their receipts, turn leases, the job queue. Counts never write."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from frontdesk.platform.store.schema import Contact, Conversation, Job, Message, Receipt, TurnTrace


def monitor_engine(database_url: str) -> AsyncEngine:
    """Plain engine, no ``BEGIN IMMEDIATE``: on SQLite our reads never take the server's write lock."""
    if make_url(database_url).get_backend_name() == "sqlite":
        return create_async_engine(database_url)
    return create_async_engine(database_url, pool_size=2, max_overflow=0)


@dataclass(frozen=True)
class UserRow:
    id: int
    account: str
    channel_message_id: str | None
    text: str
    conversation_id: str
    processed: bool
    turn_id: int | None


@dataclass(frozen=True)
class Reply:
    """An assistant message and its delivery receipt."""

    message_id: int
    conversation_id: str
    account: str
    customer: str
    texts: tuple[str, ...]
    turn_id: int | None
    receipt_id: int | None
    receipt_status: str | None
    parts_sent: int
    parts_total: int
    receipt_errors: tuple[str, ...] = ()


async def user_rows(engine: AsyncEngine, accounts: list[str]) -> list[UserRow]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(
                Message.id,
                Message.channel_account_id,
                Message.channel_message_id,
                Message.content,
                Message.conversation_id,
                Message.processed_at,
                Message.turn_id,
            ).where(Message.role == "user", Message.channel_account_id.in_(accounts))
        )
        return [UserRow(r[0], r[1], r[2], r[3], r[4], r[5] is not None, r[6]) for r in rows]


async def replies(engine: AsyncEngine, accounts: list[str]) -> list[Reply]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(
                Message.id,
                Message.conversation_id,
                Message.channel_account_id,
                Contact.external_id,
                Message.content,
                Message.turn_id,
                Receipt.id,
                Receipt.status,
                Receipt.parts_sent,
                Receipt.parts_total,
                Receipt.errors,
            )
            .join(Conversation, Conversation.id == Message.conversation_id)
            .join(Contact, Contact.id == Conversation.contact_id)
            .outerjoin(Receipt, Receipt.message_id == Message.id)
            .where(Message.role == "assistant", Message.channel_account_id.in_(accounts))
            .order_by(Message.id)
        )
        out = []
        for mid, cid, account, customer, content, turn, rid, status, sent, total, errors in rows:
            try:
                blocks = json.loads(content)
                texts = tuple(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
            except (ValueError, AttributeError):
                texts = (content,)
            problems = tuple(str(e.get("error", e)) if isinstance(e, dict) else str(e) for e in errors or [])
            out.append(Reply(mid, cid, account, customer, texts, turn, rid, status, sent or 0, total or 0, problems))
        return out


async def busy(engine: AsyncEngine, accounts: list[str]) -> tuple[int, int]:
    """(turn jobs queued or running, customer messages not yet processed) for these accounts."""
    async with engine.connect() as conn:
        conversations = select(Conversation.id).where(Conversation.channel_account_id.in_(accounts))
        jobs = await conn.scalar(
            select(func.count())
            .select_from(Job)
            .where(Job.kind == "process_conversation", Job.status.in_(["queued", "running"]))
            .where(Job.payload["conversation_id"].as_string().in_(conversations))
        )
        pending = await conn.scalar(
            select(func.count())
            .select_from(Message)
            .where(Message.role == "user", Message.processed_at.is_(None), Message.channel_account_id.in_(accounts))
        )
        return int(jobs or 0), int(pending or 0)


async def wait_idle(
    engine: AsyncEngine, accounts: list[str], timeout_s: float, settle_s: float = 1.0
) -> tuple[bool, int, int]:
    """Until no turn job is queued/running and no customer message is unprocessed, for ``settle_s``
    in a row (bounded). Returns (idle, jobs, unprocessed)."""
    deadline = time.monotonic() + timeout_s
    quiet_since: float | None = None
    jobs = pending = -1
    while time.monotonic() < deadline:
        jobs, pending = await busy(engine, accounts)
        if jobs == 0 and pending == 0:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= settle_s:
                return True, 0, 0
        else:
            quiet_since = None
        await asyncio.sleep(0.2)
    return False, jobs, pending


async def leases(engine: AsyncEngine, accounts: list[str]) -> dict[str, int]:
    """conversation id -> pid of the process holding its turn lease (live leases only). Owners are
    ``host:pid:random/<worker>/job<id>.<attempt>`` (platform/workers.py)."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(Conversation.id, Conversation.lock_owner).where(
                Conversation.channel_account_id.in_(accounts),
                Conversation.lock_owner.is_not(None),
                Conversation.lock_until > datetime.now(UTC),
            )
        )
        return {cid: owner_pid(owner or "") for cid, owner in rows}


async def sending(engine: AsyncEngine, accounts: list[str]) -> set[str]:
    """Conversations with a delivery in progress (a ``sending`` receipt)."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(Receipt.conversation_id).where(Receipt.status == "sending", Receipt.channel_account_id.in_(accounts))
        )
        return {cid for (cid,) in rows}


def owner_pid(owner: str) -> int:
    parts = owner.split(":")
    return int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else -1


async def unprocessed(engine: AsyncEngine, accounts: list[str]) -> list[tuple[int, str]]:
    """(message id, conversation id) of every customer message not yet answered."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(Message.id, Message.conversation_id).where(
                Message.role == "user", Message.processed_at.is_(None), Message.channel_account_id.in_(accounts)
            )
        )
        return [(mid, cid) for mid, cid in rows]


async def still_unprocessed(engine: AsyncEngine, message_ids: list[int]) -> int:
    if not message_ids:
        return 0
    async with engine.connect() as conn:
        return int(
            await conn.scalar(
                select(func.count())
                .select_from(Message)
                .where(Message.id.in_(message_ids), Message.processed_at.is_(None))
            )
            or 0
        )


async def processed_at(engine: AsyncEngine, message_ids: list[int]) -> dict[int, datetime | None]:
    """message id -> when it was answered (its turn's reply committed)."""
    if not message_ids:
        return {}
    async with engine.connect() as conn:
        rows = await conn.execute(select(Message.id, Message.processed_at).where(Message.id.in_(message_ids)))
        return {mid: _utc(at) for mid, at in rows}


def _utc(at: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes (stored in UTC)."""
    return at.replace(tzinfo=UTC) if at is not None and at.tzinfo is None else at


async def turn_workers(engine: AsyncEngine, turn_ids: Iterable[int]) -> dict[int, int]:
    """turn id -> pid of the process that ran it."""
    ids = sorted(set(turn_ids))
    if not ids:
        return {}
    async with engine.connect() as conn:
        rows = await conn.execute(select(TurnTrace.id, TurnTrace.worker).where(TurnTrace.id.in_(ids)))
        return {tid: owner_pid(worker) for tid, worker in rows}


async def dead_jobs(engine: AsyncEngine) -> list[tuple[int, str, str | None]]:
    async with engine.connect() as conn:
        rows = await conn.execute(select(Job.id, Job.kind, Job.last_error).where(Job.status == "dead"))
        return [(i, kind, error) for i, kind, error in rows]
