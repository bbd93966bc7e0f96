"""Lexicon patterns that also match Vietnamese typed without its diacritics.

Staff often type "tam dung chien dich" for "tạm dừng chiến dịch". Each pattern is written once,
with its diacritics; it is compiled twice: as written, and folded (``fold``: marks dropped, đ→d).
The folded form is tried only on a message typed entirely without diacritics (a message that
has some is taken as written: its "qua" is not a careless "quà"), and only once such a message
contains a Vietnamese *phrase* that only the folded form matches (two or more words, e.g.
"chien dich"): one bare syllable proves nothing, since folding merges words ("tắt"/"tất",
"hạng"/"hàng") and English has "hang", "tim" and "go".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

# Two words, or two words around an amount ("cong 150 diem").
_TWO_WORDS = re.compile(r"[^\W\d_]+\s+(?:\d[\d.,]*k?\s+)?[^\W\d_]+")
# Vietnamese function words typed without diacritics that no English message uses: two of them
# mark a message as unaccented Vietnamese even when its verb is one syllable ("xoa cai
# campaign nhap di, nam nay khong lam nua").
_PARTICLES = frozenset(
    {"khong", "roi", "nhe", "nha", "cua", "cai", "giup", "chua", "duoc", "voi", "luon", "dum", "nhung"}
)
_WORDS = re.compile(r"[^\W\d_]+")


def fold(text: str) -> str:
    """``text`` without its diacritics (Vietnamese đ/Đ become d/D); case is kept."""
    decomposed = unicodedata.normalize("NFD", text.replace("đ", "d").replace("Đ", "D"))
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


@dataclass(frozen=True)
class Hit:
    """One pattern match: the entry it belongs to, the pattern's language, where it starts, and
    whether only the folded form matched."""

    name: str
    language: str
    start: int
    folded: bool


@dataclass(frozen=True)
class FoldablePattern:
    exact: re.Pattern[str]
    folded: re.Pattern[str] | None  # None when folding does not change the pattern

    @classmethod
    def compile(cls, source: str) -> FoldablePattern:
        flat = fold(source)
        return cls(re.compile(source, re.IGNORECASE), None if flat == source else re.compile(flat, re.IGNORECASE))

    def folded_phrase(self, text: str) -> bool:
        """Only the folded form matches here, and what it matches is two words or more."""
        if self.folded is None:
            return False
        return any(
            _TWO_WORDS.search(m.group()) and not self.exact.match(text, m.start()) for m in self.folded.finditer(text)
        )


class PatternTable:
    """Patterns by entry name and language: ``{name: {language: [regex, ...]}}``."""

    def __init__(self, table: Mapping[str, Mapping[str, Iterable[str]]]) -> None:
        self._table = {
            name: {
                language: [FoldablePattern.compile(p) for p in patterns] for language, patterns in by_language.items()
            }
            for name, by_language in table.items()
        }

    def patterns(self) -> Iterator[FoldablePattern]:
        for by_language in self._table.values():
            for patterns in by_language.values():
                yield from patterns

    def hits(self, text: str, folded: bool) -> list[Hit]:
        """Every match in ``text``; the folded forms too when ``folded`` (see ``Reader``)."""
        found: list[Hit] = []
        for name, by_language in self._table.items():
            for language, patterns in by_language.items():
                for pattern in patterns:
                    found.extend(Hit(name, language, m.start(), False) for m in pattern.exact.finditer(text))
                    if folded and pattern.folded is not None:
                        found.extend(Hit(name, language, m.start(), True) for m in pattern.folded.finditer(text))
        return found


class Reader:
    """Decides, once per message, whether the folded forms of a set of tables apply to it."""

    def __init__(self, tables: Iterable[PatternTable]) -> None:
        self._patterns = [p for table in tables for p in table.patterns() if p.folded is not None]

    def unaccented_vietnamese(self, text: str) -> bool:
        """``text`` has no diacritics and still contains a (folded) Vietnamese phrase."""
        if fold(text) != text:
            return False
        particles = {w for w in _WORDS.findall(text.lower()) if w in _PARTICLES}
        return len(particles) >= 2 or any(p.folded_phrase(text) for p in self._patterns)
