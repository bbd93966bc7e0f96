"""The turn router: model-free, regex lexicons per language plus conversation state.

It maps a turn to an intent and the domains that intent needs, and those unlock the capability
bundle. This is a cost measure (small prompts) and a safety measure: a greeting has no domains,
so it physically cannot capture a lead. Intents: ``greeting``, ``browse``, ``detail_question``,
``capture`` (contact details with an item in context), ``post_capture`` (a follow-up is open),
``human_request``, ``unknown``.

Phases: ``discovery`` (nothing chosen yet), ``capture`` (an item is in context: the tool ledger
holds a service, or the customer names one), ``post_capture`` (a follow-up is open).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from frontdesk.capabilities.policy import RoutingDecision

_PHONE = re.compile(r"(?<![\d$])\+?\d[\d\s().-]{5,}\d(?![\d])")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[a-z]{2,}", re.IGNORECASE)
_VIETNAMESE = re.compile(r"[ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ]", re.IGNORECASE)
_SPANISH = re.compile(
    r"[¿¡ñ]|\b(?:hola|gracias|quiero|quisiera|necesito|cuánto|cuanto|cuesta|precio|tienen|para|por favor|qué|"
    r"buenas|me llamo|soy|mi número|mi numero|número|teléfono|telefono|correo|pedido)\b",
    re.IGNORECASE,
)
LANGUAGES = ("en", "es", "vi")


@dataclass(frozen=True)
class RouterState:
    """What the conversation already established (loaded from the store, never from memory)."""

    item_in_context: bool = False
    open_follow_up: bool = False
    # The language of the conversation so far (the last turn's, else episodic memory's): used
    # when the message itself says nothing about it ("Ana, 555 123 4567").
    preferred_language: str | None = None


class Router:
    def __init__(self, lexicons: Mapping[str, Mapping[str, list[str]]], item_keywords: Mapping[str, list[str]]) -> None:
        self._lexicons = {
            language: {signal: [re.compile(p, re.IGNORECASE) for p in patterns] for signal, patterns in signals.items()}
            for language, signals in lexicons.items()
        }
        words = sorted({w.lower() for ws in item_keywords.values() for w in ws if w.strip()}, key=len, reverse=True)
        # Whole words only: "lona" must not fire inside "Barcelona".
        alternatives = "|".join(re.escape(w) for w in words)
        self._items = re.compile(rf"(?<!\w)(?:{alternatives})(?:e?s)?(?!\w)", re.IGNORECASE) if words else None

    def signals(self, text: str) -> tuple[set[str], dict[str, int]]:
        """Lexicon signals hit in ``text``, and hits per language."""
        hits: set[str] = set()
        per_language: dict[str, int] = {}
        # Words inside an e-mail address ("ana@example.com") are not requests.
        words = _EMAIL.sub(" ", text)
        for language, signals in self._lexicons.items():
            for signal, patterns in signals.items():
                if any(p.search(words) for p in patterns):
                    hits.add(signal)
                    per_language[language] = per_language.get(language, 0) + 1
        if _PHONE.search(text) or _EMAIL.search(text):
            hits.add("contact_info")
        if self._items is not None and self._items.search(text):
            hits.add("item_mentioned")
        return hits, per_language

    def language(self, text: str, per_language: Mapping[str, int], preferred: str | None) -> str:
        if _VIETNAMESE.search(text):
            return "vi"
        if _SPANISH.search(text):
            return "es"
        best = max(per_language.items(), key=lambda kv: (kv[1], kv[0] == "en"), default=None)
        if best is not None and best[1] > 0:
            return best[0]
        return preferred if preferred in LANGUAGES else "en"

    def route(self, text: str, state: RouterState) -> RoutingDecision:
        hits, per_language = self.signals(text)
        language = self.language(text, per_language, state.preferred_language)
        item = state.item_in_context or "item_mentioned" in hits
        phase = "post_capture" if state.open_follow_up else ("capture" if item else "discovery")
        facts = sorted(hits) + [
            f"state:{name}" for name in ("item_in_context", "open_follow_up") if getattr(state, name)
        ]

        def decide(intent: str, domains: set[str], confidence: float, side_query: bool = False) -> RoutingDecision:
            return RoutingDecision(intent, frozenset(domains), confidence, phase, side_query, tuple(facts), language)

        info = {"business"} if "business_info" in hits else set()
        asks = hits & {"browse", "detail", "business_info", "item_mentioned"}
        if "human" in hits:
            return decide("human_request", {"handoff", *info}, 0.95)
        if "complaint" in hits:
            return decide("human_request", {"handoff", "catalog", *info}, 0.75)
        # With a request already saved, a new order (or a named item with contact details) may
        # save another one; anything else changes the saved request.
        another = {"leads"} if hits & {"order"} or (hits & {"contact_info"} and "item_mentioned" in hits) else set()
        if "contact_info" in hits:
            if state.open_follow_up:
                return decide("post_capture", {"follow_ups", "customer", "catalog", *another}, 0.85)
            if item or "order" in hits:
                return decide("capture", {"leads", "customer", "catalog", *info}, 0.9 if item else 0.7)
            return decide("browse", {"catalog", "customer"}, 0.6)
        if state.open_follow_up and ("update" in hits or "order" in hits):
            return decide("post_capture", {"follow_ups", "customer", "catalog", *another}, 0.85)
        if asks:
            domains = {*info} | ({"catalog"} if hits & {"browse", "detail", "item_mentioned"} else set())
            if state.open_follow_up:
                return decide("detail_question", {*domains, "follow_ups"}, 0.8, side_query=True)
            intent = "detail_question" if hits & {"detail", "business_info", "item_mentioned"} else "browse"
            return decide(intent, domains, 0.8)
        if "order" in hits:
            return decide("detail_question", {"catalog"}, 0.7)
        if hits & {"greeting", "thanks"}:
            return decide("greeting", set(), 0.9)
        return decide("unknown", set(), 0.3)
