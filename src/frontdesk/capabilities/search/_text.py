"""Text normalisation shared by the index, the queries and the print shop's in-memory search.

Both backends index the same pre-normalised words, so SQLite FTS5 and PostgreSQL's ``simple``
configuration rank the same tokens: accents folded ("presentación" = "presentacion", "đ" = "d"),
a few English/Spanish/Vietnamese stop words dropped, and a trailing plural "s" cut. No language
stemmer: PostgreSQL's English one would mangle Spanish and Vietnamese words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from frontdesk.platform.text import fold

_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = "a an the of for and or to in on with me my i you your do de la el los las y para un una por que con"
_STOP_WORDS += " cho toi cua va mot"
STOP_WORDS = frozenset(_STOP_WORDS.split())


def stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def tokens(text: str) -> list[str]:
    """Every folded, stemmed word in order (phrases are matched on these)."""
    return [stem(w) for w in _WORD.findall(fold(text))]


def terms(text: str) -> list[str]:
    """The words that carry meaning, in order: tokens minus stop words and single letters."""
    return [stem(w) for w in _WORD.findall(fold(text)) if w not in STOP_WORDS and len(w) > 1]


def contains_phrase(haystack: Sequence[str], phrase: Sequence[str]) -> bool:
    """Whether ``phrase`` occurs in ``haystack`` as consecutive tokens, each haystack token
    starting with the phrase's ("mailer box" is in "mailer boxes", "invitación" in "invitaciones")."""
    n = len(phrase)
    if not n:
        return False
    return any(
        all(word.startswith(part) for word, part in zip(haystack[i : i + n], phrase, strict=True))
        for i in range(len(haystack) - n + 1)
    )
