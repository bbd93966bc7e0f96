"""A model-free search over tool cards: which tools a request's words point at.

The router reads a turn through its lexicon and the catalog's policies; what the lexicon has not
seen ("shelve the Summer Splash", "what can a member get for 700 points?") it cannot place. This
index is the second opinion: every tool has a card (its name's words, its description, its
domains, and phrases people use for it, per language), and a request is ranked against the
cards with BM25, the ranking every search engine starts from. SQLite's FTS5 computes it (the
standard library has it; the catalog's own search uses it too): one in-memory table, a row per
tool and language, queried with the request's words and its adjacent word pairs, so
"tạm dừng" counts as a phrase as well as two syllables. Vietnamese typed without diacritics
matches the same cards: both sides are folded before they are compared.

What the index finds is only a ranking. What a turn may be offered of it is the catalog's rule
(``capabilities/discovery.py``).
"""

from __future__ import annotations

import itertools
import math
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from frontdesk.capabilities.search import fold  # the catalog search's folding: lower case, no marks, đ → d
from frontdesk.capabilities.tools import Tool

_WORD = re.compile(r"[^\W\d_]{2,}")  # letters only: ids, amounts and dates say nothing of the tool
MAX_QUERY_WORDS = 40  # a pasted paragraph is not a request: its first words are enough


@dataclass(frozen=True)
class ToolCard:
    """What a tool is called and asked for, per language (``texts[language]``)."""

    name: str
    texts: Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class Ranked:
    name: str
    score: float  # BM25 over the log of the number of cards; higher is better


def tool_cards(
    tools: Iterable[Tool], domains: Mapping[str, Iterable[str]], phrases: Mapping[str, Mapping[str, Sequence[str]]]
) -> list[ToolCard]:
    """A card per tool: its name's words, description, domains and its fields' descriptions in
    English, plus the pack's ``phrases[tool][language]``."""
    cards: list[ToolCard] = []
    for tool in tools:
        own = [" ".join(sorted(domains.get(tool.name, ())))]
        schema = tool.definition().parameters_json_schema.get("properties", {})
        fields = [str(spec.get("description", "")) for spec in schema.values() if isinstance(spec, dict)]
        texts: dict[str, list[str]] = {"en": [tool.name, tool.description or "", *fields, *own]}
        for language, said in phrases.get(tool.name, {}).items():
            texts.setdefault(language, [*own]).extend(said)
        cards.append(ToolCard(tool.name, texts))
    return cards


class ToolIndex:
    """BM25 over tool cards, in memory (built once per catalog; a query reads ~100 rows)."""

    def __init__(self, cards: Iterable[ToolCard]) -> None:
        # One connection for the index's life (``close``). Built where the runtime starts, used
        # from its event loop; a test or a bench may build it in one thread and query it in
        # another, and SQLite serialises the access, hence no same-thread check.
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE cards USING fts5("
            "name UNINDEXED, language UNINDEXED, body, tokenize='porter unicode61')"
        )
        rows = [
            (card.name, language, fold(" . ".join(texts)))
            for card in cards
            for language, texts in card.texts.items()
            if texts
        ]
        self._db.executemany("INSERT INTO cards (name, language, body) VALUES (?, ?, ?)", rows)
        self.names = frozenset(name for name, _, _ in rows)
        # BM25 grows with the log of the number of cards (a rare word is rarer among more):
        # scores are divided by it, so one floor means the same for a small catalog and a large one.
        self._scale = math.log(len(rows) + 1)

    def rank(self, text: str, *, also: Iterable[str] = (), limit: int = 8) -> list[Ranked]:
        """The tools whose cards best match ``text`` (plus the words ``also``, e.g. the domains the
        router read), best first; none when no word of it is on any card."""
        words = [m.group() for m in itertools.islice(_WORD.finditer(fold(text)), MAX_QUERY_WORDS)]
        extra = [w for a in also for w in _WORD.findall(fold(a))]  # letters only: never FTS5 syntax
        terms = {f'"{w}"' for w in [*words, *extra]}
        terms |= {f'"{a} {b}"' for a, b in itertools.pairwise(words)}
        if not terms:
            return []
        rows = self._db.execute(
            "SELECT name, bm25(cards) FROM cards WHERE cards MATCH ? ORDER BY bm25(cards)",
            (" OR ".join(sorted(terms)),),
        )
        best: dict[str, float] = {}
        for name, score in rows:  # best first: a tool's first row is its best language
            best.setdefault(name, -score / self._scale)
            if len(best) == limit:
                break
        return [Ranked(name, score) for name, score in best.items()]

    def close(self) -> None:
        self._db.close()
