"""The turn's unit-test kit: the assembler on the in-memory store, with a responder that answers
each batch by echoing it and can be held, failed or cut off by a test."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from frontdesk.context.conversation import ConversationContext
from frontdesk.errors import ModelAPIError
from frontdesk.ingestion.quiet_window import QuietWindow
from frontdesk.output.blocks import text_blocks
from frontdesk.output.rendering import DeliveryTarget
from frontdesk.platform.clock import ManualClock
from frontdesk.platform.model_budget import Spent
from frontdesk.reasoning.agent import AgentRun, ModelOutage
from frontdesk.reasoning.loop import GenerationResult, Outcome
from frontdesk.reasoning.turn import Turn
from frontdesk.turns.assembler import TurnAssembler
from frontdesk.turns.memory import InMemoryTurnStore

HOLD_TEXT = "A person will reply here shortly."


class EchoResponder:
    """Answers ``re: <the batch's texts>``. ``hold()`` makes the next answers wait for
    ``release``; ``outages`` answers in a row fail as a model outage; ``fail_with`` raises."""

    model_name = "test:echo"

    def __init__(self) -> None:
        self.seen: list[list[tuple[str, str]]] = []  # each turn's history and batch, as (role, text)
        self.asked = asyncio.Event()
        self.release: asyncio.Event | None = None
        self.outages = 0
        self.fail_with: Exception | None = None

    def hold(self) -> asyncio.Event:
        self.release = asyncio.Event()
        return self.release

    async def generate(self, turn: Turn, context: ConversationContext, *, spent: Spent | None = None) -> AgentRun:
        self.seen.append([(m.role, m.text) for m in (*turn.history, *turn.batch)])
        self.asked.set()
        if self.release is not None:
            await self.release.wait()
        if self.outages:
            self.outages -= 1
            error = ModelAPIError("503 from the vendor", status=503, transient=True)
            raise ModelOutage(error, AgentRun(GenerationResult(Outcome.FALLBACK, text_blocks(HOLD_TEXT), hold=True)))
        if self.fail_with is not None:
            raise self.fail_with
        text = "re: " + "\n".join(m.text for m in turn.batch)
        return AgentRun(GenerationResult(Outcome.REPLIED, text_blocks(text), steps=1))

    async def courtesy_after_handoff(self, turn: Turn, context: ConversationContext) -> AgentRun:
        return AgentRun(GenerationResult(Outcome.FALLBACK, text_blocks(HOLD_TEXT)))


class NoTyping:
    def __init__(self) -> None:
        self.shown: list[DeliveryTarget] = []

    @contextlib.asynccontextmanager
    async def typing_while(self, target: DeliveryTarget) -> AsyncIterator[None]:
        self.shown.append(target)
        yield


@dataclass
class TurnKit:
    clock: ManualClock = field(default_factory=ManualClock)
    quiet: QuietWindow = field(default_factory=lambda: QuietWindow(window_s=0.2, cap_s=10.0, media_ready_timeout_s=5.0))

    def __post_init__(self) -> None:
        self.store = InMemoryTurnStore(self.clock)
        self.responder = EchoResponder()
        self.typing = NoTyping()
        self.assembler = TurnAssembler(self.store, self.clock, self.responder, self.typing, self.quiet)

    def quiet_conversation(self, text: str) -> str:
        """A new conversation whose customer wrote ``text`` a second ago: ready for a turn."""
        conversation = self.store.open_conversation()
        self.store.receive(conversation, text)
        self.clock.advance(1)
        return conversation

    async def turn_held(self, conversation: str, worker: str = "worker-a") -> tuple[asyncio.Task[int], asyncio.Event]:
        """Start ``worker``'s job on the conversation and return once its responder is writing,
        held there until the returned event is set. The task's result is how many turns it ran."""
        release = self.responder.hold()
        self.responder.asked.clear()
        task = asyncio.create_task(self.assembler.process(conversation, worker))
        await self.responder.asked.wait()
        return task, release

    def texts(self) -> list[str]:
        return [sent.text for sent in self.store.sent]
