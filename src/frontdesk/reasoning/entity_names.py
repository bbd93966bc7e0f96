"""What a back office calls its things: campaigns, rewards, rules, segments, tiers, members.

A message that names one ("pause Weekend Double Points", "what has Nguyễn Văn An redeemed?")
is about its domain, as one that gives its id is. The names are read from the pack's service
(``read_names``, refreshed by the runtime) and matched as whole phrases, case and diacritics
aside ("nguyen van an" is Nguyễn Văn An). A bilingual name is each of its halves
("Mừng sinh nhật / Birthday club", "Gold (Vàng)"). A single short word is not kept as a name:
"Staff" or "Gold" are ordinary words more often than they are a segment or a tier.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol

from frontdesk.platform.clock import Clock
from frontdesk.reasoning._folding import fold

log = logging.getLogger(__name__)

# Where a bilingual or annotated name splits into names of its own.
_HALVES = re.compile(r"\s+[/|-]\s+|\s*[()]\s*")
MIN_SINGLE_WORD = 6  # letters a one-word name needs to count
# People are named whole: a part of "Nguyễn Văn An" is a common word, or many other people.
WHOLE_NAMES_ONLY = frozenset({"member"})
PAGE = 100  # the service's largest page
MAX_PER_DOMAIN = 5_000  # names read per domain at most (members beyond are found by phone or id)

ToolCall = Callable[[str, Mapping[str, Any]], Awaitable[Any]]


def _key(text: str) -> str:
    return " ".join(fold(text).lower().split())


class EntityNames:
    """Names by domain, matched in one search. Besides whole names, a thing that is not a person
    is found by a short form people use for it, when no other name shares it: an acronym in its
    name ("CGV" for "Vé xem phim CGV 2D") or the first two words of a longer name ("lounge pass"
    for "Lounge pass Tân Sơn Nhất"); and a name in the plural is still the name ("tote bags")."""

    def __init__(self, names: Mapping[str, Iterable[str]] | None = None) -> None:
        self._domains: dict[str, set[str]] = {}
        short: dict[str, set[tuple[str, str]]] = {}  # short form -> the (domain, name) it abbreviates
        for domain, written in (names or {}).items():
            for name in written:
                for half in _HALVES.split(name):
                    key = _key(half)
                    if " " in key or sum(c.isalpha() for c in key) >= MIN_SINGLE_WORD:
                        self._domains.setdefault(key, set()).add(domain)
                    if domain not in WHOLE_NAMES_ONLY:
                        for form in _short_forms(half):
                            short.setdefault(form, set()).add((domain, name))
        for form, owners in short.items():
            if len(owners) == 1 and form not in self._domains:
                self._domains[form] = {domain for domain, _ in owners}
        keys = sorted(self._domains, key=len, reverse=True)  # the longest name wins where two overlap
        # A thing's name may be said in the plural ("tote bags"); a person's never is.
        alternatives = "|".join(
            re.escape(k).replace(r"\ ", r"\s+") + ("" if self._domains[k] & WHOLE_NAMES_ONLY else "(?:e?s)?")
            for k in keys
        )
        self._pattern = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)") if keys else None

    def __len__(self) -> int:
        return len(self._domains)

    def domains_in(self, text: str) -> frozenset[str]:
        """The domains of the things ``text`` names."""
        if self._pattern is None:
            return frozenset()
        found: set[str] = set()
        for match in self._pattern.finditer(fold(text).lower()):
            said = " ".join(match.group().split())
            for key in (said, said.removesuffix("s"), said.removesuffix("es")):
                if key in self._domains:
                    found |= self._domains[key]
                    break
        return frozenset(found)


def _short_forms(name: str) -> list[str]:
    """What people shorten a name to: its acronyms ("CGV", "VIP": capitals with at most one
    vowel, in a name not written all in capitals, so "FREE" or "SALE" are not one), and the
    first two words of a name of three or more when both are words of four letters or more
    ("lounge pass")."""
    shouted = not any(c.islower() for c in name)
    acronyms = [] if shouted else re.findall(r"\b[A-Z]{3,5}\b", name)
    forms = [_key(word) for word in acronyms if sum(c in "AEIOUY" for c in word) <= 1]
    words = _key(name).split()
    if len(words) >= 3 and all(sum(c.isalpha() for c in w) >= 4 for w in words[:2]):
        forms.append(" ".join(words[:2]))
    return forms


async def read_names(call: ToolCall, sources: Mapping[str, str]) -> EntityNames:
    """Every name the service lists, per domain (``sources``: domain -> its list tool). A list
    that fails is skipped: the router does without those names until the next refresh."""
    names: dict[str, list[str]] = {}
    for domain, tool in sources.items():
        try:
            names[domain] = await _all_names(call, tool)
        except Exception as exc:  # a service hiccup must not stop start-up or a refresh
            log.warning("could not read %s names from %s: %s", domain, tool, exc)
    return EntityNames(names)


async def _all_names(call: ToolCall, tool: str) -> list[str]:
    found: list[str] = []
    while len(found) < MAX_PER_DOMAIN:
        page = await call(tool, {"limit": PAGE, "offset": len(found)})
        items = page.get("items", []) if isinstance(page, dict) else []
        found.extend(str(item["name"]) for item in items if isinstance(item, dict) and item.get("name"))
        total = page.get("total") if isinstance(page, dict) else None
        if len(items) < PAGE or (isinstance(total, int) and len(found) >= total):
            return found
    return found


class Named(Protocol):
    """A router that reads names (``ActionRouter``)."""

    names: EntityNames


class NameRefresh:
    """A sweep that reads the names again every ``every_s``, so a campaign or a reward created
    since routes by its name without a restart."""

    def __init__(self, clock: Clock, every_s: float = 300.0) -> None:
        self._clock = clock
        self._every_s = every_s
        self._targets: list[tuple[Named, ToolCall, Mapping[str, str]]] = []
        self._last = clock.monotonic()

    async def add(self, router: Named, call: ToolCall, sources: Mapping[str, str]) -> None:
        """Read ``router``'s names now, and again at every refresh."""
        router.names = await read_names(call, sources)
        self._targets.append((router, call, sources))
        log.info("router learned %d names from %s", len(router.names), ", ".join(sources.values()))

    async def __call__(self) -> int:
        if self._clock.monotonic() - self._last < self._every_s:
            return 0
        self._last = self._clock.monotonic()
        for router, call, sources in self._targets:
            router.names = await read_names(call, sources)
        return len(self._targets)
