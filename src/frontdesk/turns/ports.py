"""What a turn needs from the world, as small ports: the store it reads and commits through, the
responder that writes its answer, and the typing indicator shown meanwhile.

``TurnAssembler`` is written against these and nothing else, so its logic (one turn per burst,
one more per mid-turn arrival, the lease fence, deferring to the quiet window, the model's
outages) runs in unit tests on ``turns/memory.py`` without a database. ``turns/sql_store.py`` is
the store the service runs on; the contract tests (``tests/turns/test_store_contract.py``) hold
both to the same behaviour.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, Protocol

from frontdesk.context.conversation import ConversationContext
from frontdesk.ingestion.quiet_window import Defer, Ready
from frontdesk.output.rendering import DeliveryTarget
from frontdesk.platform.model_budget import Claimed, Spent
from frontdesk.platform.store.schema import Message
from frontdesk.reasoning.agent import AgentRun
from frontdesk.reasoning.turn import Turn, TurnMessage
from frontdesk.turns.batch import Batch, Thread
from frontdesk.turns.commit import Committed
from frontdesk.turns.record import TurnRecord

# How a collecting transaction holds the lease: takes it, renews it, or holds it since the moment
# its last commit's fence settled.
TAKE: Final = "take"
RENEW: Final = "renew"
LeaseStep = Literal["take", "renew"] | datetime

# Whether the rows collected are to be answered now (``Ready``), later (``Defer``), or not by the
# AI at all (None: a person has the thread). Pure: it runs inside the collecting transaction.
Judge = Callable[[Sequence[Message], Thread, datetime], Ready | Defer | None]

# The latency the trace records, given the delivery's final status.
Latency = Callable[[str], dict[str, Any]]


@dataclass(frozen=True)
class Found:
    """What a collecting transaction read under the lease: the unanswered customer rows (oldest
    first) with their thread, the judge's verdict, and, when the verdict is ``Ready``, the
    history and the model budget's claim for the turn."""

    rows: list[Message]
    thread: Thread | None
    ready: Ready | Defer | None
    history: tuple[TurnMessage, ...] = ()
    claim: Claimed | Spent | None = None


@dataclass(frozen=True)
class Collected:
    """What the assembler makes of it: a batch, when to look again, or nothing."""

    found: Batch | Defer | None


class TurnStore(Protocol):
    """A turn's reads and writes. Each method is one transaction; ``collect`` and ``commit`` hold
    the lease fence (``ingestion/lease.py``)."""

    def kept_alive(self, conversation_id: str, owner: str) -> AbstractAsyncContextManager[None]:
        """Renew ``owner``'s lease while the body runs."""
        ...

    async def collect(self, conversation_id: str, owner: str, lease: LeaseStep, judge: Judge) -> Found | None:
        """Take, renew or hold the lease, read the unanswered rows and their thread, judge them,
        and for a ready batch read the history and claim the model's budget. None when the lease
        is not ``owner``'s."""
        ...

    async def release(self, conversation_id: str, owner: str) -> None: ...

    async def context(self, thread: Thread, now: datetime) -> ConversationContext:
        """What the responder knows of the conversation besides its messages."""
        ...

    async def commit(self, record: TurnRecord, target: DeliveryTarget) -> Committed:
        """Everything the turn writes, in one transaction under the fence. Raises ``LeaseLost``
        (and writes nothing) when the lease was taken over or another turn answered the batch."""
        ...

    async def deliver(self, committed: Committed, conversation_id: str, owner: str, latency: Latency) -> bool:
        """Send the committed reply; in its final transaction record the turn's latency and let the
        lease go if no customer message waits. Returns whether the lease was let go."""
        ...

    async def give_back(self, claim: Claimed) -> None:
        """Return a budget claim the turn did not use (the model was down)."""
        ...

    async def waiting(self, conversation_id: str) -> bool:
        """A customer message of the conversation waits for an answer."""
        ...

    async def media_landed(self, message_ids: tuple[int, ...]) -> bool:
        """One of these pending media messages is no longer pending."""
        ...

    async def come_back(self, conversation_id: str, delay_s: float) -> None:
        """Queue the conversation's turn job ``delay_s`` from now."""
        ...

    async def handed_off_since(self, conversation_id: str, since: datetime) -> bool:
        """An open hand-off task of the conversation was created at or after ``since``."""
        ...

    async def history(self, conversation_id: str) -> tuple[TurnMessage, ...]: ...

    async def mark_seen_without_reply(self, conversation_id: str) -> None:
        """A person has the thread: its customer rows are consumed without a turn."""
        ...


class Responder(Protocol):
    """Writes a turn's answer (``reasoning.agent.Agent``). Returns a value and writes nothing."""

    @property
    def model_name(self) -> str | None: ...

    async def generate(self, turn: Turn, context: ConversationContext, *, spent: Spent | None = None) -> AgentRun: ...

    async def courtesy_after_handoff(self, turn: Turn, context: ConversationContext) -> AgentRun: ...


class Typing(Protocol):
    """The typing indicator shown while the responder works (``output.delivery.Deliverer``)."""

    def typing_while(self, target: DeliveryTarget) -> AbstractAsyncContextManager[None]: ...
