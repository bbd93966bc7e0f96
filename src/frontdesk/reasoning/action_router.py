"""A multi-label router for back-office packs: action + every domain a message touches + state.

Model-free, like the print shop's router: regex lexicons per language for *domains* (campaign,
rule, member...) and *actions* (list, detail, create, activate...), plus the workflow state
loaded from the store (an open draft and its phase). "Which rules does campaign X have?" hits
two domains and gets both. Safety is structural:

- a write action needs a domain hit too; "create something" alone is ``unknown`` with low
  confidence, and the catalog then offers read-only discovery tools only;
- during an open flow, a question about something else is a ``side_query``: the flow's own
  tools stay, the asked domains add their read tools, and no other write tool appears;
- a confirmation ("yes", "đồng ý"...) counts only while a flow waits for one (its phase is
  ``review``), and only then carries the ``confirmed`` signal that confirmation-gated tools need.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from frontdesk.capabilities.policy import ASKING_INTENTS, CONFIRMED_SIGNAL, RoutingDecision
from frontdesk.reasoning.router import VIETNAMESE_LETTERS, RouterState

READ_ACTIONS = ASKING_INTENTS
IDLE = "idle"
REVIEW_PHASE = "review"


@dataclass(frozen=True)
class ActionLexicon:
    """Patterns per language: ``domains[domain][language]``, ``actions[action][language]``,
    ``confirm[language]``, ``cancel[language]``."""

    domains: Mapping[str, Mapping[str, list[str]]]
    actions: Mapping[str, Mapping[str, list[str]]]
    confirm: Mapping[str, list[str]]
    cancel: Mapping[str, list[str]]


def _compile(patterns: Mapping[str, list[str]]) -> dict[str, list[re.Pattern[str]]]:
    return {language: [re.compile(p, re.IGNORECASE) for p in items] for language, items in patterns.items()}


class ActionRouter:
    def __init__(self, lexicon: ActionLexicon) -> None:
        self._domains = {name: _compile(by_language) for name, by_language in lexicon.domains.items()}
        self._actions = {name: _compile(by_language) for name, by_language in lexicon.actions.items()}
        self._confirm = _compile(lexicon.confirm)
        self._cancel = _compile(lexicon.cancel)

    def _hits(self, table: Mapping[str, Mapping[str, list[re.Pattern[str]]]], text: str) -> tuple[set[str], set[str]]:
        names: set[str] = set()
        languages: set[str] = set()
        for name, by_language in table.items():
            for language, patterns in by_language.items():
                if any(p.search(text) for p in patterns):
                    names.add(name)
                    languages.add(language)
        return names, languages

    def _said(self, table: Mapping[str, list[re.Pattern[str]]], text: str) -> bool:
        return any(p.search(text) for patterns in table.values() for p in patterns)

    def route(self, text: str, state: RouterState) -> RoutingDecision:
        domains, domain_languages = self._hits(self._domains, text)
        actions, action_languages = self._hits(self._actions, text)
        language = _language(text, domain_languages | action_languages, state.preferred_language)
        writes = actions - READ_ACTIONS
        reads = actions & READ_ACTIONS
        flow = state.workflow_phase
        signals = sorted({*(f"domain:{d}" for d in domains), *(f"action:{a}" for a in actions)})
        if flow:
            signals.append(f"state:flow:{flow}")

        def decide(
            intent: str, chosen: set[str], confidence: float, *, side: bool = False, extra: tuple[str, ...] = ()
        ) -> RoutingDecision:
            return RoutingDecision(
                intent, frozenset(chosen), confidence, flow or IDLE, side, (*signals, *extra), language
            )

        if flow:
            own = set(state.workflow_domains)
            if self._said(self._cancel, text):
                return decide("cancel", own, 0.9)
            if flow == REVIEW_PHASE and self._said(self._confirm, text) and not (reads or writes - {"create"}):
                return decide("submit", own, 0.9, extra=(CONFIRMED_SIGNAL,))
            other = domains - own
            if reads or (other and not writes):
                # A question in the middle of the flow: answer it, keep the flow.
                return decide(_primary(reads) or "detail", own | domains, 0.8, side=True)
            return decide("continue", own | (domains if writes else set()), 0.8)
        if writes and domains:
            return decide(_primary(writes), domains, 0.85 if len(writes) == 1 else 0.7)
        if reads and domains:
            return decide(_primary(reads), domains, 0.85)
        if domains:
            return decide("detail", domains, 0.7)
        if writes or reads:
            # "create one" with nothing to create: never enough to unlock a write tool.
            return decide("unknown", set(), 0.4)
        return decide("unknown", set(), 0.2)


def _primary(actions: set[str]) -> str:
    """A stable pick when a message names several actions (the order is the lexicon's priority)."""
    order = ("create", "update", "delete", "activate", "pause", "clone", "adjust", "issue", "revoke", "redeem")
    for action in (*order, "report", "list", "search", "detail"):
        if action in actions:
            return action
    return sorted(actions)[0] if actions else ""


def _language(text: str, lexicon_languages: set[str], preferred: str | None) -> str:
    if VIETNAMESE_LETTERS.search(text) or lexicon_languages == {"vi"}:
        return "vi"
    if "en" in lexicon_languages:
        return "en"
    return preferred or "en"
