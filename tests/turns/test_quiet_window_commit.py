"""A message stamped inside the quiet window but committed late still joins its burst.

Under load an ingest transaction can take seconds between stamping a message and committing it.
A turn that judged the conversation quiet in between used to answer the burst without that
message, which then got a reply of its own: two replies to one burst (seen once in 2,000 bursts
on PostgreSQL by ``bench/burst.py``). The lease's UPDATE now waits for such a transaction.

The race is PostgreSQL's: on SQLite the held ingest keeps the write lock, so the turn waits for it
with or without the fix (the SQLite run checks the behaviour, the PostgreSQL run the fix).
"""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.ingestion.ingest import Ingestor
from frontdesk.platform.clock import ManualClock
from frontdesk.platform.jobs import JobQueue
from harness import make_runtime, message, reply, reply_texts, traces

WINDOW_S = 0.3


class HeldBeforeCommit:
    """The job queue as the ingest sees it, except that enqueueing (the last thing an ingest does
    before committing, after the message row is stamped and inserted) waits to be let go."""

    def __init__(self, queue: JobQueue) -> None:
        self._queue = queue
        self.reached = asyncio.Event()
        self.let_go = asyncio.Event()

    async def enqueue(self, session: AsyncSession, *args: Any, **kwargs: Any) -> Any:
        self.reached.set()
        await self.let_go.wait()
        return await self._queue.enqueue(session, *args, **kwargs)

    def notify(self) -> None:
        self._queue.notify()


async def test_a_message_committed_after_the_window_closed_is_answered_with_its_burst(db):
    clock = ManualClock()
    runtime, accounts = await make_runtime(db, {"name": "echo", "default": [reply("got: {user_text}")]}, clock=clock)
    first = await runtime.ingestor.ingest(message(accounts.terminal_id, "first"))
    held = HeldBeforeCommit(runtime.queue)
    # The ignore: HeldBeforeCommit stands in for JobQueue with only the two methods the ingest calls.
    slow_ingestor = Ingestor(db, held, runtime.clock, turn_delay_s=WINDOW_S)  # type: ignore[arg-type]
    second = asyncio.create_task(slow_ingestor.ingest(message(accounts.terminal_id, "second")))
    await asyncio.wait_for(held.reached.wait(), 5)  # "second" is stamped a moment after "first"

    clock.advance(WINDOW_S + 0.3)  # by the clock, "first" has been quiet for the window
    turn = asyncio.create_task(runtime.assembler.process(first.conversation_id, "worker-a"))
    # Without the fix the turn answers "first" alone in milliseconds; a second is plenty for it
    # to show. (Real time only bounds how long a wrong turn gets: it cannot make this test fail.)
    await asyncio.sleep(1.0)
    held.let_go.set()
    await second
    await turn

    await runtime.runner.run_until_idle()
    assert await reply_texts(db) == ["got: first\nsecond"]
    assert [t.batch_size for t in await traces(db)] == [2]
