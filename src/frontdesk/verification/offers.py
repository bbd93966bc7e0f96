"""What the business offers: "we do embroidered polos", "tenemos tándems", "tiệm có bánh mì gà".

A model asked for something the shop does not sell tends to say yes, in the customer's own words.
A sentence in which the business says it makes, sells, rents or does something names what it
offers; every content word of that must be a word of the business's own data: the items' names,
what the tools returned this turn or earlier, the owner's policy. The customer's words do not
count ("do you do embroidery?" does not make embroidery a service). Words are compared by their
first five letters, so "embroidered" and "embroidery", "bicis" and "bici" meet. Only a reply in a
language the data is written in can be compared (the gate checks that before asking here).
"""

from __future__ import annotations

import re
from functools import lru_cache

from frontdesk.verification import facts
from frontdesk.verification.facts import fold

_OFFER = re.compile(
    r"\b(?:we|i)\s+(?:also\s+|can\s+|can also\s+|do also\s+)?"
    r"(?:do|offer|sell|make|print|carry|stock|rent(?: out)?|embroider|engrave|bake|build|repair|fix|deliver to)\s+"
    r"(?P<en>[^.!?;:\n]+)"
    r"|\b(?:también\s+)?(?:hacemos|vendemos|ofrecemos|tenemos|imprimimos|alquilamos|fabricamos|bordamos|"
    r"grabamos|horneamos|montamos|reparamos|entregamos en)\s+(?P<es>[^.!?;:\n]+)"
    r"|(?:tiệm|bên em|bên mình|shop|cửa hàng|chúng tôi|chúng em)\s+(?:cũng\s+)?(?:có bán|có làm|có|bán|làm|nhận làm|"
    r"nhận|in|cho thuê|giao tới|giao đến)\s+(?P<vi>[^.!?;:\n]+)",
    re.IGNORECASE,
)
_NEGATED = re.compile(r"\b(?:don't|do not|doesn't|no|not|never|nunca|không|chưa|chẳng)\b[^.!?\n]{0,20}$", re.IGNORECASE)
# Where an offered thing ends: "embroidered polos for staff", "tándems de alquiler, perfectos para".
_END = re.compile(
    r",|\s(?:for|as well as|with|in|at|from|and|so|which|that|to|"
    r"para|por|con|desde|y|que|en|cho|với|và|từ|ở|tại|nên)\s",
    re.IGNORECASE,
)
# Words that describe any offer: never what it is.
_GENERIC_TEXT = (
    "yes yeah sure also too custom customised customized personalised personalized great good nice perfect "
    "lovely beautiful any all every kind kinds type types many different several various size sizes colour "
    "colours color colors shape shapes option options style styles own your our their it them this that these "
    "those some lots things stuff one ones well very really quality high best fast quick same day order orders "
    "the and for you can will just more both two "
    "sí si claro también todo todos toda todas cualquier tipo tipos tamaño tamaños color colores muchos "
    "muchas varios varias nuestro nuestra nuestros nuestras tu tus su sus buen buena buenos buenas "
    "una uno unos unas las los del con por para son así dos cosas eso esto esta este estos lo que más "
    "dạ vâng ạ nha nhé có các những nhiều loại mọi cỡ màu đẹp ngon anh chị em mình bạn này đó theo ý "
    "tham khảo mẫu cho với của thì là nên luôn rồi được"
)
_GENERIC = frozenset(fold(word) for word in _GENERIC_TEXT.split())


@lru_cache(maxsize=4096)
def offered_phrases(text: str) -> tuple[str, ...]:
    """What each sentence says the business offers, as written."""
    found = []
    for sentence in facts.sentences(text):
        for match in _OFFER.finditer(sentence):
            if _NEGATED.search(sentence[: match.start()]):
                continue
            phrase = match.group("en") or match.group("es") or match.group("vi") or ""
            phrase = _END.split(f" {phrase} ", maxsplit=1)[0].strip()
            if phrase:
                found.append(phrase)
    return tuple(found)


def _key(word: str) -> str:
    """A word as compared: without a plural "s", its first five letters ("bicis" meets "bici")."""
    return (word[:-1] if word.endswith("s") and len(word) > 3 else word)[:5]


def vocabulary(texts: tuple[str, ...]) -> frozenset[str]:
    return frozenset().union(*(_text_keys(text) for text in texts))


@lru_cache(maxsize=4096)
def _text_keys(text: str) -> frozenset[str]:
    return frozenset(_key(w) for w in fold(text).split())


def _content(text: str) -> list[str]:
    return [w for w in fold(text).split() if len(w) > 2 and w not in _GENERIC and not w.isdigit()]


def unknown_offers(text: str, known: frozenset[str]) -> list[tuple[str, list[str]]]:
    """(phrase, its words the business's data never uses) for each offer that names something new."""
    failures = []
    for phrase in offered_phrases(text):
        missing = [w for w in _content(phrase) if _key(w) not in known]
        if missing:
            failures.append((phrase, missing))
    return failures
