"""What the customer got, scored from what was sent and saved (``bench/local_model.py``'s outcome set).

A turn is served when every expectation its label names holds (``bench/data/README.md`` has the
format), and, always: a reply was sent that is not the business's hold message, in the
conversation's language, with no placeholder ("[email address]", "{name}") and not a repeat of
the customer's message. A conversation is served when all its turns are.

The scorer reads only what a customer or an operator would see: the reply's text and photos, the
saved requests and hand-overs. It shares no code with what it measures (its own language guess,
money and time readers), so a fault in the pipeline's readers cannot hide a fault here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# A number next to a currency word or sign, either side ("$70", "70 USD", "70 đô", "US$ 70").
_NUMBER = r"(\d{1,3}(?:[,.]\d{3})*(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?)"
_MONEY = re.compile(
    rf"(?:US\$|\$|USD|usd)\s?{_NUMBER}|{_NUMBER}\s?(?:US\$|\$|USD|usd|dollars?|dólares?|dolares?|đô(?:\s?la)?|do la)",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(r"\[[^\]\n]{2,40}\]|\{[A-Za-z_ ]{2,30}\}|<[A-Za-z_ ]{2,30}>|\bX{3,}\b")
_TIME = re.compile(r"(?<![\d.,])(\d{1,2})(?:[:.h](\d{2}))?\s*(a\.?\s?m\.?|p\.?\s?m\.?|h\b|giờ|gio)?", re.IGNORECASE)
_CLOSED = {
    "en": ("closed", "not open", "we're off", "no hours"),
    "es": ("cerrad", "no abrimos", "no abre", "no atendemos", "no estamos abiertos"),
    "vi": ("đóng cửa", "nghỉ", "không mở", "không làm việc", "dong cua", "nghi"),
}
_VIETNAMESE = set("ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ")
_STOPWORDS = {
    "en": {
        "the",
        "and",
        "you",
        "your",
        "is",
        "are",
        "for",
        "we",
        "our",
        "to",
        "of",
        "with",
        "can",
        "thanks",
        "hi",
        "hello",
        "will",
        "have",
        "a",
        "it",
        "on",
        "be",
        "please",
        "here",
    },
    "es": {
        "el",
        "la",
        "de",
        "que",
        "y",
        "en",
        "los",
        "las",
        "por",
        "para",
        "con",
        "una",
        "es",
        "su",
        "tu",
        "usted",
        "gracias",
        "hola",
        "puedo",
        "tenemos",
        "precio",
        "un",
        "le",
        "te",
        "nos",
        "del",
        "está",
    },
}


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.lower().replace("đ", "d"))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def language_of(text: str) -> str | None:
    """en, es or vi, or None when the text is too short to tell."""
    if sum(ch in _VIETNAMESE for ch in text.lower()) >= 2:
        return "vi"
    words = re.findall(r"[a-záéíóúñü']+", text.lower())
    counts = {lang: sum(w in stop for w in words) for lang, stop in _STOPWORDS.items()}
    best = max(counts, key=lambda lang: counts[lang])
    if counts[best] < 2 or counts[best] == min(counts.values()):
        return None
    return best


def money(text: str) -> list[float]:
    return [_number(a or b) for a, b in _MONEY.findall(text)]


def _number(raw: str) -> float:
    if re.fullmatch(r"\d{1,3}(?:[,.]\d{3})+", raw):  # 1,000 or 1.000: thousands
        return float(re.sub(r"[,.]", "", raw))
    return float(raw.replace(",", "."))


def hours_in(text: str) -> set[int]:
    """Every hour of the day the text may state: "2 pm" is 14, a bare "2" may be 2 or 14."""
    found: set[int] = set()
    for hour_text, _minutes, marker in _TIME.findall(text):
        hour = int(hour_text)
        if hour > 24:
            continue
        mark = (marker or "").lower().replace(".", "").replace(" ", "")
        if mark == "pm" and hour < 12:
            found.add(hour + 12)
        elif mark == "am" or hour >= 12:
            found.add(hour % 24)
        else:
            found.update({hour, hour + 12})
    return found


@dataclass(frozen=True)
class Catalog:
    """The business file's facts the labels name: each item's amounts and photo ids."""

    amounts: Mapping[str, frozenset[float]]
    photos: Mapping[str, frozenset[str]]

    @classmethod
    def read(cls, path: Path) -> Catalog:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        amounts: dict[str, frozenset[float]] = {}
        photos: dict[str, frozenset[str]] = {}
        for item in data["items"]:
            amounts[item["id"]] = frozenset(float(a) for a in _amounts(item.get("price") or {}))
            photos[item["id"]] = frozenset(p["id"] for p in item.get("photos") or [])
        return cls(amounts, photos)


def _amounts(node: Any) -> list[float]:
    if isinstance(node, dict):
        return [*([node["amount"]] if "amount" in node else []), *(a for v in node.values() for a in _amounts(v))]
    if isinstance(node, list):
        return [a for v in node for a in _amounts(v)]
    return []


@dataclass
class TurnSeen:
    """One turn as the customer and the team saw it."""

    customer: str
    said_before: Sequence[str]  # the customer's earlier messages in this conversation
    reply: str | None  # None: nothing was sent
    held: bool  # the business's hold message went out instead of an answer
    photo_ids: Sequence[str] = ()
    leads: Sequence[Mapping[str, Any]] = ()  # saved requests' details, as the team reads them
    handed_over: bool = False


@dataclass
class TurnScore:
    served: bool
    failures: list[str] = field(default_factory=list)


def score_turn(seen: TurnSeen, expect: Mapping[str, Any], lang: str, catalog: Catalog) -> TurnScore:
    failures: list[str] = []
    reply = seen.reply or ""
    if seen.reply is None:
        failures.append("nothing sent")
    elif seen.held:
        failures.append("hold message")
    else:
        spoken = language_of(reply)
        if spoken is not None and spoken != lang:
            failures.append(f"reply in {spoken}")
        if placeholder := _PLACEHOLDER.search(reply):
            failures.append("placeholder: " + placeholder.group(0))
        if _echoes(reply, seen.customer):
            failures.append("repeats the customer")
    quantities = {
        float(q.replace(",", "")) for t in (*seen.said_before, seen.customer) for q in re.findall(r"\d[\d,]*", t)
    }
    if "price" in expect:
        failures += _price(reply, expect["price"], catalog, quantities)
    if expect.get("no_price") and money(reply):
        failures.append(f"stated a price: {money(reply)}")
    if "photos" in expect:
        item = expect["photos"]["item"]
        if not any(p in catalog.photos[item] for p in seen.photo_ids):
            failures.append(f"no photo of {item} ({len(seen.photo_ids)} other)")
    if "hours" in expect:
        failures += _hours(reply, expect["hours"], lang)
    if "lead" in expect:
        failures += _lead(seen.leads, expect["lead"])
    if expect.get("handoff") and not seen.handed_over:
        failures.append("not handed over")
    return TurnScore(not failures, failures)


def _echoes(reply: str, customer: str) -> bool:
    said, answered = " ".join(fold(customer).split()), " ".join(fold(reply).split())
    return len(said) >= 12 and (said in answered and len(answered) < 2 * len(said))


def _price(reply: str, label: Mapping[str, Any], catalog: Catalog, quantities: set[float]) -> list[str]:
    real = catalog.amounts[label["item"]]
    # A unit price times a quantity the customer named is a total they would accept too.
    acceptable = real | {round(a * q, 2) for a in real for q in quantities}
    stated = money(reply)
    failures = [f"wrong price {v:g}" for v in stated if v not in acceptable]
    for amount in label.get("amounts") or []:
        totals = {float(amount), *(round(float(amount) * q, 2) for q in quantities)}
        if not totals & set(stated) and not _bare_number(reply, float(amount)):
            failures.append(f"did not state {amount}")
    if not label.get("amounts") and not set(stated) & acceptable:
        failures.append("no real price")
    return failures


def _bare_number(reply: str, amount: float) -> bool:
    """``amount`` written without a currency sign ("cuestan 70"): still stated."""
    return any(_number(n) == amount for n in re.findall(_NUMBER, reply))


def _hours(reply: str, label: Mapping[str, Any], lang: str) -> list[str]:
    folded = fold(reply)
    says_closed = any(fold(word) in folded for word in _CLOSED[lang] + _CLOSED["en"])
    if label["closed"]:
        return [] if says_closed else ["did not say closed"]
    opening, closing = (int(label[k].split(":")[0]) for k in ("open", "close"))
    stated = hours_in(reply)
    missing = [f"{h}:00" for h in (opening, closing) if h not in stated]
    return [f"hours {label['open']}-{label['close']} not stated (missing {', '.join(missing)})"] if missing else []


def _lead(leads: Sequence[Mapping[str, Any]], label: Mapping[str, Any]) -> list[str]:
    first_name = fold(label["name"]).split()[0]
    for lead in leads:
        if first_name not in fold(str(lead.get("customer_name") or "")):
            continue
        if "phone" in label:
            want = re.sub(r"\D", "", label["phone"])[-9:]
            if want in re.sub(r"\D", "", str(lead.get("phone") or "")):
                return []
        if "email" in label and str(lead.get("email") or "").lower() == label["email"].lower():
            return []
    if not leads:
        return ["no lead saved"]
    got = "; ".join(
        f"{lead.get('customer_name')} {lead.get('phone') or ''} {lead.get('email') or ''}" for lead in leads
    )
    return [f"lead without the contact given ({got.strip()})"]
