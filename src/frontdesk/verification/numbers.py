"""Numbers written in words, rewritten as digits before the gate looks for facts.

A model that may not write "$45" unproven writes "forty-five dollars" just as easily, and a
Vietnamese reply says "450 nghìn", "1,2 triệu" or "hai trăm rưỡi" more often than "450.000 ₫".
English and Spanish words go through ``text2num`` (a maintained parser of numbers in words);
Vietnamese, which it does not read, is parsed here: digits words, ``mươi``/``trăm`` and the
magnitudes ``nghìn``/``ngàn``/``k``, ``triệu``/``tr``, ``tỷ``, with ``rưỡi`` (and a half) and the
spoken tail ("2 triệu 3" is 2,300,000; "1tr2" is 1,200,000).

A Vietnamese amount with a magnitude and no counting noun after it is money ("25 nghìn một ổ"):
it is rewritten with the dong sign so the money rules read it; "1 nghìn tờ" stays a quantity.
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache

from text_to_num import alpha2digit  # type: ignore[import-untyped]  # the package ships no type stubs

_VI_DIGITS = {
    "không": 0, "một": 1, "mốt": 1, "hai": 2, "ba": 3, "bốn": 4, "tư": 4, "năm": 5, "lăm": 5,
    "nhăm": 5, "sáu": 6, "bảy": 7, "bẩy": 7, "tám": 8, "chín": 9,
}  # fmt: skip
_VI_MAGNITUDES = {
    "nghìn": 1000, "ngàn": 1000, "k": 1000, "triệu": 1_000_000, "tr": 1_000_000, "tỷ": 10**9, "tỉ": 10**9,
}  # fmt: skip
# What is counted rather than paid: "1 nghìn tờ" (a thousand sheets) is a quantity, not money.
_VI_COUNTED = (
    "tờ|cái|chiếc|hộp|ổ|bánh|tấm|cuốn|quyển|bộ|người|khách|phần|suất|ly|cốc|túi|thùng|card|lá|con|"
    "km|mét|m|cm|gói|bao|năm|tháng|ngày|giờ|phút|lần|đơn|sản phẩm|mẫu|trang|bản|xe"
)
_VI_CURRENCY = r"(?:đồng|đ|vnđ|vnd|₫)(?!\w)"
_SPOKEN_UNITS = {"lăm", "mốt", "tư", "nhăm"}  # a units word that only follows a tens digit
_VI_WORD = "|".join(sorted((*_VI_DIGITS, "mười", "mươi", "chục", "trăm", "linh", "lẻ"), key=len, reverse=True))
_VI_NUMBER = rf"(?:\d+(?:[.,]\d+)*|(?:(?:{_VI_WORD})(?:\s+|$))+)"
_VI_AMOUNT = re.compile(
    rf"(?<![\w.,])(?P<head>{_VI_NUMBER})\s*(?P<mag>nghìn|ngàn|triệu|tr|tỷ|tỉ|k)(?![^\W\d_])"
    # The tail after the magnitude: "rưỡi", a digit, or a spoken digit; "một" there is "a"/"per"
    # ("bảy nghìn một que": 7.000 ₫ a stick), the spoken 100 being "mốt".
    rf"(?P<tail>\s*(?:rưỡi|\d{{1,3}}(?![\d.,])(?!\s*(?:{_VI_COUNTED})(?!\w))|(?!một(?!\s+trăm))(?:{_VI_WORD})(?!\w)(?!\s*(?:{_VI_COUNTED})(?!\w))))?"
    rf"(?P<after>\s*(?:{_VI_CURRENCY}|(?:{_VI_COUNTED})(?!\w)))?",
    re.IGNORECASE,
)
_VI_WORDS_ONLY = re.compile(rf"(?<!\w)(?:(?:{_VI_WORD})\s+)*(?:{_VI_WORD})(?:\s+rưỡi)?(?!\w)", re.IGNORECASE)
_ES_SPOKEN_CENTS = re.compile(r"(?<![\d.,])(\d{1,4}) con (\d{2})(?!\d)(?!\s*(?:céntimos?|centavos?))")
_EN_ES_CENTS = re.compile(r"(\d+) (euros?|dollars?|dólares?) (?:con|and) (\d{1,2})(?: (?:céntimos?|centavos?|cents?))?")


def _vi_words(words: str) -> int | None:
    """'hai trăm rưỡi' -> 250, 'ba mươi lăm' -> 35, 'mười hai' -> 12; None if not a number."""
    tokens = words.lower().split()
    if not tokens:
        return None
    total, current, digit = 0, 0, None
    half = tokens[-1] == "rưỡi"
    if half:
        tokens = tokens[:-1]
    last_unit = 1
    after_hundred = False
    for token in tokens:
        if token in _VI_DIGITS:
            if digit is not None:
                current += digit * 10  # "hai lăm", "ba mốt": 25 and 31 said without "mươi"
            digit = _VI_DIGITS[token]
            continue
        elif token == "mười":
            current += 10
            digit, last_unit = None, 1
        elif token in ("mươi", "chục"):  # "sáu chục": sixty
            current += (digit or 1) * 10
            digit, last_unit = None, 1
        elif token == "trăm":
            current += (digit or 1) * 100
            digit, last_unit = None, 10
            after_hundred = True
            continue
        elif token in ("linh", "lẻ"):
            digit, after_hundred = None, False
            continue
        else:
            return None
        after_hundred = False
    # "trăm hai", "ba trăm tám": a lone digit after the hundreds is the tens (120, 380); with
    # "linh"/"lẻ" before it, the units (105).
    if digit is not None and after_hundred:
        digit *= 10
    current += digit or 0
    total += current
    if half:
        total += 5 * last_unit  # "hai trăm rưỡi": 250 (half of the next hundred)
    return total


def _number(head: str) -> Decimal | None:
    head = head.strip()
    if head[:1].isdigit():
        # "1,2" / "1.5" before a magnitude is a decimal; "1.200" is a thousands group.
        if re.fullmatch(r"\d+[.,]\d{1,2}", head):
            return Decimal(head.replace(",", "."))
        return Decimal(re.sub(r"[.,]", "", head))
    value = _vi_words(head)
    return Decimal(value) if value is not None else None


def _vi_amount(match: re.Match[str]) -> str:
    head = _number(match.group("head"))
    if head is None:
        return match.group(0)
    magnitude = _VI_MAGNITUDES[match.group("mag").lower()]
    value = head * magnitude
    tail = (match.group("tail") or "").strip().lower()
    if tail == "rưỡi":
        value += magnitude // 2
    elif tail.isdigit():
        # "2 triệu 3": the next lower unit, as written; "1tr2" is 1.2 million
        value += Decimal(tail) * magnitude / (10 ** len(tail))
    elif tail:
        spoken = _vi_words(tail)
        value += Decimal(spoken or 0) * magnitude / 10
    after = match.group("after") or ""
    amount = f"{value.normalize():f}"
    lead = match.group(0)[: len(match.group(0)) - len(match.group(0).lstrip())]
    if re.fullmatch(rf"\s*{_VI_CURRENCY}", after, re.IGNORECASE):
        return f"{lead}{amount} ₫"
    if after.strip():
        return f"{lead}{amount}{after}"  # counted: a quantity
    return f"{lead}{amount} ₫"


def _vi_plain(match: re.Match[str]) -> str:
    text = match.group(0)
    value = _vi_words(text)
    # One digit word alone ("một", "năm") is an article or a word ("năm" is also "year"): kept.
    tokens = text.lower().split()
    if value is None or len(tokens) < 2:
        return text
    # Digit words side by side are a number only when spoken as one: "hai lăm" (25), "ba mốt"
    # (31); "mỗi năm một lần" is "once a year", not 51.
    if not {"mười", "mươi", "trăm"} & set(tokens) and not (len(tokens) == 2 and tokens[1] in _SPOKEN_UNITS):
        return text
    # Prices are said in thousands of dong without the word: "hai trăm rưỡi" is 250.000 ₫, unless
    # something counted follows ("hai trăm tờ": 200 sheets).
    counted = re.match(rf"\s*(?:{_VI_COUNTED})(?!\w)", match.string[match.end() :], re.IGNORECASE)
    if "trăm" in text.lower() and not counted:
        return f"{value * 1000} ₫"
    return str(value)


_ONCE = re.compile(r"(?<!\w)once(?!\w)")
_EN_WORDS = frozenset({
    "the", "and", "you", "your", "is", "it", "it's", "we", "we're", "our", "to", "of", "for", "with", "that's",
    "this", "will", "can",
})  # fmt: skip
_ES_WORDS = frozenset({
    "el", "la", "los", "las", "de", "que", "y", "es", "en", "por", "para", "con", "del", "tu", "su", "te", "lo", "se",
})  # fmt: skip


def _mostly_english(text: str) -> bool:
    words = re.findall(r"[a-z']+", text.lower())
    return sum(w in _EN_WORDS for w in words) > sum(w in _ES_WORDS for w in words)


@lru_cache(maxsize=8192)
def with_digits(text: str) -> str:
    """``text`` with numbers in words (en, es, vi) and Vietnamese magnitudes written as digits."""
    converted = alpha2digit(text, "en")
    if _mostly_english(converted):  # English "once" is not Spanish 11 ("once it's done")
        converted = _ONCE.sub("\ufffc", converted)
        converted = alpha2digit(converted, "es").replace("\ufffc", "once")
    else:
        converted = alpha2digit(converted, "es")
    converted = _EN_ES_CENTS.sub(lambda m: f"{m.group(1)}.{int(m.group(3)):02d} {m.group(2)}", converted)
    # "son 79 con 90": an amount said with its cents and no currency (¤: any currency)
    converted = _ES_SPOKEN_CENTS.sub(lambda m: f"{m.group(1)}.{m.group(2)} ¤", converted)
    converted = _VI_AMOUNT.sub(_vi_amount, converted)
    return _VI_WORDS_ONLY.sub(_vi_plain, converted)
