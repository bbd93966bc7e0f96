"""A multi-label router for back-office packs: action + every domain a message touches + state.

Model-free, like the print shop's router: regex lexicons per language for *domains* (campaign,
rule, member...) and *actions* (list, detail, create, activate...), plus the workflow state
loaded from the store (an open draft and its phase). "Which rules does campaign X have?" hits
two domains and gets both; an entity id names its domain ("pause cmp_0006"). Vietnamese typed
without diacritics matches the same patterns (``_folding``). Safety is structural:

- a write action needs a domain hit too; "create something" alone is ``unknown`` with low
  confidence, and the catalog then offers read-only discovery tools only;
- a question ("when does X end?", "quy tắc nào đang tắt?") turns its verbs into reads, unless it
  is a request put as a question ("can you pause X?", "tắt giúp em được không?");
- a verb used as a noun ("báo cáo đổi quà", "tỉ lệ sử dụng voucher") is not an action;
- during an open flow, a question about something else is a ``side_query``: the flow's own
  tools stay, the asked domains add their read tools, and no other write tool appears;
- a confirmation ("yes", "đồng ý"...) counts only while something waits for one (the rule flow's
  ``review`` phase, or a proposed action's ``confirm`` phase), only when it asks for nothing else,
  and only then carries the ``confirmed`` signal that confirmation-gated tools need. While a
  proposal waits, any other message is routed as if nothing were pending.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from frontdesk.capabilities.policy import (
    ASKING_INTENTS,
    ASKS_SIGNAL,
    CONFIRMED_SIGNAL,
    PENDING_CONFIRMATION_PHASE,
    QUESTION_SIGNAL,
    RoutingDecision,
)
from frontdesk.reasoning._folding import Hit, PatternTable, Reader
from frontdesk.reasoning.entity_names import EntityNames
from frontdesk.reasoning.router import VIETNAMESE_LETTERS, RouterState
from frontdesk.verification.contacts import contact_values

READ_ACTIONS = ASKING_INTENTS
IDLE = "idle"
REVIEW_PHASE = "review"
# Phases whose next message may confirm (or refuse) what the assistant just laid out.
CONFIRM_PHASES = frozenset({REVIEW_PHASE, PENDING_CONFIRMATION_PHASE})
NEUTRAL = "*"  # the "language" of patterns that belong to none: entity ids, codes, "?"
# A confirmation may restate what it confirms ("yes, create it") but not ask for another change.
CONFIRMABLE_WRITES = frozenset({"create"})
_NOTHING_BEFORE = re.compile(r"[\W_]*")
_SENTENCE_BREAK = re.compile(r"[,.;:!?]\s+")
# A clause that points back at what the clause before it named ("…, then pause it", "…rồi thêm
# Lan vào").
_BACK_REFERENCE = re.compile(r"\b(?:it|its|them|this one|that one|nó|chúng|của nó)\b|\bvào\s*[.!]?\s*$", re.IGNORECASE)
# Where one request may end and the next begin: "…; …", "… + …", "…, and then …", "… và …", "… rồi …".
# A split counts only when its clauses ask for two changes, or a change beside a question
# (``_several``), so "campaigns and rewards" never splits a single request.
_CLAUSE_BREAK = re.compile(
    r"\s*(?:[;\n]|\s\+\s|,?\s+(?:and then|and also|and|then|also|plus)\s+|"
    r",?\s+(?:và|va|rồi|roi|sau đó|sau do|với cả|voi ca|xong)\s+)\s*",
    re.IGNORECASE,
)

Patterns = Mapping[str, list[str]]  # language -> regexes


class SharedTerm(TypedDict):
    """A word of several domains ("criteria": a rule's or a segment's). It adds its domains only
    when the message names none of them otherwise ("seg_0004's criteria" stays a segment), and,
    if ``aggregate``, only when it names no single entity by id or code ("how many members" is a
    report, "how many points does mem_0107 have" is not)."""

    domains: list[str]
    patterns: dict[str, list[str]]
    aggregate: NotRequired[bool]


@dataclass(frozen=True)
class ActionLexicon:
    """Patterns per language (``"*"``: any language): ``domains[domain][language]``,
    ``actions[action][language]`` (in priority order: when a message names several reads, or
    several changes, the first listed wins); cues ``confirm``, ``cancel``, ``decline`` (a bare "no", a cancel
    only where a confirmation is awaited), ``question``, ``request`` (a request however phrased);
    ``lead``: what may precede an imperative verb ("please", "can you"), matched on the text
    before it; ``nominal``: what makes the verb after it a noun ("lịch sử" + "đổi quà");
    ``possible``: a question whether a change can still be made, never a request for it."""

    domains: Mapping[str, Patterns]
    actions: Mapping[str, Patterns]
    confirm: Patterns
    cancel: Patterns
    decline: Patterns = field(default_factory=dict)
    shared: Mapping[str, SharedTerm] = field(default_factory=dict)
    question: Patterns = field(default_factory=dict)
    request: Patterns = field(default_factory=dict)
    lead: Patterns = field(default_factory=dict)
    nominal: Patterns = field(default_factory=dict)
    possible: Patterns = field(default_factory=dict)


@dataclass(frozen=True)
class _Reading:
    """What a message says on its own, before the conversation's state is considered."""

    domains: frozenset[str]
    reads: frozenset[str]
    writes: frozenset[str]
    cues: frozenset[str]
    signals: tuple[str, ...]
    language: str
    priority: tuple[str, ...]
    unaccented: bool = False  # read as Vietnamese typed without diacritics

    def primary(self, actions: Iterable[str]) -> str:
        """A stable pick among several actions (the lexicon's order)."""
        named = set(actions)
        return next((a for a in self.priority if a in named), min(named, default=""))

    def asks_nothing_else(self, own: frozenset[str], restated: frozenset[str]) -> bool:
        """Nothing read, no domain beyond ``own``, no change beyond the ``restated`` ones."""
        return not self.reads and not self.domains - own and not self.writes - restated

    def decide(
        self,
        intent: str,
        domains: Iterable[str],
        confidence: float,
        phase: str = IDLE,
        *,
        side: bool = False,
        extra: tuple[str, ...] = (),
    ) -> RoutingDecision:
        signals = (*self.signals, *extra)
        return RoutingDecision(intent, frozenset(domains), confidence, phase, side, signals, self.language)


class ActionRouter:
    """``names``: what the service calls its things (``reasoning/entity_names.py``); the runtime
    replaces it when it reads them again, so a new campaign's name routes without a restart."""

    def __init__(self, lexicon: ActionLexicon, names: EntityNames | None = None) -> None:
        self.names = names or EntityNames()
        self._domains = PatternTable(lexicon.domains)
        self._shared = [
            (frozenset(term["domains"]), term.get("aggregate", False), PatternTable({name: term["patterns"]}))
            for name, term in lexicon.shared.items()
        ]
        self._actions = PatternTable(lexicon.actions)
        self._priority = tuple(lexicon.actions)
        cues = {"confirm": lexicon.confirm, "cancel": lexicon.cancel, "decline": lexicon.decline}
        self._cues = PatternTable(
            {**cues, "question": lexicon.question, "request": lexicon.request, "possible": lexicon.possible}
        )
        self._question = PatternTable({"question": lexicon.question})  # folded alone, for ``_asks``
        self._lead = PatternTable({"lead": lexicon.lead})
        self._nominal = PatternTable({"nominal": lexicon.nominal})
        self._reader = Reader([self._domains, *(table for *_, table in self._shared), self._actions, self._cues])

    def route(self, text: str, state: RouterState) -> RoutingDecision:
        reading = self._read(unicodedata.normalize("NFC", text), state.preferred_language)
        flow = state.workflow_phase
        own = frozenset(state.workflow_domains)
        at_flow = (f"state:flow:{flow}",)
        if flow == PENDING_CONFIRMATION_PHASE:
            if "confirm" in reading.cues and reading.asks_nothing_else(own, CONFIRMABLE_WRITES):
                return reading.decide("submit", own, 0.9, flow, extra=(*at_flow, CONFIRMED_SIGNAL))
            if reading.cues & {"cancel", "decline"} and reading.asks_nothing_else(own, frozenset()):
                return reading.decide("cancel", own, 0.9, flow, extra=at_flow)
            # Anything else is a new request; the proposal simply stays unconfirmed.
            return self._several(text, reading, state.preferred_language) or _idle(reading)
        if flow:
            return _in_flow(reading, flow, own, at_flow)
        return self._several(text, reading, state.preferred_language) or _idle(reading)

    def _several(self, text: str, whole: _Reading, preferred: str | None) -> RoutingDecision | None:
        """A message that asks for two changes or more (or a change beside a question): each
        clause routed on its own (the decision's ``parts``). None when there is nothing to split."""
        if not any(s.startswith("action:") and s[len("action:") :] not in READ_ACTIONS for s in whole.signals):
            return None  # no change asked anywhere in it: nothing to split (most messages)
        clauses = [c for c in _CLAUSE_BREAK.split(unicodedata.normalize("NFC", text)) if c.strip()]
        if len(clauses) < 2:
            return None
        parts: list[RoutingDecision] = []
        # A clause of a message typed in unaccented Vietnamese is read as such, even alone ("xoa
        # segment seg_0006" after "doi ten rule 3 thanh …").
        for clause in clauses:
            reading = self._read(clause, preferred, unaccented=whole.unaccented)
            if parts and _BACK_REFERENCE.search(clause):
                # "…, then copy it to cmp_0002": the clause is about what the one before named too.
                reading = dataclasses.replace(reading, domains=reading.domains | parts[-1].domains)
            part = _idle(reading)
            if part.intent != "unknown" and part.domains:
                parts.append(part)
        changes = sum(p.intent not in READ_ACTIONS for p in parts)
        # Two changes; or a question and a change ("who redeemed X? also restock it"): each part
        # gets its own reading, so neither the question nor the change is lost to the other.
        if changes < 2 and not (changes == 1 and len(parts) >= 2):
            return None
        return dataclasses.replace(_idle(whole), parts=tuple(parts))

    def _read(self, text: str, preferred: str | None, *, unaccented: bool = False) -> _Reading:
        folded = unaccented or self._reader.unaccented_vietnamese(text)
        domain_hits = self._domains.hits(text, folded)
        named = {h.name for h in domain_hits}
        by_name = self.names.domains_in(text)
        if any(value.kind == "phone" for value in contact_values(text)):
            by_name |= {"member"}  # in a back office, a phone number is a member's
        # A thing named by its name is as specific as one named by its id.
        entity = bool(by_name) or any(h.language == NEUTRAL for h in domain_hits)
        named |= by_name
        domains = set(named)
        shared_hits: list[Hit] = []
        for names, aggregate, table in self._shared:
            hits = [] if names & named or (aggregate and entity) else table.hits(text, folded)
            if hits:
                shared_hits.extend(hits)
                domains |= names
        action_hits = [h for h in self._actions.hits(text, folded) if not self._nominal_at(text, h, folded)]
        cue_hits = self._cues.hits(text, folded)
        cues = frozenset(h.name for h in cue_hits)
        reads = {h.name for h in action_hits if h.name in READ_ACTIONS}
        writes = {h.name for h in action_hits if h.name not in READ_ACTIONS}
        signals = sorted(
            {
                *(f"domain:{d}" for d in domains),
                *(f"named:{d}" for d in by_name),
                *(f"action:{h.name}" for h in action_hits),
                *((ASKS_SIGNAL,) if self._asks(text, cues) else ()),
            }
        )
        if writes and "question" in cues and not self._imperative(text, action_hits, cues, folded):
            # "When does X end?" asks about the change; it does not ask for it.
            reads, writes = reads or {"detail"}, set()
            signals.append(QUESTION_SIGNAL)
        languages = {h.language for h in (*domain_hits, *shared_hits, *action_hits, *cue_hits)} - {NEUTRAL}
        language = _language(text, languages, folded, preferred)
        return _Reading(
            frozenset(domains),
            frozenset(reads),
            frozenset(writes),
            cues,
            tuple(signals),
            language,
            self._priority,
            folded,
        )

    def _asks(self, text: str, cues: frozenset[str]) -> bool:
        """Put as a question, with no request marker. The folded forms count even in a message
        that is not read as unaccented Vietnamese ("vch_0042 het han chua"): this only keeps a
        guessed change from being offered, so a wrong yes costs nothing."""
        if "possible" in cues:
            return True
        if "request" in cues:
            return False
        return "question" in cues or bool(self._question.hits(text, True))

    def _nominal_at(self, text: str, hit: Hit, folded: bool) -> bool:
        return hit.name not in READ_ACTIONS and bool(self._nominal.hits(text[: hit.start], folded))

    def _imperative(self, text: str, action_hits: list[Hit], cues: frozenset[str], folded: bool) -> bool:
        """A request put as a question: a request marker, or a change verb that opens the message
        or its sentence (after nothing but a lead such as "please", "can you", "giúp em"). Never
        a question whether the change is still possible ("thu hồi … còn được không?")."""
        if "possible" in cues:
            return False
        if "request" in cues:
            return True
        for hit in action_hits:
            if hit.name in READ_ACTIONS:
                continue
            # What the verb's own sentence says before it: "X is back with us, can you reactivate him?"
            before = _SENTENCE_BREAK.split(text[: hit.start])[-1]
            if _NOTHING_BEFORE.fullmatch(before) or self._lead.hits(before, folded):
                return True
        return False


def _idle(reading: _Reading) -> RoutingDecision:
    domains, reads, writes = reading.domains, reading.reads, reading.writes
    if writes and domains:
        return reading.decide(reading.primary(writes), domains, 0.85 if len(writes) == 1 else 0.7)
    if reads and domains:
        return reading.decide(reading.primary(reads), domains, 0.85)
    if domains:
        return reading.decide("detail", domains, 0.7)
    if writes or reads:
        # "create one" with nothing to create: never enough to unlock a write tool.
        return reading.decide("unknown", (), 0.4)
    return reading.decide("unknown", (), 0.2)


def _in_flow(reading: _Reading, flow: str, own: frozenset[str], at_flow: tuple[str, ...]) -> RoutingDecision:
    awaits_answer = flow in CONFIRM_PHASES
    if "cancel" in reading.cues or (awaits_answer and "decline" in reading.cues):
        return reading.decide("cancel", own, 0.9, flow, extra=at_flow)
    if awaits_answer and "confirm" in reading.cues and reading.asks_nothing_else(own, CONFIRMABLE_WRITES):
        return reading.decide("submit", own, 0.9, flow, extra=(*at_flow, CONFIRMED_SIGNAL))
    other = reading.domains - own
    if reading.reads or (other and not reading.writes and "question" in reading.cues):
        # A question in the middle of the flow: answer it, keep the flow. Another domain's word in
        # an answer to the flow ("50 points per purchase") is the flow's content, not a question.
        intent = reading.primary(reading.reads) or "detail"
        return reading.decide(intent, own | reading.domains, 0.8, flow, side=True, extra=at_flow)
    return reading.decide("continue", own | (reading.domains if reading.writes else set()), 0.8, flow, extra=at_flow)


def _language(text: str, languages: set[str], folded: bool, preferred: str | None) -> str:
    if folded or VIETNAMESE_LETTERS.search(text) or languages == {"vi"}:
        return "vi"
    if languages == {"en"}:
        return "en"
    return preferred or "en"
