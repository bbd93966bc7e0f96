"""Typed fact spans in English, Spanish and Vietnamese: what a reply states besides prices.

Each finder reads text whose numbers are already digits (``numbers.with_digits``) and returns
the spans it recognises with a comparable value: percentages, times of day (a bare "6" is 06:00
or 18:00), days a claim is about with whether it says open or closed, dates (absolute and
relative to the business's today), durations, street addresses, links, and template text that
was never filled in. The rules in ``closed_world`` decide which of them the evidence proves.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from functools import lru_cache

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DAY_WORDS: dict[str, str] = {}
for _key, _words in {
    "mon": "monday mondays mon lunes thứ hai thu hai",
    "tue": "tuesday tuesdays tue tues martes thứ ba thu ba",
    "wed": "wednesday wednesdays wed miércoles miercoles thứ tư thu tu",
    "thu": "thursday thursdays thu thurs jueves thứ năm thu nam",
    "fri": "friday fridays fri viernes thứ sáu thu sau",
    "sat": "saturday saturdays sat sábado sabado sábados sabados thứ bảy thứ 7 thu bay",
    "sun": "sunday sundays sun domingo domingos chủ nhật chu nhat cn",
}.items():
    for _word in re.findall(r"thứ \S+|thu \S+|chủ nhật|chu nhat|\S+", _words):
        _DAY_WORDS[_word] = _key
for _n, _key in zip(range(2, 8), WEEKDAYS[:6], strict=True):
    _DAY_WORDS[f"thứ {_n}"] = _key
# Spanish "mon/sat/sun/thu" abbreviations collide with words; only full names are read there.
for _short in ("mon", "tue", "wed", "thu", "fri", "sat", "sun", "tues", "thurs", "cn", "thu hai", "thu ba"):
    _DAY_WORDS.pop(_short, None)
_DAY_PATTERN = "|".join(sorted(map(re.escape, _DAY_WORDS), key=len, reverse=True))
_DAY = re.compile(rf"(?<!\w)(?:{_DAY_PATTERN})(?!\w)", re.IGNORECASE)

_RELATIVE = {
    "today": 0, "tonight": 0, "hoy": 0, "esta noche": 0, "hôm nay": 0, "tối nay": 0, "chiều nay": 0,
    "sáng nay": 0, "this afternoon": 0, "this evening": 0, "this morning": 0, "esta tarde": 0,
    "esta mañana": 0, "tomorrow": 1, "mañana": 1, "ngày mai": 1, "mai": 1,
    "day after tomorrow": 2, "pasado mañana": 2, "ngày mốt": 2, "ngày kia": 2,
}  # fmt: skip
_RELATIVE_PATTERN = "|".join(sorted(map(re.escape, _RELATIVE), key=len, reverse=True))
# "mañana" after "la"/"de la"/"por la" is the morning; "mai" alone only as "mai" + a Vietnamese day word.
_RELATIVE_RE = re.compile(rf"(?<!\w)(?<!la )(?:{_RELATIVE_PATTERN})(?!\w)", re.IGNORECASE)

_MONTHS = {
    "january": 1, "jan": 1, "enero": 1, "february": 2, "feb": 2, "febrero": 2, "march": 3, "mar": 3, "marzo": 3,
    "april": 4, "apr": 4, "abril": 4, "may": 5, "mayo": 5, "june": 6, "jun": 6, "junio": 6, "july": 7,
    "jul": 7, "julio": 7, "august": 8, "aug": 8, "agosto": 8, "september": 9, "sep": 9, "sept": 9,
    "septiembre": 9, "setiembre": 9, "october": 10, "oct": 10, "octubre": 10, "november": 11, "nov": 11,
    "noviembre": 11, "december": 12, "dec": 12, "diciembre": 12,
}  # fmt: skip
_MONTH_PATTERN = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE_RES = (
    # December 5, Dec 5th
    re.compile(rf"(?<!\w)(?P<month>{_MONTH_PATTERN})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?!\d)", re.I),
    # 5 December, 5 de diciembre, the 5th of December
    re.compile(rf"(?<!\d)(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:de\s+|of\s+)?(?P<month>{_MONTH_PATTERN})(?!\w)", re.I),
    # ngày 5 tháng 12, 5 tháng 12
    re.compile(r"(?<!\d)(?P<day>\d{1,2})\s+tháng\s+(?P<monthnum>\d{1,2})(?!\d)", re.I),
    # 5/12 (day first: Vietnamese and Spanish; the reply's own language decides nothing here)
    re.compile(r"(?<![\d/.])(?P<day>\d{1,2})/(?P<monthnum>\d{1,2})(?:/(?P<year>\d{2,4}))?(?![\d/])"),
    # 2026-12-05
    re.compile(r"(?<!\d)(?P<year>\d{4})-(?P<monthnum>\d{1,2})-(?P<day>\d{1,2})(?!\d)"),
    # the 9th, el 9, ngày 9, mùng 9: the next such day of a month
    re.compile(
        rf"(?:\bthe|\bel|\bdel|ngày|mùng|mồng)\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?![\d:/.,h])"
        rf"(?!\s*(?:de\s+|of\s+|tháng\s+)?(?:{_MONTH_PATTERN}|\d))(?!\s*(?:%|[^\W\d_]*\s*(?:€|\$)))",
        re.I,
    ),
)
_IN_DAYS = re.compile(
    r"(?:\bin|\bwithin|\ben|\bdentro de|\btrong(?: vòng)?|\bsau)\s+(?P<n>\d{1,3})\s*"
    r"(?P<unit>business days?|working days?|days?|días?(?: hábiles| laborables)?|ngày(?: làm việc)?|"
    r"hours?|horas?|tiếng|giờ|h|weeks?|semanas?|tuần)(?!\w)",
    re.IGNORECASE,
)
_DURATION = re.compile(
    r"(?<![\d/.:,])(?P<n>\d{1,3})(?:\s*(?:-|\u2013|to|a|or|o|đến|tới)\s*(?P<m>\d{1,3}))?\s*"
    r"(?P<unit>business days?|working days?|days?|días?(?: hábiles| laborables)?|ngày(?: làm việc)?|"
    r"hours?|horas?|tiếng|weeks?|semanas?|tuần)(?!\w)",
    re.IGNORECASE,
)
_SAME_DAY = re.compile(
    r"\bsame[- ]day\b|\bel mismo día\b|\btrong ngày\b|\blấy ngay\b|\bal momento\b|\bhoy mismo\b|\bright away\b", re.I
)
# One unit said with an article: "about a week", "una semana", "khoảng một tuần".
_ONE_UNIT = re.compile(r"(?<!\w)(?:a|an|one|una|un|một)\s+(?P<unit>weeks?|semanas?|tuần|days?|días?|ngày)(?!\w)", re.I)

_PERCENT = re.compile(
    r"(?<![\d.,])(?P<n>\d{1,3}(?:[.,]\d{1,2})?)\s*(?:%|percent\b|per cent\b|por ciento\b|phần trăm\b)", re.I
)

_AMPM = r"(?P<ampm>a\.?m\.?|p\.?m\.?)"
_LATE = re.compile(
    r"^\s*(?:pm|p\.m\.|tonight|in the evening|in the afternoon|this evening|this afternoon|de la tarde|"
    r"de la noche|por la tarde|por la noche|esta tarde|esta noche|chiều|tối|đêm)",
    re.I,
)
_EARLY = re.compile(r"^\s*(?:am|a\.m\.|in the morning|de la mañana|por la mañana|sáng)", re.I)
_CLOCK = re.compile(rf"(?<![\d.,:/])(?P<h>\d{{1,2}})(?::|h|g|\.)(?P<m>\d{{2}})(?!\d)\s*{_AMPM}?", re.I)
_HOUR_AMPM = re.compile(rf"(?<![\d.,:/])(?P<h>\d{{1,2}})\s*{_AMPM}(?!\w)", re.I)
_VI_HOUR = re.compile(r"(?<![\d.,:/])(?P<h>\d{1,2})\s*(?:giờ|g|h)(?:\s*(?P<m>\d{1,2})(?:\s*phút)?)?(?!\w)", re.I)
_BARE_HOUR = re.compile(
    r"(?:\buntil|\btill|\btil|\bto|\bfrom|\bat|\bafter|\bbefore|\bopens?(?: at)?|\bcloses?(?: at)?|"
    r"\b(?:a|de|hasta|desde|entre|sobre) las?|\blúc|\btừ|\bđến|\btới)\s+(?P<h>\d{1,2})(?![\d.,:%/])",
    re.I,
)
_HOUR_RANGE = re.compile(
    rf"(?:\bfrom|\bde|\bdesde|\btừ|\bopen|\bopens|\babrimos|\babierto|"
    rf"\bmở cửa)\s+(?P<h>\d{{1,2}})\s*{_AMPM}?\s*(?:to|a|until|till|hasta|đến|tới|-|\u2013)\s*"
    r"(?P<h2>\d{1,2})(?![\d.,:%/h])",
    re.I,
)
# A bare number followed by a noun is a quantity ("up to 6 people"), not an hour.
_AFTER_HOUR_OK = re.compile(
    r"^(?:\s*$|\s*[.,;:!?)\-\u2013]|\s+(?:o'?clock|tonight|today|tomorrow|this|in|on|every|daily|and|or|y|o|"
    r"weekdays?|mon|tue|wed|thu|fri|sat|sun|de|del|por|esta|hoy|mañana|giờ|sáng|chiều|tối|hôm|hàng|mỗi|"
    r"pm|am|p\.m\.|a\.m\.|h\b|hrs?\b)|\s*(?:-|\u2013|to|a|đến|tới)\s*\d)",
    re.I,
)
# Before the bare hour: a duration or a count, never a time ("within 24 hours", "trong 24h").
_NOT_TIME_BEFORE = re.compile(r"(?:within|in|en|trong|trong vòng|sau|for|por|hasta|up to|of)\s*$", re.I)

_STREET_EN = (
    r"street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|way|place|pl|plaza|court|ct|square|sq|"
    r"parkway|pkwy|highway|hwy|terrace|row"
)
_ADDRESS_RES = (
    re.compile(
        rf"(?<![\w$€£₫.,])\d{{1,6}}[A-Za-z]?\s+(?:[A-Z][\w'.-]*\s+){{1,4}}(?i:{_STREET_EN})\b\.?"
        r"(?i:,?\s*(?:suite|ste|unit|apt|floor|fl)\.?\s*#?\s*[\w-]+)?"
        # the town, state and ZIP code when they follow: "Springfield, NJ 07081"
        r"(?:,\s*[A-Z][a-z]+(?:\s[A-Z][a-z]+)?,\s*[A-Z]{2}(?:\s+\d{5})?\b)?",
    ),
    re.compile(
        r"(?<!\w)(?:calle|c/|avenida|avda\.?|av\.|plaza|paseo|camino|ronda|travesía|glorieta|carrera)\s+"
        r"(?:de\s+(?:la\s+|los\s+|las\s+)?|del\s+)?[A-ZÁÉÍÓÚÑ][\wáéíóúñü'-]*(?:\s+(?:de\s+)?[A-ZÁÉÍÓÚÑ][\wáéíóúñü'-]*){0,3}"
        r",?\s*(?:n[º°o.]\s*)?\d{1,4}",
        re.I,
    ),
    re.compile(
        r"(?<!\w)(?:số\s+)?\d{1,4}[A-Za-z]?(?:/\d{1,4})?\s+(?:đường\s+|phố\s+)?"
        r"(?:[A-ZĐÂĂÊÔƠƯÁÀẢÃẠ][^\W\d_]*\s+){1,3}[A-ZĐÂĂÊÔƠƯÁÀẢÃẠ][^\W\d_]*",
    ),
    re.compile(
        r"(?<!\w)(?:đường|phố)\s+(?:[A-ZĐÂĂÊÔƠƯÁÀẢÃẠ][^\W\d_]*\s*){1,4}",
    ),
    re.compile(r"(?<!\w)(?:quận|q\.|phường|p\.|district)\s*\d{1,2}(?!\d)", re.I),
)
# Street words written short or long are the same street: "Maple Ave" is "Maple Avenue".
_STREET_SHORT = {
    "st": "street", "ave": "avenue", "av": "avenida", "rd": "road", "blvd": "boulevard", "ln": "lane",
    "dr": "drive", "pl": "place", "ct": "court", "sq": "square", "pkwy": "parkway", "hwy": "highway",
    "ste": "suite", "apt": "apartment", "c": "calle", "avda": "avenida", "q": "quan", "p": "phuong",
}  # fmt: skip
_LINK = re.compile(
    r"(?<![\w@.])@[A-Za-z0-9_][A-Za-z0-9_.]{2,29}(?<!\.)|https?://[^\s)>\]]+|(?<![@\w.-])(?:www\.)?[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\."
    r"(?:com|net|org|example|vn|es|io|co|shop|store|info|biz|app|me|us|uk|eu|mx)(?:/[^\s)>\]]*)?(?![\w@])",
    re.I,
)
_PLACEHOLDER = re.compile(
    r"\[(?!\s*\d)[^\]\n]{1,60}\](?!\()|\{\{?[^{}\n]{1,60}\}\}?|<(?!https?:)[A-Za-z_][\w ]{0,60}>|"
    r"\b(?:TODO|TBD|XXX|lorem ipsum)\b|_{3,}|\bINSERT [A-Z ]{2,}",
)
_INSTRUCTION = re.compile(
    r"\b(?:tell|inform|let|ask|remind) the (?:customer|client|user)\b|\bthe (?:customer|user) (?:should|must|wants?|"
    r"asked|is asking|needs)\b|\b(?:as an ai|language model|system prompt|my instructions|tool result|"
    r"function call)\b|\bdile al cliente\b|\binforma al cliente\b|\bel cliente (?:quiere|pide|debe)\b|"
    r"\b(?:nói|báo|trả lời) (?:với |cho )?khách(?: hàng)? (?:rằng|là)\b|\bhãy (?:nói|báo) (?:với |cho )?khách\b|"
    r"\((?:note|nb|lưu ý|nota|ghi chú)\s*:|\b(?:always|never) (?:reply|answer|respond|say)\b|\bluôn (?:trả lời|xưng)\b|"
    r"\bxưng (?:em|anh|chị) với khách\b|\bresponde siempre\b|\bnunca (?:digas|menciones)\b|"
    # Talk about the conversation itself, after a refusal for the reply's language: "the customer
    # wrote in Vietnamese", "no puedo determinar tu idioma", "không thể xác định được ngôn ngữ".
    r"\bthe (?:customer|user) (?:wrote|writes|speaks)\b|\bel cliente (?:escribi[oó]|escribe|habla)\b|"
    r"\bkhách(?: hàng)? (?:đã )?(?:viết|nhắn|nói) bằng\b|\b(?:determine|identify|detect) (?:your|the) language\b|"
    r"\b(?:determinar|identificar) (?:tu|su|el) idioma\b|\bxác định (?:được )?ngôn ngữ\b|"
    r"\b(?:trả lời|tra loi) bằng tiếng (?:việt|anh)\b|"
    r"\b(?:I will|I'll) (?:answer|reply|respond) in (?:English|Spanish|Vietnamese)\b",
    re.I,
)


@lru_cache(maxsize=8192)
def fold(text: str) -> str:
    """Lower case without accents or punctuation, single spaces: how addresses are compared."""
    plain = unicodedata.normalize("NFKD", text.replace("đ", "d").replace("Đ", "D"))
    stripped = "".join(c for c in plain if not unicodedata.combining(c))
    return " ".join(re.findall(r"[a-z0-9]+", stripped.lower()))


# Words that name nothing (articles, pronouns, linking words) in the three languages, folded: what
# the rules comparing a reply's words with the business's leave out.
_STOP_TEXT = (
    "a an the of for on in to and or is are it its we our your you with all this that be will por para de del "
    "la el los las un una y o en con es son su sus tu nuestro cho của và là có các một những được bạn em anh "
    "chị mình số"
)
STOP_WORDS = frozenset(fold(word) for word in _STOP_TEXT.split())


@lru_cache(maxsize=4096)
def address_words(text: str) -> frozenset[str]:
    """An address's words as compared: folded, street words written out ("Ave" is "avenue")."""
    return frozenset(_STREET_SHORT.get(w, w) for w in fold(text).split())


@lru_cache(maxsize=8192)
def sentences(text: str) -> tuple[str, ...]:
    return tuple(s for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip())


@lru_cache(maxsize=8192)
def clauses(text: str) -> tuple[str, ...]:
    """Sentences cut at commas, semicolons and "but": one open/closed statement each."""
    parts = re.split(r";|[,:](?!\d)|\s(?:but|pero|nhưng|while|mientras|còn|and|y|và)\s", text, flags=re.I)
    return tuple(p for p in parts if p.strip())


@dataclass(frozen=True)
class TimeSpan:
    written: str
    minutes: frozenset[int]  # every reading: a bare "6" is 06:00 or 18:00


def _readings(hour: int, minute: int, after: str, ampm: str | None) -> frozenset[int]:
    if hour > 24 or minute > 59:
        return frozenset()
    marker = (ampm or "").lower().replace(".", "")
    if marker == "pm" or (not marker and _LATE.match(after)):
        hour = hour + 12 if hour < 12 else hour
        return frozenset({hour * 60 + minute})
    if marker == "am" or _EARLY.match(after):
        return frozenset({(0 if hour == 12 else hour) * 60 + minute})
    if hour <= 12:
        return frozenset({hour * 60 + minute, ((hour + 12) % 24) * 60 + minute})
    return frozenset({(hour % 24) * 60 + minute} | ({1440} if hour == 24 else set()))


@lru_cache(maxsize=8192)
def times(text: str) -> tuple[TimeSpan, ...]:
    """Times of day: "18:00", "9h30", "6 pm", "6 giờ chiều", "until 6", "a las 8"."""
    found: list[TimeSpan] = []
    taken: list[tuple[int, int]] = []

    def add(match: re.Match[str], hour: int, minute: int, ampm: str | None) -> None:
        if any(a < match.end() and match.start() < b for a, b in taken):
            return
        readings = _readings(hour, minute, text[match.end() :], ampm)
        if readings:
            taken.append((match.start(), match.end()))
            found.append(TimeSpan(match.group(0).strip(), readings))

    for match in _CLOCK.finditer(text):
        add(match, int(match.group("h")), int(match.group("m")), match.group("ampm"))
    for match in _HOUR_AMPM.finditer(text):
        add(match, int(match.group("h")), 0, match.group("ampm"))
    for match in _VI_HOUR.finditer(text):
        if _NOT_TIME_BEFORE.search(text[: match.start()]):
            continue  # "trong 24h": a duration
        add(match, int(match.group("h")), int(match.group("m") or 0), None)
    for match in _HOUR_RANGE.finditer(text):
        end = match.end()
        first, second = int(match.group("h")), int(match.group("h2"))
        if not _AFTER_HOUR_OK.match(text[end:]) or first > 24 or second > 24:
            continue
        start_readings = _readings(first, 0, " " + (match.group("ampm") or ""), match.group("ampm"))
        end_readings = _readings(second, 0, text[end:], None)
        if start_readings and end_readings:
            taken.append((match.start(), end))
            found.append(TimeSpan(match.group(0).strip(), start_readings))
            found.append(TimeSpan(match.group("h2"), end_readings))
    for match in _BARE_HOUR.finditer(text):
        if not _AFTER_HOUR_OK.match(text[match.end() :]) or re.search(r"\d\s*$", text[: match.start()]):
            continue  # "groups of 4 to 15": a range of counts, not an hour
        add(match, int(match.group("h")), 0, None)
    return tuple(found)


@lru_cache(maxsize=8192)
def percents(text: str) -> tuple[tuple[str, Decimal], ...]:
    return tuple((m.group(0), Decimal(m.group("n").replace(",", "."))) for m in _PERCENT.finditer(text))


def day_words(text: str) -> list[tuple[str, str]]:
    """(written, weekday key) for every weekday named."""
    return [(m.group(0), _DAY_WORDS[m.group(0).lower()]) for m in _DAY.finditer(text)]


def relative_days(text: str) -> list[tuple[str, int]]:
    """(written, days from today): today, tonight, tomorrow, mañana, ngày mai..."""
    found = []
    for match in _RELATIVE_RE.finditer(text):
        word = match.group(0).lower()
        if word == "mai" and not re.match(r"\s+(?:là|mở|nghỉ|đóng|có|tiệm|em|mình|anh|chị)", text[match.end() :]):
            continue
        found.append((match.group(0), _RELATIVE[word]))
    return found


def _next_weekday(today: date, key: str) -> date:
    ahead = (WEEKDAYS.index(key) - today.weekday()) % 7
    return today + timedelta(days=ahead or 7)


@lru_cache(maxsize=8192)
def dates(text: str, today: date) -> tuple[tuple[str, date], ...]:
    """Dates a text names, resolved against ``today`` (the business's date): absolute dates
    (the next such date), weekdays (the next one after today), today/tomorrow, "in 3 days"."""
    found: list[tuple[str, date]] = []
    for pattern in _DATE_RES:
        for match in pattern.finditer(text):
            groups = match.groupdict()
            day = int(groups["day"])
            month = _MONTHS.get((groups.get("month") or "").lower()) or int(groups.get("monthnum") or 0)
            if not month and "month" not in groups and "monthnum" not in groups:
                month = today.month if day >= today.day else today.month % 12 + 1  # "el 9": the next 9th
            if not (1 <= month <= 12 and 1 <= day <= 31):
                continue
            year = int(groups["year"]) if groups.get("year") else today.year
            if not groups.get("year") and month < today.month and "month" not in groups and "monthnum" not in groups:
                year += 1
            year = year + 2000 if year < 100 else year
            try:
                when = date(year, month, day)
                if not groups.get("year") and when < today - timedelta(days=60):
                    when = date(year + 1, month, day)
            except ValueError:
                continue
            found.append((match.group(0), when))
    for match in _WEEKDAY_DATE.finditer(text):
        dated = _dated_weekday(today, _DAY_WORDS[match.group("weekday").lower()], int(match.group("day")))
        if dated is not None:
            found.append((match.group(0), dated))
    for written, key in day_words(text):
        found.append((written, _next_weekday(today, key)))
    for written, days in relative_days(text):
        found.append((written, today + timedelta(days=days)))
    for match in _IN_DAYS.finditer(text):
        days = _days(int(match.group("n")), match.group("unit"))
        found.append((match.group(0), today + timedelta(days=days)))
    return tuple(found)


# "el jueves 3", "Thursday the 3rd": a weekday with its day of the month. Not "Monday 9 to 6",
# which is hours.
_WEEKDAY_DATE = re.compile(
    rf"(?<!\w)(?P<weekday>{_DAY_PATTERN}),?\s+(?:the\s+)?(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?![\d:/.,h]\d)(?![\d:h])"
    r"(?!\s*(?:-|\u2013|to|a|al|hasta|until|till|đến|tới|y media|am|pm|a\.m|p\.m|giờ|de la|in the|o'clock)(?!\w))",
    re.IGNORECASE,
)


def _dated_weekday(today: date, key: str, day: int) -> date | None:
    """The date this month or next that falls on ``day`` and is that weekday, if any."""
    year, month = today.year, today.month
    for _ in range(2):
        try:
            when: date | None = date(year, month, day)
        except ValueError:
            when = None
        if when is not None and when >= today - timedelta(days=7) and WEEKDAYS[when.weekday()] == key:
            return when
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return None


def _days(n: int, unit: str) -> int:
    unit = unit.lower()
    if unit.startswith(("hour", "hora", "tiếng", "giờ")) or unit == "h":
        return -(-n // 24)
    if unit.startswith(("week", "semana", "tuần")):
        return n * 7
    return n


def durations(text: str) -> list[tuple[str, int]]:
    """(written, days) for "3 days", "2-3 días", "24 hours", "same day" (0); a range counts its
    shortest end."""
    found = [(m.group(0), _days(int(m.group("n")), m.group("unit"))) for m in _DURATION.finditer(text)]
    found.extend((m.group(0), _days(1, m.group("unit"))) for m in _ONE_UNIT.finditer(text))
    found.extend((m.group(0), 0) for m in _SAME_DAY.finditer(text))
    return found


def addresses(text: str) -> list[str]:
    """Each address a text states, its parts written side by side taken as one ("12 Lý Tự Trọng,
    Quận 3" is one address: every part must come from the same address)."""
    spans: list[tuple[int, int]] = []
    for pattern in _ADDRESS_RES:
        for match in pattern.finditer(text):
            start, end = match.span()
            if not any(s <= start and end <= e for s, e in spans):
                spans = [(s, e) for s, e in spans if not (start <= s and e <= end)] + [(start, end)]
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and re.fullmatch(r"[\s,]*", text[merged[-1][1] : start]):
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [text[start:end].strip(" ,.") for start, end in merged]


@lru_cache(maxsize=4096)
def links(text: str) -> tuple[str, ...]:
    return tuple(m.group(0).rstrip(".,;:!?") for m in _LINK.finditer(text))


def link_key(link: str) -> str:
    """A link as compared: no scheme, no www., lower-case host, no trailing slash."""
    bare = re.sub(r"^https?://", "", link.strip(), flags=re.I)
    host, _, path = bare.partition("/")
    host = host.lower().removeprefix("www.")
    return f"{host}/{path}".rstrip("/")


def placeholders(text: str) -> list[str]:
    return [m.group(0) for m in _PLACEHOLDER.finditer(text)]


def instructions(text: str) -> list[str]:
    return [m.group(0) for m in _INSTRUCTION.finditer(text)]


# A period an owner's line is bounded by: "December promotion", "en enero", "tháng 12/2026",
# "12/2026". Abbreviations are left out ("may", "mar" are words), and "May" counts only capitalised.
_PERIOD = re.compile(
    r"(?<!\w)(?P<month>january|february|march|april|june|july|august|september|october|november|december|"
    r"enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre|noviembre|diciembre|"
    r"(?-i:May))(?!\w)(?:\s+(?:de\s+|of\s+)?(?P<year>\d{4}))?"
    r"|tháng\s+(?P<monthnum>\d{1,2})(?!\d)(?:\s*/\s*(?P<year2>\d{4}))?"
    r"|(?<![\d/])(?P<monthnum2>\d{1,2})/(?P<year3>\d{4})(?![\d/])",
    re.IGNORECASE,
)
_UNTIL = re.compile(
    r"(?:before|until|till|through|by|hasta(?: el)?|antes del?|trước(?: ngày)?|đến(?: hết)?(?: ngày)?)\s*$",
    re.IGNORECASE,
)


@lru_cache(maxsize=8192)
def in_season(text: str, today: date) -> bool:
    """False when an owner's line is bounded in time and ``today`` is outside it: a December
    promotion in January, "before December 20" on the 21st. A line naming no period always holds."""
    for written, when in dates(text, today):
        at = text.find(written)
        if at >= 0 and _UNTIL.search(text[:at]):
            if (when - today).days > 180:  # "until December 20" read in January: last December's
                when = when.replace(year=when.year - 1)
            return today <= when
    periods = []
    for match in _PERIOD.finditer(text):
        groups = match.groupdict()
        month = _MONTHS.get((groups["month"] or "").lower()) or int(groups["monthnum"] or groups["monthnum2"] or 0)
        year = groups["year"] or groups["year2"] or groups["year3"]
        periods.append((month, int(year) if year else None))
    return not periods or any(m == today.month and y in (None, today.year) for m, y in periods)
