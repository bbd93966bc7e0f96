"""The turn router: model-free, regex lexicons per language plus conversation state.

It maps a turn to an intent and the domains that intent needs, and those unlock the capability
bundle. This is a cost measure (small prompts) and a safety measure: a greeting has no domains,
so it physically cannot capture a lead. Intents: ``greeting``, ``browse``, ``detail_question``,
``capture`` (contact details with an item in context), ``post_capture`` (a follow-up is open),
``human_request``, ``unknown``.

Domains are the print shop's (``catalog``, ``photos`` when pictures are asked for, ``business``,
``leads``, ``follow_ups``, ``customer``, ``handoff``).

Phases: ``discovery`` (nothing chosen yet), ``capture`` (an item is in context: the tool ledger
holds a service, or the customer names one), ``post_capture`` (a follow-up is open).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from frontdesk.capabilities.policy import RoutingDecision
from frontdesk.reasoning._folding import FoldablePattern, fold
from frontdesk.verification.contacts import contact_values

_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[a-z]{2,}", re.IGNORECASE)
# Letters only Vietnamese uses (not the â/ê/ô French and Portuguese share), and Spanish cues.
VIETNAMESE_LETTERS = re.compile(r"[ăđơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ]", re.IGNORECASE)
# Phrases that are Spanish on their own, and small words that count only in pairs.
_SPANISH_PHRASES = re.compile(
    r"\b(?:hola|gracias|quiero|quisiera|necesito|cuánto|cuanto|cuesta|cuestan|precio|por favor|buenas|buenos días|"
    r"me llamo|mi número|mi numero|número|teléfono|telefono|correo|pedido|tarjetas|puedo|dónde|cuándo|también)\b",
    re.IGNORECASE,
)
_SPANISH_WORDS = re.compile(
    r"\b(?:para|soy|los|las|una|unos|está|están|hacen|qué|quién|pero|con|del|tienen|mi)\b", re.IGNORECASE
)
_SPANISH_MARKS = re.compile(r"[¿¡]")
_ENGLISH_WORDS = re.compile(
    r"\b(?:the|is|are|how|what|when|where|do|does|you|your|please|much|can|i|i'm|my|and|for|of|to|it|hi|hello|"
    r"thanks|want|need|would|like)\b",
    re.IGNORECASE,
)
LANGUAGES = ("en", "es", "vi")
# Vietnamese words as typed without diacritics that English and Spanish messages do not use
# (not "ten", "gap", "mo" or "sao", nor names like "Anh" or "Chi"): two of them mark a message as
# Vietnamese ("shop oi in 1000 to roi bao nhieu tien vay"), read then with the folded lexicon too.
_UNACCENTED_VIETNAMESE = frozenset(
    {
        "oi", "minh", "khong", "ko", "roi", "vay", "nhe", "nha", "cua", "giup", "chua", "duoc", "dc", "voi",
        "luon", "dum", "nhung", "bao", "nhieu", "tien", "gia", "hom", "gui", "loi", "xem", "hinh", "mau", "em",
        "lam", "muon", "sdt", "giao", "ngay", "gi", "cho", "cai", "nhan", "vien", "ban", "shop", "ah", "a",
    }
)  # fmt: skip
_WORDS = re.compile(r"[^\W\d_]+")


def unaccented_vietnamese(text: str) -> int:
    """How many distinct unaccented Vietnamese words ``text`` holds, when it has no diacritics at
    all (0 otherwise: a message with some is read as written); "shop" and "a" count only beside
    two others."""
    if fold(text) != text:
        return 0
    found = {w for w in _WORDS.findall(text.lower()) if w in _UNACCENTED_VIETNAMESE}
    strong = found - {"shop", "a", "ah"}
    return len(found) if len(strong) >= 2 else 0


def _two_or_more(words: list[str]) -> int:
    """Distinct cue words, counted only from two on: one Spanish-looking word ("soy sauce",
    "para-legal") is no evidence."""
    distinct = {w.lower() for w in words}
    return len(distinct) if len(distinct) >= 2 else 0


@dataclass(frozen=True)
class RouterState:
    """What the conversation already established (loaded from the store, never from memory)."""

    item_in_context: bool = False
    open_follow_up: bool = False
    # The language of the conversation so far (the last turn's, else episodic memory's): used
    # when the message itself says nothing about it ("Ana, 555 123 4567").
    preferred_language: str | None = None
    # An open multi-step flow (a workflow draft): its phase and the domains it works in.
    workflow_phase: str | None = None
    workflow_domains: frozenset[str] = frozenset()
    # The customer's name is saved already (a capture need not ask for it).
    contact_named: bool = False
    # The customer gave a phone number or an e-mail earlier in the conversation, or has one saved.
    contact_given: bool = False


class Router:
    def __init__(self, lexicons: Mapping[str, Mapping[str, list[str]]], item_keywords: Mapping[str, list[str]]) -> None:
        # One expression per signal (its patterns as alternatives): it matches where any of them
        # would, with one search instead of one per pattern on every turn.
        self._lexicons = {
            language: {
                signal: re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
                for signal, patterns in signals.items()
                if patterns
            }
            for language, signals in lexicons.items()
        }
        # The Vietnamese signals as typed without diacritics, for a message that reads as such;
        # a folded match counts only as a phrase of two words or more (``_folding``: "gấp", rush,
        # and "gập", folded, are both "gap").
        self._folded = {
            signal: folded
            for signal, pattern in self._lexicons.get("vi", {}).items()
            if (folded := FoldablePattern.compile(pattern.pattern)).folded is not None
        }
        words = sorted({w.lower() for ws in item_keywords.values() for w in ws if w.strip()}, key=len, reverse=True)
        # Whole words only: "lona" must not fire inside "Barcelona".
        alternatives = "|".join(re.escape(w) for w in words)
        self._items = re.compile(rf"(?<!\w)(?:{alternatives})(?:e?s)?(?!\w)", re.IGNORECASE) if words else None

    def signals(self, text: str) -> tuple[set[str], dict[str, int]]:
        """Lexicon signals hit in ``text``, and hits per language."""
        hits: set[str] = set()
        per_language: dict[str, int] = {}
        # Words inside an e-mail address ("ana@example.com") are not requests; where one was
        # stays marked ("Derek Olsen, @": a name given with a contact).
        words = _EMAIL.sub(" @ ", text)
        for language, signals in self._lexicons.items():
            for signal, pattern in signals.items():
                if pattern.search(words):
                    hits.add(signal)
                    per_language[language] = per_language.get(language, 0) + 1
        unaccented = unaccented_vietnamese(words)
        if unaccented >= 2:
            # Its words are evidence of the language too (read once, here, for ``language``).
            per_language["vi"] = per_language.get("vi", 0) + 2 * min(unaccented, 3)
            for signal, folded in self._folded.items():
                if signal not in hits and folded.folded_phrase(words):
                    hits.add(signal)
                    per_language["vi"] += 1
        # The gate's reading of phone numbers and e-mails: not quantities, amounts, dates or orders.
        if contact_values(text):
            hits.add("contact_info")
        if self._items is not None and self._items.search(text):
            hits.add("item_mentioned")
        return hits, per_language

    def language(self, text: str, per_language: Mapping[str, int], preferred: str | None) -> str:
        """Weighted evidence, so one borrowed word ("soy-based ink", "José Peña", "crêpe") does not
        switch the reply's language; with no evidence, the conversation's language so far."""
        scores = {
            "vi": 3 * min(len(VIETNAMESE_LETTERS.findall(text)), 3) + per_language.get("vi", 0),
            "es": 3 * len(_SPANISH_MARKS.findall(text))
            + 2 * len({m.lower() for m in _SPANISH_PHRASES.findall(text)})
            + _two_or_more(_SPANISH_WORDS.findall(text))
            + per_language.get("es", 0),
            "en": len(set(m.lower() for m in _ENGLISH_WORDS.findall(text))) + per_language.get("en", 0),
        }
        best = max(scores.values())
        if best == 0:
            return preferred if preferred in LANGUAGES else "en"
        leaders = [lang for lang, score in scores.items() if score == best]
        if len(leaders) == 1:
            return leaders[0]
        return preferred if preferred in leaders else ("en" if "en" in leaders else leaders[0])

    def route(self, text: str, state: RouterState) -> RoutingDecision:
        hits, per_language = self.signals(text)
        language = self.language(text, per_language, state.preferred_language)
        item = state.item_in_context or "item_mentioned" in hits
        phase = "post_capture" if state.open_follow_up else ("capture" if item else "discovery")
        facts = sorted(hits) + [
            f"state:{name}"
            for name in ("item_in_context", "open_follow_up", "contact_named", "contact_given")
            if getattr(state, name)
        ]

        def decide(intent: str, domains: set[str], confidence: float, side_query: bool = False) -> RoutingDecision:
            if "photos" in hits and "catalog" in domains:
                # Pictures only when asked for: offered with every price question, a small model
                # fetched photos instead of the price it was asked.
                domains = {*domains, "photos"}
            return RoutingDecision(intent, frozenset(domains), confidence, phase, side_query, tuple(facts), language)

        info = {"business"} if "business_info" in hits else set()
        asks = hits & {"browse", "detail", "photos", "business_info", "item_mentioned"}
        # "Call me back about banners, John, 555…": a request to save, with what and whom to call;
        # a call-back with nothing to save is a request for a person.
        wants_person = bool(hits & {"human", "complaint", "urgent"})
        if "callback" in hits and "contact_info" in hits and item and not state.open_follow_up and not wants_person:
            return decide("capture", {"leads", "customer", "catalog", *info}, 0.85)
        # A person may be wanted mid-order: the catalog and the customer's details stay reachable.
        if hits & {"human", "callback"}:
            return decide("human_request", {"handoff", "catalog", "customer", *info}, 0.95)
        # A complaint, or a job wanted within hours: no catalog answers it, a person decides.
        if hits & {"complaint", "urgent"}:
            return decide("human_request", {"handoff", "catalog", "customer", *info}, 0.75)
        # With a request already saved, a new order (or a named item with contact details) may
        # save another one; anything else changes the saved request.
        another = {"leads"} if hits & {"order"} or (hits & {"contact_info"} and "item_mentioned" in hits) else set()
        if "contact_info" in hits:
            if state.open_follow_up:
                return decide("post_capture", {"follow_ups", "customer", "catalog", *another}, 0.85)
            if item or "order" in hits:
                return decide("capture", {"leads", "customer", "catalog", *info}, 0.9 if item else 0.7)
            return decide("browse", {"catalog", "customer"}, 0.6)
        if "order" in hits and state.contact_given and not state.open_follow_up:
            # An order from a customer whose phone or e-mail is known (said in an earlier message,
            # or saved): saving it needs nothing more from them.
            return decide("capture", {"leads", "customer", "catalog", *info}, 0.9 if item else 0.7)
        if state.open_follow_up and ("update" in hits or "order" in hits):
            return decide("post_capture", {"follow_ups", "customer", "catalog", *another}, 0.85)
        if asks:
            domains = {*info} | ({"catalog"} if hits & {"browse", "detail", "photos", "item_mentioned"} else set())
            if state.open_follow_up:
                return decide("detail_question", {*domains, "follow_ups"}, 0.8, side_query=True)
            intent = "detail_question" if hits & {"detail", "photos", "business_info", "item_mentioned"} else "browse"
            return decide(intent, domains, 0.8)
        if "order" in hits:
            return decide("detail_question", {"catalog"}, 0.7)
        if hits & {"greeting", "thanks"}:
            return decide("greeting", set(), 0.9)
        return decide("unknown", set(), 0.3)
