"""The tool policy catalog (fail closed) and the routing decision it is read with.

Every tool declares its domains, operation, risk, phases, aliases and whether it needs an explicit
confirmation. A tool without a policy is never offered (``ToolPolicyCatalog.unpoliced`` names
it, and each pack's tests fail on it). Nothing is inferred from a tool's name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from frontdesk.capabilities.tools import Tool

Operation = Literal["read", "create", "update", "delete"]
Risk = Literal["low", "medium", "high"]

# Intents that never unlock a write tool, whatever domains a router attached to them.
READ_ONLY_INTENTS = frozenset({"greeting", "unknown"})
# Intents that ask and never change anything: their domains' reads, and no writes (except, on a
# side query, the open flow's own tools).
ASKING_INTENTS = frozenset({"list", "search", "detail", "report"})
MIN_WRITE_CONFIDENCE = 0.6
# A back-office action names the kind of change it asks for: only writes of that kind are offered
# ("pause campaign X" gets no campaign_create). Intents not listed here are not narrowed.
ACTION_OPERATIONS: dict[str, frozenset[str]] = {
    "create": frozenset({"create"}),
    "clone": frozenset({"create"}),
    "issue": frozenset({"create"}),
    "update": frozenset({"update"}),
    "activate": frozenset({"update"}),
    "pause": frozenset({"update"}),
    "adjust": frozenset({"update"}),
    "revoke": frozenset({"update", "delete"}),
    "redeem": frozenset({"create", "update"}),
    "delete": frozenset({"delete"}),
}
CONFIRMED_SIGNAL = "confirmed"


@dataclass(frozen=True)
class RoutingDecision:
    """What a router concluded about a turn (multi-label: a turn may need several domains).

    ``phase``: where the conversation is in the business's flow (e.g. discovery, capture,
    post_capture). ``side_query``: a read-only question asked in the middle of a write flow.
    ``signals``: the lexicon hits and state facts that led here (kept in the trace)."""

    intent: str
    domains: frozenset[str]
    confidence: float
    phase: str
    side_query: bool = False
    signals: tuple[str, ...] = ()
    language: str = "en"

    def as_json(self) -> dict[str, Any]:
        return {
            "intent": self.intent,
            "domains": sorted(self.domains),
            "confidence": self.confidence,
            "phase": self.phase,
            "side_query": self.side_query,
            "signals": list(self.signals),
            "language": self.language,
        }


@dataclass(frozen=True)
class ToolPolicy:
    domains: frozenset[str]
    operation: Operation
    risk: Risk = "low"
    phases: frozenset[str] = frozenset()  # empty: every phase
    aliases: tuple[str, ...] = ()  # other names a model may call it by
    requires_confirmation: bool = False

    @property
    def writes(self) -> bool:
        return self.operation != "read"


@dataclass(frozen=True)
class Bundle:
    """The tools one turn may see, and the names (canonical or alias) that resolve to them."""

    tools: tuple[Tool, ...]
    names: Mapping[str, Tool] = field(default_factory=dict)

    def resolve(self, name: str) -> Tool | None:
        return self.names.get(name)

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]


class ToolPolicyCatalog:
    def __init__(
        self, tools: Iterable[Tool], policies: Mapping[str, ToolPolicy], *, discovery_domains: Iterable[str]
    ) -> None:
        self._tools = {t.name: t for t in tools}
        self._policies = dict(policies)
        self._discovery = frozenset(discovery_domains)

    def unpoliced(self) -> list[str]:
        """Tools that have no policy, and so are never offered."""
        return sorted(set(self._tools) - set(self._policies))

    def policy(self, name: str) -> ToolPolicy | None:
        return self._policies.get(name)

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def bundle(self, decision: RoutingDecision) -> Bundle:
        """The tools for ``decision``. Unknown or unsure turns get read-only discovery tools; a
        write tool also needs a write-capable intent, a matching phase and, when it asks for one,
        a confirmation signal; on a side query, a write tool must name the flow's phase."""
        unsure = decision.intent in READ_ONLY_INTENTS or decision.confidence < MIN_WRITE_CONFIDENCE
        chosen: list[Tool] = []
        for name, tool in self._tools.items():
            policy = self._policies.get(name)
            if policy is None:
                continue  # fail closed
            if unsure:
                offered = not policy.writes and policy.risk == "low" and bool(policy.domains & self._discovery)
                if decision.intent == "greeting":
                    offered = offered and bool(policy.domains & decision.domains)
            else:
                offered = bool(policy.domains & decision.domains) and (
                    not policy.phases or decision.phase in policy.phases
                )
                if policy.writes and policy.requires_confirmation:
                    offered = offered and CONFIRMED_SIGNAL in decision.signals
                if policy.writes and decision.intent in ACTION_OPERATIONS:
                    offered = offered and policy.operation in ACTION_OPERATIONS[decision.intent]
                if policy.writes and (decision.side_query or decision.intent in ASKING_INTENTS):
                    # A question adds read tools; the only writes are an open flow's own.
                    offered = offered and decision.side_query and decision.phase in policy.phases
            if offered:
                chosen.append(tool)
        names: dict[str, Tool] = {}
        for tool in chosen:
            names[tool.name] = tool
            policy = self._policies[tool.name]
            for alias in policy.aliases:
                names.setdefault(alias, tool)
        return Bundle(tuple(chosen), names)
