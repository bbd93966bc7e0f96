"""A reply held to the conversation it answers: in the customer's language, and not their own
message said back to them.

A 1.5B model answered a Vietnamese customer in English, and answered others with their own
message. The prompt asks for neither, and asking was not enough: these rules refuse such a reply,
and the model is told why and tries again (the second refusal sends the hold message, itself in
the customer's language). Any model is held to them.

The language is told from the words only for the languages the packs speak (English, Spanish,
Vietnamese) and only when the text says clearly: a short reply, a list of product names or an
address decides nothing, and is never refused for it.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from frontdesk.context.identity import LANGUAGE_NAMES, REPLY_IN
from frontdesk.verification.facts import fold

# Letters only Vietnamese writes (with its tone marks). A Vietnamese text is full of them (a
# fifth of its letters or more); an English reply that quotes "tờ rơi" is not Vietnamese.
_VIETNAMESE = frozenset("ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ")
_COMMON_TEXT = {
    "en": "the and you your is are for we our to of with can will have it be this that here please "
    "thanks thank would there what when which at",
    "es": "el la los las de del que y en por para con una un es son su tu usted gracias hola puedo "
    "tenemos podemos le te nos está están muy también al",
}
_COMMON = {language: frozenset(words.split(" ")) for language, words in _COMMON_TEXT.items()}
_WORD = re.compile(r"[a-záéíóúñü']+")
MIN_WORDS = 3  # common words a text needs before its language counts as told
MIN_ECHO_CHARS = 12  # "ok thanks" said back is courtesy, a whole question said back is not
MIN_OWN_WORDS = 3  # words of its own a reply that quotes the customer needs to be an answer
NEAR_COPY = 0.85  # similarity of a reply to the message above which it is a copy of it


def told_language(text: str) -> str | None:
    """``en``, ``es`` or ``vi`` when the text says so clearly, else None."""
    lowered = text.lower()
    marked = sum(ch in _VIETNAMESE for ch in lowered)
    if marked >= 2 and marked >= 0.05 * sum(ch.isalpha() for ch in lowered):
        return "vi"
    words = _WORD.findall(lowered)
    counts = {language: sum(word in common for word in words) for language, common in _COMMON.items()}
    best, runner_up = sorted(counts.values(), reverse=True)[:2]
    if best < MIN_WORDS or best < 2 * runner_up:
        return None
    return max(counts, key=lambda language: counts[language])


def wrong_language(reply: str, customer_language: str | None) -> str | None:
    """Why ``reply`` is refused for its language, or None."""
    if customer_language not in ("en", "es", "vi"):
        return None
    told = told_language(reply)
    if told is None or told == customer_language:
        return None
    wanted = LANGUAGE_NAMES[customer_language]
    # Said as what to write, not as a topic: told "the customer writes Vietnamese", a 1.5B model
    # replied "I can't tell your language; I will answer in Vietnamese".
    return (
        f"it is in {LANGUAGE_NAMES[told]}: write the same answer to the customer's message in {wanted}, "
        f"without mentioning languages. {REPLY_IN[customer_language]}"
    )


def echoes(reply: str, message: str) -> str | None:
    """Why ``reply`` is refused for saying the customer's ``message`` back, or None: the reply is
    their message and next to nothing else ("You asked: ..."), or a near copy of it. A reply that
    repeats a value and goes on ("50 points per purchase. When should it apply?") answers."""
    said, answered = fold(message), fold(reply)
    if len(said) < MIN_ECHO_CHARS or not answered:
        return None
    if said in answered:
        echoed = len(answered.replace(said, " ").split()) < MIN_OWN_WORDS
    else:
        echoed = SequenceMatcher(None, said, answered).ratio() >= NEAR_COPY
    if not echoed:
        return None
    return "the reply repeats the customer's message instead of answering it: answer what they asked"
