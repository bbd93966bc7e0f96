"""Reasoning: prompt assembly and the bounded generation loop (routing arrives in issue 3)."""

from frontdesk.reasoning.agent import Agent
from frontdesk.reasoning.loop import GenerationResult, LoopLimits, Outcome, run_generation
from frontdesk.reasoning.turn import Turn, TurnMessage

__all__ = ["Agent", "GenerationResult", "LoopLimits", "Outcome", "Turn", "TurnMessage", "run_generation"]
