"""The reasoning entry point: a ``Turn`` in, a ``GenerationResult`` out. No database access,
no channel knowledge: everything it needs is in the turn and its injected ports."""

from __future__ import annotations

from collections.abc import Sequence

from frontdesk.capabilities.tools import Tool, ToolContext
from frontdesk.platform.clock import Clock
from frontdesk.platform.models.gateway import ModelGateway
from frontdesk.reasoning.loop import GenerationResult, LoopLimits, run_generation
from frontdesk.reasoning.prompt import build_messages
from frontdesk.reasoning.turn import Turn


class Agent:
    def __init__(self, gateway: ModelGateway, clock: Clock, limits: LoopLimits, tools: Sequence[Tool] = ()) -> None:
        self._gateway = gateway
        self._clock = clock
        self._limits = limits
        self._tools = tuple(tools)

    @property
    def model_name(self) -> str:
        return self._gateway.client("chat").name

    async def generate(self, turn: Turn) -> GenerationResult:
        model = self._gateway.client("chat")
        messages = build_messages(turn, self._clock.now())
        context = ToolContext(tenant_id=turn.tenant_id, conversation_id=turn.conversation_id)
        return await run_generation(model, messages, self._tools, context, self._limits)
