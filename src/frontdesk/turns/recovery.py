"""Crash recovery for turns: a dead worker's jobs and leases, and conversations left unanswered."""

from __future__ import annotations

from sqlalchemy import and_, exists, func, literal, or_, select

from frontdesk.ingestion.ingest import CONVERSATION_JOB_KEY_PREFIX, queue_turn
from frontdesk.ingestion.lease import ConversationLease
from frontdesk.platform.clock import Clock
from frontdesk.platform.jobs import DEAD, QUEUED, RUNNING, JobQueue
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Conversation, Job, Message


async def recover_dead_worker(lease: ConversationLease, queue: JobQueue, worker: str) -> tuple[int, int]:
    """A worker known to be dead (``serve`` saw its worker process exit): its jobs go back in the
    queue and its conversation leases are let go now, instead of when they run out. Returns
    (jobs, leases)."""
    leases = await lease.release_all_of(worker)
    jobs = await queue.requeue_of(worker)
    return jobs, leases


async def requeue_orphans(db: Database, clock: Clock, queue: JobQueue) -> int:
    """Sweeper: conversations with unanswered rows, no live lease and no pending job get one.

    A conversation whose job already died over these rows is left for an operator (the dead job
    and its ``last_error`` say why); a newer customer message queues a fresh job anyway."""
    now = clock.now()
    job_key = literal(CONVERSATION_JOB_KEY_PREFIX) + Conversation.id
    oldest_unanswered = (
        select(func.min(Message.created_at))
        .where(Message.conversation_id == Conversation.id, Message.role == "user", Message.processed_at.is_(None))
        .scalar_subquery()
    )
    async with db.transaction() as session:
        orphans = list(
            await session.scalars(
                select(Conversation.id).where(
                    exists().where(
                        Message.conversation_id == Conversation.id,
                        Message.role == "user",
                        Message.processed_at.is_(None),
                    ),
                    or_(Conversation.lock_owner.is_(None), Conversation.lock_until < now),
                    ~exists().where(and_(Job.key == job_key, Job.status.in_([QUEUED, RUNNING]))),
                    ~exists().where(and_(Job.key == job_key, Job.status == DEAD, Job.updated_at >= oldest_unanswered)),
                )
            )
        )
        for conversation_id in orphans:
            await queue_turn(queue, session, conversation_id)
    return len(orphans)
