"""The tool policy catalog (fail closed) and the routing decision it is read with.

Every tool declares its domains, operation, risk, phases, aliases and whether it needs an explicit
confirmation. A tool without a policy is never offered (``ToolPolicyCatalog.unpoliced`` names
it, and each pack's tests fail on it). Nothing is inferred from a tool's name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from frontdesk.capabilities.discovery import FIND_TOOLS, FIND_TOOLS_DOMAIN, FIND_TOOLS_FROM, find_tools_tool
from frontdesk.capabilities.tool_index import Ranked, ToolIndex
from frontdesk.capabilities.tools import Tool, ToolContext

Operation = Literal["read", "create", "update", "delete"]
Risk = Literal["low", "medium", "high"]

# Intents that never unlock a write tool, whatever domains a router attached to them.
READ_ONLY_INTENTS = frozenset({"greeting", "unknown"})
# Intents that ask and never change anything: their domains' reads, and no writes (except, on a
# side query, the open flow's own tools).
ASKING_INTENTS = frozenset({"list", "search", "detail", "report"})
MIN_WRITE_CONFIDENCE = 0.6
# A back-office action names the kind of change it asks for: only writes of that kind are offered
# ("pause campaign X" gets no campaign_create); a tool that declares its own ``actions`` is
# narrowed further to them. Intents not listed here are not narrowed.
ACTION_OPERATIONS: dict[str, frozenset[str]] = {
    "create": frozenset({"create"}),
    "clone": frozenset({"create"}),
    "issue": frozenset({"create"}),
    "enrol": frozenset({"create"}),
    "record": frozenset({"create"}),
    "update": frozenset({"update"}),
    "activate": frozenset({"update"}),
    "deactivate": frozenset({"update"}),
    "pause": frozenset({"update"}),
    "end": frozenset({"update"}),
    "adjust": frozenset({"update"}),
    "earn": frozenset({"update"}),
    "transfer": frozenset({"update"}),
    "evaluate": frozenset({"update"}),
    "assign": frozenset({"update"}),
    "unlock": frozenset({"update"}),
    "refresh": frozenset({"update"}),
    "restock": frozenset({"update"}),
    "extend": frozenset({"update"}),
    "expire": frozenset({"update"}),
    "add": frozenset({"update"}),
    "remove": frozenset({"update"}),
    "prioritize": frozenset({"update"}),
    "revoke": frozenset({"update", "delete"}),
    "redeem": frozenset({"create", "update"}),
    "delete": frozenset({"delete"}),
}
# Operation families: the kinds of change people ask for in many words. A write that declares a
# family is offered to every action of it, so a sibling verb still finds the tool ("suspend
# member X" reads as pause, member_deactivate declares deactivate: both are a state change).
ACTION_FAMILIES: dict[str, str] = {
    **dict.fromkeys(("create", "enrol"), "create"),
    "clone": "copy",  # a copy is made from something named: not offered to every "create"
    "record": "record",  # a purchase at the till, not a new thing of the programme
    **dict.fromkeys(
        ("update", "extend", "prioritize", "assign", "evaluate", "refresh", "unlock", "add", "remove", "expire"),
        "update",
    ),
    **dict.fromkeys(("activate", "deactivate", "pause", "end"), "state"),
    **dict.fromkeys(("delete", "revoke"), "delete"),
    "issue": "issue",
    "redeem": "redeem",
    **dict.fromkeys(("adjust", "earn", "transfer"), "adjust"),
    "restock": "restock",
}
CONFIRMED_SIGNAL = "confirmed"
# The router turned a change verb into a read ("when does X end?"): no change was asked.
QUESTION_SIGNAL = "form:question"
# The message is put as a question and marks no request ("is vch_0042 expired yet?").
ASKS_SIGNAL = "form:asks"
# Under this confidence the tool index widens the bundle (the second stage, ``_widened``).
WIDEN_BELOW = 0.8
SECOND_STAGE_READS = 3
SECOND_STAGE_WRITES = 2
# A card ranked this far below the best one is not what the request is about.
SECOND_STAGE_SHARE = 0.6
# The score (``tool_index.Ranked``) under which the best card is no evidence at all: small talk
# ("thanks, that's all for now") still shares a word or two with some card.
SECOND_STAGE_FLOOR = 1.85
# The phase of a conversation with no open flow (back-office routers say so explicitly).
IDLE_PHASE = "idle"
# The phase of a conversation whose last turn proposed one confirmation-gated action: the next
# message either confirms it (the router adds ``CONFIRMED_SIGNAL``), cancels it, or is routed as
# if nothing were pending (``capabilities.confirmation``).
PENDING_CONFIRMATION_PHASE = "confirm"


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
    # A message that asks for several changes ("pause cmp_0003 and issue a voucher to mem_0012"):
    # each request routed on its own. The bundle holds what each part unlocks, so neither change
    # brings the other's domains' writes along.
    parts: tuple[RoutingDecision, ...] = ()

    def as_json(self) -> dict[str, Any]:
        route: dict[str, Any] = {
            "intent": self.intent,
            "domains": sorted(self.domains),
            "confidence": self.confidence,
            "phase": self.phase,
            "side_query": self.side_query,
            "signals": list(self.signals),
            "language": self.language,
        }
        if self.parts:
            route["parts"] = [{"intent": p.intent, "domains": sorted(p.domains)} for p in self.parts]
        return route


@dataclass(frozen=True)
class ToolPolicy:
    """How a tool may be offered.

    ``domains``: what a turn must be about. Without ``home`` the tool is found through *any* of
    them. With ``home`` (one of ``domains``) the tool belongs to that domain: it is offered when
    the turn is about its home alone, or about *all* its domains, so a cross-domain tool ("a
    member's vouchers", home ``member``) does not ride along with every turn that mentions one of
    its domains. ``discovery``: a low-risk read that an unsure turn may still use (when the
    catalog's discovery domains include one of its domains)."""

    domains: frozenset[str]
    operation: Operation
    risk: Risk = "low"
    phases: frozenset[str] = frozenset()  # empty: every phase
    aliases: tuple[str, ...] = ()  # other names a model may call it by
    requires_confirmation: bool = False
    home: str | None = None
    discovery: bool = True
    # The router actions that ask for this change ("pause", "adjust"...); empty: any action of
    # its operation (``ACTION_OPERATIONS``). Declared, so "pause campaign X" is offered the pause
    # and not every campaign write.
    actions: frozenset[str] = frozenset()
    # Its operation family (``ACTION_FAMILIES``): any action of the family also asks for it.
    family: str | None = None
    # Router intents whose turn should start with this tool ("human_request" -> the hand-over):
    # told to clients that constrain their first step (``Bundle.first_step``).
    first_for: frozenset[str] = frozenset()
    # ...and only when the turn carries one of these router signals (empty: always). Saving a
    # request starts the turn only when the customer's name is known: forced to call it without
    # one, a small model invents a name.
    first_needs: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.home is not None and self.home not in self.domains:
            raise ValueError(f"home domain {self.home!r} is not one of {sorted(self.domains)}")
        if self.family is not None and self.family not in set(ACTION_FAMILIES.values()):
            raise ValueError(f"unknown operation family {self.family!r}")

    def asked_by(self, action: str) -> bool:
        """Whether a turn that asks for ``action`` asks for this write (its own actions, or its family)."""
        return action in self.actions or (self.family is not None and ACTION_FAMILIES.get(action) == self.family)

    @property
    def writes(self) -> bool:
        return self.operation != "read"

    def about(self, domains: frozenset[str]) -> bool:
        """Whether a turn about ``domains`` is about this tool."""
        if self.home is None:
            return bool(self.domains & domains)
        return self.domains <= domains or domains == {self.home}


@dataclass(frozen=True)
class Bundle:
    """The tools one turn may see, and the names (canonical or alias) that resolve to them.
    ``trimmed``: tools the turn qualified for but that did not fit the schema budget."""

    tools: tuple[Tool, ...]
    names: Mapping[str, Tool] = field(default_factory=dict)
    trimmed: tuple[str, ...] = ()
    # The router read the turn as asking for something (a fact, a saved request, a person), not
    # as a greeting or an unsure turn: a reply before any tool call could only guess at it, or
    # claim an action that never ran. A model client that constrains its output (``local:``)
    # enforces it on the turn's first step; the gate catches the guess either way.
    tool_first: bool = False
    # Narrower still: the tools this turn should start with (their policies' ``first_for`` name
    # the turn's intent), such as the hand-over when a customer asks for a person.
    first_step: tuple[str, ...] = ()

    def resolve(self, name: str) -> Tool | None:
        return self.names.get(name)

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    def with_tools(self, found: Iterable[Tool]) -> Bundle:
        """This bundle and the tools ``found`` during its turn (``find_tools``), each name once."""
        new = [t for t in found if t.name not in self.names]
        if not new:
            return self
        return dataclasses.replace(self, tools=(*self.tools, *new), names={**self.names, **{t.name: t for t in new}})


def _unsure(decision: RoutingDecision) -> bool:
    """A turn that may be given no write: a greeting, an unknown request, or too little confidence."""
    return decision.intent in READ_ONLY_INTENTS or decision.confidence < MIN_WRITE_CONFIDENCE


def _close(ranked: list[Ranked]) -> list[Ranked]:
    """The cards ranked near the best one (a card far below it is not what the text is about)."""
    return [hit for hit in ranked if hit.score >= ranked[0].score * SECOND_STAGE_SHARE] if ranked else []


def _placed(decision: RoutingDecision) -> bool:
    """A question, or a change outside any flow or pending confirmation: what the router read
    with confidence, which the clearest read it left out may still complete."""
    if decision.intent in ASKING_INTENTS:
        return True
    return decision.intent not in READ_ONLY_INTENTS and decision.phase == IDLE_PHASE


def _change_asked(decision: RoutingDecision) -> bool:
    """The router read a change in the turn (a change verb, not turned into a question)."""
    if QUESTION_SIGNAL in decision.signals:
        return False
    if decision.intent not in ASKING_INTENTS | READ_ONLY_INTENTS:
        return True
    return any(s.startswith("action:") and s.removeprefix("action:") not in ASKING_INTENTS for s in decision.signals)


def _starts(policy: ToolPolicy, decision: RoutingDecision) -> bool:
    """Whether a turn read as ``decision`` should start with this tool (``first_for``)."""
    if decision.intent not in policy.first_for:
        return False
    return not policy.first_needs or bool(policy.first_needs & set(decision.signals))


@dataclass(frozen=True)
class SchemaFit:
    """The chat slot's tool-schema budget, and what one tool's definition costs in it."""

    budget: int
    cost: Callable[[Tool], int]


Proposals = Callable[[Tool, ToolPolicy], Tool]


class ToolPolicyCatalog:
    """``proposals``: how a confirmation-gated single-call tool is offered before its confirmation
    (``capabilities.confirmation``); without it such a tool is offered only once confirmed.
    ``fit``: the schema budget a bundle is trimmed to (reads go first, largest first).
    ``index``: the tool cards' search (``capabilities/tool_index``): it widens unsure turns'
    bundles, and a catalog of ``FIND_TOOLS_FROM`` tools or more offers ``find_tools`` on every turn."""

    def __init__(
        self,
        tools: Iterable[Tool],
        policies: Mapping[str, ToolPolicy],
        *,
        discovery_domains: Iterable[str],
        proposals: Proposals | None = None,
        fit: SchemaFit | None = None,
        index: ToolIndex | None = None,
    ) -> None:
        self._tools = {t.name: t for t in tools}
        self._policies = dict(policies)
        self._index = index
        self._find_tools: Tool | None = None
        if index is not None and len(self._tools) >= FIND_TOOLS_FROM:
            self._find_tools = find_tools_tool(self._search)
            self._tools[FIND_TOOLS] = self._find_tools
            # Offered by ``bundle`` itself, on every turn: no domain of any turn reaches it.
            self._policies[FIND_TOOLS] = ToolPolicy(frozenset({FIND_TOOLS_DOMAIN}), "read", discovery=False)
        self._discovery = frozenset(discovery_domains)
        self._proposals = proposals
        self._proposed: dict[str, Tool] = {}
        self._fit = fit
        self._costs: dict[int, int] = {}  # by tool object: a proposal's description differs

    def close(self) -> None:
        """Release the tool index (its in-memory database)."""
        if self._index is not None:
            self._index.close()

    def unpoliced(self) -> list[str]:
        """Tools that have no policy, and so are never offered."""
        return sorted(set(self._tools) - set(self._policies))

    def policy(self, name: str) -> ToolPolicy | None:
        return self._policies.get(name)

    def tool(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def bundle(self, decision: RoutingDecision, text: str = "") -> Bundle:
        """The tools for ``decision`` (on the turn's ``text``). Unknown or unsure turns get
        read-only discovery tools; a write tool also needs a write-capable intent, a matching
        phase and, when it asks for one, a confirmation signal (before it, a single-call tool is
        offered as a proposal); on a side query, a write tool must name the flow's phase. Under
        ``WIDEN_BELOW`` confidence the tool index adds what the text itself points at."""
        chosen = [self._offer(tool, policy, decision) for tool, policy in self._candidates(decision)]
        if self._index is not None and text and decision.intent != "greeting" and decision.confidence < WIDEN_BELOW:
            chosen = self._widened(chosen, decision, text, self._index)
        elif self._index is not None and text and _placed(decision):
            chosen = self._best_read(chosen, decision, text, self._index)
        if self._find_tools is not None:
            chosen.append(self._find_tools)
        kept, trimmed = self._trim(chosen, decision.domains)
        names: dict[str, Tool] = {}
        for tool in kept:
            names[tool.name] = tool
            for alias in self._policies[tool.name].aliases:
                names.setdefault(alias, tool)
        tool_first = bool(kept) and decision.intent not in READ_ONLY_INTENTS
        first_step = tuple(t.name for t in kept if _starts(self._policies[t.name], decision))
        return Bundle(tuple(kept), names, trimmed, tool_first=tool_first, first_step=first_step if tool_first else ())

    def _candidates(self, decision: RoutingDecision) -> list[tuple[Tool, ToolPolicy]]:
        if decision.parts:
            by_part = {t.name: (t, p) for part in decision.parts for t, p in self._candidates(part)}
            return [by_part[name] for name in self._tools if name in by_part]
        unsure = _unsure(decision)
        confirmed = CONFIRMED_SIGNAL in decision.signals
        chosen: list[tuple[Tool, ToolPolicy]] = []
        for name, tool in self._tools.items():
            policy = self._policies.get(name)
            if policy is None:
                continue  # fail closed
            if unsure:
                offered = (
                    not policy.writes
                    and policy.risk == "low"
                    and policy.discovery
                    and bool(policy.domains & self._discovery)
                )
                if decision.intent == "greeting":
                    offered = offered and bool(policy.domains & decision.domains)
            else:
                offered = policy.about(decision.domains) and (not policy.phases or decision.phase in policy.phases)
                if policy.writes and policy.requires_confirmation and not confirmed:
                    offered = offered and self._proposes(policy)
                if policy.writes and policy.actions:
                    offered = offered and policy.asked_by(decision.intent)
                elif policy.writes and decision.intent in ACTION_OPERATIONS:
                    offered = offered and policy.operation in ACTION_OPERATIONS[decision.intent]
                if policy.writes and (decision.side_query or decision.intent in ASKING_INTENTS):
                    # A question adds read tools; the only writes are an open flow's own.
                    offered = offered and decision.side_query and decision.phase in policy.phases
            if offered:
                chosen.append((tool, policy))
        return chosen

    def discovered(self, names: Iterable[str], decision: RoutingDecision, *, writes: bool) -> list[Tool]:
        """Tools a search found, as the turn may see them: a read whose phases allow the turn's
        as it is (only a low-risk one on an unsure turn); a write only if ``writes`` and the turn
        could be given one at all (not a greeting, an unsure turn, a voice note not yet
        confirmed, or a side query), and then as a proposal the user confirms on a later turn
        (outside any flow); nothing without a policy. A found write need not be of the action
        the router read: the search exists for turns the router misread, and the confirmation
        is what makes that safe."""
        unsure = _unsure(decision)
        writes = writes and not unsure and not decision.side_query
        found: list[Tool] = []
        for name in names:
            tool, policy = self._tools.get(name), self._policies.get(name)
            if tool is None or policy is None or name == FIND_TOOLS:
                continue
            if policy.phases and decision.phase not in policy.phases:
                continue
            if not policy.writes:
                if policy.risk == "low" or not unsure:
                    found.append(tool)
            elif writes and self._proposes(policy):
                found.append(self._proposal(tool, policy))
        return found

    def _widened(self, chosen: list[Tool], decision: RoutingDecision, text: str, index: ToolIndex) -> list[Tool]:
        """The second stage of an unsure turn: the reads the text's words point at and, when it
        asks for a change the router could not place, the writes they point at in the domains it
        names (as proposals)."""
        ranked = self._ranked(index, text, decision)
        if not ranked or ranked[0].score < SECOND_STAGE_FLOOR:
            return chosen
        close = _close(ranked)
        have = {t.name for t in chosen}
        placed = any(self._policies[t.name].writes for t in chosen)
        # A change verb the router knows, or a request not put as a question whose words point
        # at a write before anything else.
        pointed = self._policies[ranked[0].name].writes
        change = _change_asked(decision) or (ASKS_SIGNAL not in decision.signals and pointed)
        change = change and not placed and bool(decision.domains)
        reads: list[str] = []
        writes: list[str] = []
        for hit in close:
            policy = self._policies[hit.name]
            if hit.name in have:
                continue
            if not policy.writes and len(reads) < SECOND_STAGE_READS:
                reads.append(hit.name)
            elif policy.writes and change and policy.domains & decision.domains and len(writes) < SECOND_STAGE_WRITES:
                writes.append(hit.name)
        return [*chosen, *self.discovered([*reads, *writes], decision, writes=change)]

    def _ranked(
        self, index: ToolIndex, text: str, decision: RoutingDecision, limit: int = 12, *, by_domains: bool = True
    ) -> list[Ranked]:
        """The cards ``text`` (and, ``by_domains``, the router's domains) match, of the tools the
        turn's phase admits at all (a flow's steps outside the flow are not candidates, and must
        not outrank those that are)."""
        hits = index.rank(text, also=decision.domains if by_domains else (), limit=limit + 8)
        admitted = [
            hit
            for hit in hits
            if (policy := self._policies.get(hit.name)) is not None
            and hit.name != FIND_TOOLS
            and (not policy.phases or decision.phase in policy.phases)
        ]
        return admitted[:limit]

    def _best_read(self, chosen: list[Tool], decision: RoutingDecision, text: str, index: ToolIndex) -> list[Tool]:
        """A turn the router placed still gets the one read its words point at most clearly,
        when the router's domains left it out ("what can a member get for 700 points?" is about
        rewards as much as members; "…if it has no budget left, pause it" needs the campaign's
        performance as well as the pause)."""
        have = {t.name for t in chosen}
        reads = [hit for hit in self._ranked(index, text, decision, limit=6) if not self._policies[hit.name].writes]
        if not reads or reads[0].score < SECOND_STAGE_FLOOR:
            return chosen
        left_out = [hit.name for hit in _close(reads) if hit.name not in have]
        # the best read the router left out, as clear as its best
        return [*chosen, *self.discovered(left_out[:1], decision, writes=False)]

    def search(self, need: str, decision: RoutingDecision) -> list[Tool]:
        """What ``find_tools(need)`` finds on a turn read as ``decision``: the cards ``need``
        matches, admitted under the turn's rules (``discovered``)."""
        if self._index is None:
            return []
        ranked = self._ranked(self._index, need, decision, limit=8, by_domains=False)
        return self.discovered([hit.name for hit in _close(ranked)], decision, writes=True)

    def _search(self, need: str, context: ToolContext) -> list[Tool]:
        return self.search(need, context.decision or RoutingDecision("unknown", frozenset(), 0.0, IDLE_PHASE))

    def _proposal(self, tool: Tool, policy: ToolPolicy) -> Tool:
        assert self._proposals is not None
        if tool.name not in self._proposed:
            self._proposed[tool.name] = self._proposals(tool, policy)
        return self._proposed[tool.name]

    def _proposes(self, policy: ToolPolicy) -> bool:
        """A single call outside any flow can be proposed now and confirmed next turn; a flow's
        own gated step (a draft's submit) is confirmed inside its flow instead."""
        return self._proposals is not None and IDLE_PHASE in policy.phases

    def _offer(self, tool: Tool, policy: ToolPolicy, decision: RoutingDecision) -> Tool:
        if not (policy.writes and policy.requires_confirmation) or CONFIRMED_SIGNAL in decision.signals:
            return tool
        return self._proposal(tool, policy)  # _candidates only lets a gated tool through with proposals

    def _trim(self, chosen: list[Tool], domains: frozenset[str]) -> tuple[list[Tool], tuple[str, ...]]:
        """Within the schema budget: writes, flow steps and ``find_tools`` stay (what the turn
        asked for, or its way to more). Reads go from the least to the most specific to the turn:
        those that cover fewer of its domains first ("a member's vouchers" outlives "list
        members" on a member + voucher question), plain reads before list/search ones, then the
        largest schema first."""
        if self._fit is None:
            return chosen, ()
        fit = self._fit
        costs = {t.name: self._cost(t, fit) for t in chosen}
        total = sum(costs.values())
        if total <= fit.budget:
            return chosen, ()

        def rank(tool: Tool) -> tuple[int, int, int, int]:
            policy = self._policies[tool.name]
            if policy.writes or policy.phases or tool is self._find_tools:
                return (1, 0, 0, 0)
            return (0, len(policy.domains & domains), int(policy.discovery), -costs[tool.name])

        dropped: list[str] = []
        for tool in sorted(chosen, key=rank):
            if total <= fit.budget or rank(tool)[0] == 1:
                break
            dropped.append(tool.name)
            total -= costs[tool.name]
        gone = set(dropped)
        return [t for t in chosen if t.name not in gone], tuple(dropped)

    def _cost(self, tool: Tool, fit: SchemaFit) -> int:
        if id(tool) not in self._costs:
            self._costs[id(tool)] = fit.cost(tool)
        return self._costs[id(tool)]
