"""The knowledge registry: a pack's reviewed snippets, selected per turn by domain and action.

Selection is deliberately dumb and predictable: a snippet is offered when it shares a domain with
the routed turn and names the turn's intent (or no intent). Greetings, unknown turns and turns
without domains get nothing, so small talk never pays for reference text. A token cap drops
whole snippets, least specific first; a snippet is never cut mid-sentence.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import date
from pathlib import Path

from frontdesk.capabilities.policy import RoutingDecision
from frontdesk.context.knowledge._file import parse_snippets
from frontdesk.context.knowledge.snippet import Snippet
from frontdesk.errors import ConfigError
from frontdesk.platform.tokens import count_tokens

log = logging.getLogger(__name__)

KNOWLEDGE_FILE = "knowledge.json"
# One snippet must leave room for others under any sensible per-turn cap: split longer ones.
MAX_SNIPPET_TOKENS = 160
# Turns that are about nothing in particular: reference text would only cost tokens.
NO_KNOWLEDGE_INTENTS = frozenset({"greeting", "unknown"})


class KnowledgeRegistry:
    def __init__(self, snippets: Iterable[Snippet], origin: str = "knowledge") -> None:
        self._snippets = tuple(snippets)
        seen: set[str] = set()
        problems: list[str] = []
        for snippet in self._snippets:
            if snippet.id in seen:
                problems.append(f"snippet {snippet.id!r}: duplicate id")
            seen.add(snippet.id)
        self._tokens = {snippet.id: count_tokens(snippet.line()) for snippet in self._snippets}
        problems += [
            f"snippet {snippet.id!r}: {self._tokens[snippet.id]} tokens, over the limit of "
            f"{MAX_SNIPPET_TOKENS}; split it"
            for snippet in self._snippets
            if self._tokens[snippet.id] > MAX_SNIPPET_TOKENS
        ]
        if problems:
            raise ConfigError(
                f"{origin} is invalid:\n" + "\n".join(f"  - {problem}" for problem in problems), details=problems
            )

    @classmethod
    def load(cls, path: Path, *, today: date | None = None) -> KnowledgeRegistry:
        """Read and validate a knowledge file; ``today`` bounds ``reviewed_at``.

        The default is the host's date, not an injected business clock: a review date is a fact
        about the file, and tests and demos run the business clock in another month."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"knowledge file {path} cannot be read: {exc}") from exc
        return cls(parse_snippets(text, str(path), today or date.today()), origin=f"knowledge file {path}")

    @property
    def snippets(self) -> tuple[Snippet, ...]:
        return self._snippets

    def tokens(self, snippet: Snippet) -> int:
        """Tokens of the snippet's rendered line (what the cap counts)."""
        return self._tokens[snippet.id]

    def select(self, decision: RoutingDecision, max_tokens: int | None = None) -> list[Snippet]:
        """The snippets for a routed turn, most specific first: those naming the turn's intent,
        then those sharing more of its domains, then file order. With ``max_tokens``, a snippet
        that does not fit is skipped whole and a later, shorter one may still fit."""
        if decision.intent in NO_KNOWLEDGE_INTENTS or not decision.domains:
            return []
        matching = [
            (position, snippet)
            for position, snippet in enumerate(self._snippets)
            if snippet.domains & decision.domains and (not snippet.actions or decision.intent in snippet.actions)
        ]
        matching.sort(key=lambda m: (not m[1].actions, -len(m[1].domains & decision.domains), m[0]))
        chosen: list[Snippet] = []
        used = 0
        for _, snippet in matching:
            cost = self._tokens[snippet.id]
            if max_tokens is not None and used + cost > max_tokens:
                continue
            chosen.append(snippet)
            used += cost
        return chosen

    def stale(self, today: date) -> list[Snippet]:
        """Snippets whose review window has passed (``reviewed_at + review_days`` is before today)."""
        return [snippet for snippet in self._snippets if snippet.is_stale(today)]


def load_pack_knowledge(pack_dir: Path, *, today: date | None = None) -> KnowledgeRegistry | None:
    """A pack's ``data/knowledge.json`` as a registry; None when the pack ships none.

    Stale snippets are still served (CI fails on them, see docs/knowledge.md) but logged here, so
    an instance running an old release says which notes nobody has re-checked."""
    path = pack_dir / "data" / KNOWLEDGE_FILE
    if not path.is_file():
        return None
    today = today or date.today()
    registry = KnowledgeRegistry.load(path, today=today)
    for snippet in registry.stale(today):
        log.warning(
            "knowledge snippet %s (%s) is %d days past its review (owner: %s)",
            snippet.ref,
            path,
            snippet.days_overdue(today),
            snippet.owner,
        )
    return registry
