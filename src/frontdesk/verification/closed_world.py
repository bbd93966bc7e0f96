"""The closed world: every fact a reply states must be found in what backs it.

What backs a reply (``Grounds``): this turn's tool results and the tool ledger's (every value
they returned, the hours, the turnaround of each item), the customer's own messages, the owner's
policy text, and the clock (today's date and weekday, and the time, in the business's zone).

Each rule reads the reply's typed spans (``facts``) and fails with the span and why:
percentages and "free"/discount words, times of day, "open/closed on <day>" against the hours,
ready/delivery dates and durations against the turnaround, street addresses, links, minimum
quantities, a price tied to a quantity, template text and words meant for the assistant, and
photos shown as an item they are not. The gate stays model-free: regular expressions and set
lookups, a few milliseconds per reply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from frontdesk.context.ledgers import WorkingState
from frontdesk.verification import facts
from frontdesk.verification.contacts import contact_values
from frontdesk.verification.facts import fold
from frontdesk.verification.money import without_money
from frontdesk.verification.numbers import with_digits

_OPEN = re.compile(
    r"\b(?:open|opens|abiert[oa]s?|abrimos|abre|abren|atendemos|mở cửa|có mở|mở (?:từ|đến|tới|lúc|tới|sớm|muộn)|"
    r"(?:có |vẫn )?bán)\b",
    re.I,
)
_RELATIVE_DAY = re.compile(
    r"today|tonight|tomorrow|this (?:afternoon|evening|morning)|hoy|mañana|esta (?:tarde|noche|mañana)|"
    r"hôm nay|ngày mai|tối nay|chiều nay|sáng nay",
    re.I,
)
_SPAN_OF_DAYS = re.compile(
    r"\b(?:weekdays?|weekends?|every day|daily|entre semana|fines? de semana|todos los días|a diario|"
    r"ngày thường|cuối tuần|hàng ngày|mỗi ngày|các ngày)\b",
    re.I,
)
_ECHO = re.compile(
    r"\byou(?:'d| would)? (?:need|want|like|mentioned|said|asked)|\byou're (?:hoping|looking)|"
    r"\b(?:necesitas|necesita|quieres|quiere|mencionaste|dijiste|pediste)\b|"
    r"\b(?:anh|chị|bạn|mình)\s+(?:cần|muốn|nói|hỏi)\b",
    re.I,
)
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|«[^»\n]*»")
_CLOSED = re.compile(
    r"\b(?:closed|shut|cerrad[oa]s?|cerramos todo|no abrimos|no abre|nghỉ|đóng cửa(?: cả ngày)?|không mở|không bán|"
    r"not open|(?:aren|isn)['\u2019]t open|no (?:está|estamos|están) abiert[oa]s?|không làm việc)\b",
    re.I,
)
_PART_OF_DAY = re.compile(
    r"\b(?:morning|afternoon|evening|night|noon|(?:por|de|esta) la mañana|tarde|noche|mediodía|sáng|chiều|tối|trưa|đêm|"
    r"until|till|from|after|before|at|hasta|desde|a las|từ|đến|lúc|sau|trước|early|late|temprano|sớm|muộn)\b|\d",
    re.I,
)
_NOW = re.compile(r"\b(?:right now|open now|now open|ahora mismo|ahora|bây giờ|đang mở|lúc này)\b", re.I)
_READY = re.compile(
    r"\b(?:ready|done|deliver\w*|ship\w*|pick(?:ed)?[- ]?up|collect\w*|arriv\w*|have (?:it|them|"
    r"your)|get (?:it|them|your)|"
    r"turnaround|takes?|print(?:ed)? by|finish\w*|"
    r"list[oa]s?|entreg\w*|recog\w*|envi\w*|llega\w*|tendr\w*|estar[áa]n?|tarda\w*|termin\w*|llevar\w*|"
    r"xong|giao|lấy|nhận|kịp|hoàn thành|làm trong|có bánh|có hàng|đặt trước|báo trước|in advance|ahead|"
    r"con (?:\w+ )?antelación|por adelantado)\b",
    re.I,
)
_FREE = re.compile(
    r"\b(?:free|gratis|gratuit[oa]s?|complimentary|on the house|sin (?:coste|costo|cargo)|miễn phí|"
    r"tặng(?: kèm)?|regalo)\b",
    re.I,
)
_DISCOUNT = re.compile(
    r"\b(?:\d+\s*%?\s*off|discount\w*|descuento\w*|rebaja\w*|promo\w*|on sale|oferta\w*|giảm giá|"
    r"giảm|khuyến mãi|ưu đãi|"
    r"chiết khấu|mã giảm)\b",
    re.I,
)
_NEGATION = re.compile(r"\b(?:no|not|isn't|aren't|don't|doesn't|never|sin|nunca|không|chưa|chẳng)\b", re.I)
# A smallest order stated as a fact: "minimum order of 12", "our minimum for stickers is 100",
# "100 is our minimum", "as few as 6", "desde 2 personas", "tối thiểu 6 cái", "groups of 4".
_LEAST_WORD = r"(?:minimum|min\.|mínimo|pedido mínimo|tối thiểu|como mínimo)"
_NOT_A_COUNT = r"(?!\d)(?!\s*(?:[$€£₫%]|days?|días?|ngày|hours?|horas?|giờ|tiếng|weeks?|semanas?|tuần|h\b|am|pm))"
_MINIMUM = re.compile(
    rf"\b{_LEAST_WORD}(?:\s+order)?(?:\s+(?:for|of|on|de|para|cho|con)\s+(?:[^\W\d_][\w-]*\s+){{1,4}}?)?"
    rf"\s*(?:is|are|es|son|of|de|es de|là|:)?\s*(?P<n>\d[\d,.]*){_NOT_A_COUNT}"
    rf"|(?P<n2>\d[\d,.]*)\s+(?:is|es)\s+(?:our|el|nuestro)\s+{_LEAST_WORD}"
    rf"|\b(?:as few as|at least|ít nhất|al menos|groups? of|grupos de)\s+(?P<n3>\d[\d,.]*){_NOT_A_COUNT}"
    rf"|\b(?:desde|a partir de|from|starting at|từ)\s+(?P<n4>\d[\d,.]*)\s+"
    rf"(?:personas|people|persons|units|unidades|người|cái|pieces|piezas|shirts|camisetas|áo)\b",
    re.I,
)
_TOOL_NAME = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")


@dataclass
class Grounds:
    """Everything a reply may state, read once per verdict."""

    tool_texts: list[str]
    customer: list[str]
    policy: list[str]
    schedule: dict[str, tuple[str, ...]]
    turnaround: dict[str, int]
    minimums: dict[str, int]
    today: date
    now_minutes: int
    item_words: dict[str, list[str]]
    references: set[str]
    tool_names: frozenset[str]
    photo_items: dict[str, str] = field(default_factory=dict)  # photo URL -> the item it was fetched for

    @property
    def stated(self) -> list[str]:
        """Texts whose facts the reply may repeat: tools, owner, customer."""
        return [*self.tool_texts, *self.policy, *self.customer]


@dataclass(frozen=True)
class Unproven:
    rule: str
    reason: str


def grounds_of(state: WorkingState) -> Grounds:
    evidence = [*state.earlier_evidence(), *state.turn_evidence]
    try:
        zone = ZoneInfo(state.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    local: datetime = state.now.astimezone(zone)
    schedule: dict[str, tuple[str, ...]] = {}
    turnaround: dict[str, int] = {}
    minimums: dict[str, int] = {}
    photo_items: dict[str, str] = {}
    for e in evidence:  # oldest first: a newer result wins
        schedule.update(e.schedule)
        turnaround.update(e.turnaround_days)
        minimums.update(e.minimums)
        if len(e.references) == 1 and e.photos:
            (item,) = e.references
            photo_items.update({facts.link_key(url): item for url in e.photos.values()})
    return Grounds(
        tool_texts=[
            *(t for e in evidence for t in e.texts),
            *(p for e in evidence for p in e.prices),
            *(str(days) for e in evidence for days in e.turnaround_days.values()),
        ],
        customer=[with_digits(t) for t in state.customer_contacts],
        # A promotion bounded to another month or to a day gone by states nothing today.
        policy=[with_digits(t) for t in state.policy_texts if facts.in_season(t, local.date())],
        schedule=schedule,
        turnaround=turnaround,
        minimums=minimums,
        today=local.date(),
        now_minutes=local.hour * 60 + local.minute,
        item_words={k: list(v) for k, v in state.item_words.items()},
        references={r for e in evidence for r in e.references},
        tool_names=state.tool_names | {entry.tool_name for entry in state.tool},
        photo_items=photo_items,
    )


_digits = with_digits  # cached there


@lru_cache(maxsize=4096)
def _time_readings(text: str) -> frozenset[int]:
    readings: set[int] = set()
    for span in facts.times(text):
        readings |= span.minutes
    for start, end in re.findall(r"(\d{1,2}:\d{2})\s*[-\u2013]\s*(\d{1,2}:\d{2})", text):
        readings |= {_minutes(start), _minutes(end)}
    return frozenset(readings)


def _minutes(hhmm: str) -> int:
    hour, minute = hhmm.split(":")
    return int(hour) * 60 + int(minute)


def unproven(text: str, groups: Sequence[tuple[Sequence[str], str, str]], g: Grounds) -> list[Unproven]:
    """Every span of the reply ``text`` (digits already) that nothing in ``g`` backs.
    ``groups``: each image group's (photo URLs, caption, text before it)."""
    plain = without_money(text)  # "$45 to 19" holds no hour, "12.50 euros" no time
    return [
        *_percent_and_offers(text, g),
        *_hours(plain, g),
        *_promised_dates(plain, g),
        *_addresses(text, g),
        *_links(text, g),
        *_minimums(plain, g),
        *_numbers(_QUOTED.sub(" ", plain), g),  # a quoted example or the customer's words quoted
        *_internal(text, g),
        *_photo_subjects(groups, g),
    ]


def _percent_and_offers(text: str, g: Grounds) -> list[Unproven]:
    owner = [_digits(t) for t in (*g.tool_texts, *g.policy)]
    known = {value for t in owner for _, value in facts.percents(t)}
    failures = [
        Unproven("percentage", f"{written!r} is not a figure any tool or the owner's policy gave; never invent one")
        for written, value in facts.percents(text)
        if value not in known
    ]
    if not (_FREE.search(text) or _DISCOUNT.search(text)):
        return failures
    owner_sentences = [s for t in owner for s in facts.sentences(t)]
    owner_clauses = [c for s in owner_sentences for c in facts.clauses(s)]
    for clause in (c for s in facts.sentences(text) for c in facts.clauses(s)):
        if _NEGATION.search(clause):
            continue
        for word, family in ((_FREE, "free"), (_DISCOUNT, "discount")):
            match = word.search(clause)
            if match is None or (family == "discount" and facts.percents(clause)):
                continue  # a discount with its figure: the figure is what the percentage rule proves
            near = _content_words(clause, match)
            # A kind of thing the gate knows in three languages (delivery, parking...) must be
            # free in the same clause of the business's text: "free parking, or delivered for a flat
            # fee" makes parking free, not delivery. Any other thing, in the same sentence.
            scope = owner_clauses if near & _CONCEPTS.keys() else owner_sentences
            if not any(word.search(c) and (not near or near & _concept_words(c)) for c in scope):
                failures.append(
                    Unproven(
                        "offer",
                        f"{clause.strip()!r} offers something {family} that no tool or policy states; "
                        "promise only what the business's data says",
                    )
                )
    return failures


_STOP = facts.STOP_WORDS


# What is offered, in the three languages: "estacionamiento gratis" is the "free parking" the
# business's English notes state.
_CONCEPTS = {
    "parking": "parking aparcamiento estacionamiento parqueo xe",
    "delivery": "delivery deliver delivered shipping ship entrega envio domicilio giao ship",
    "design": "design diseno thiet ke",
    "wifi": "wifi wi fi",
    "helmet": "helmet casco mu bao hiem",
    "lock": "lock candado khoa",
    "consultation": "consultation consulta tu van",
}
_CONCEPT_OF = {word: concept for concept, words in _CONCEPTS.items() for word in words.split()}


def _content_words(clause: str, match: re.Match[str]) -> set[str]:
    words = [w for w in fold(clause).split() if w not in _STOP and not w.isdigit()]
    own = set(fold(match.group(0)).split())
    return {_CONCEPT_OF.get(w, w) for w in words if w not in own and (len(w) > 2 or w in _CONCEPT_OF)}


@lru_cache(maxsize=4096)
def _concept_words(text: str) -> frozenset[str]:
    return frozenset(_CONCEPT_OF.get(w, w) for w in fold(text).split())


def _hours(text: str, g: Grounds) -> list[Unproven]:
    failures: list[Unproven] = []
    allowed = {m for t in (*g.tool_texts, *g.policy, *g.customer) for m in _time_readings(t)}
    allowed |= {_minutes(r) for ranges in g.schedule.values() for span in ranges for r in span.split("-")}
    allowed |= {g.now_minutes - g.now_minutes % 5, g.now_minutes}
    for span in facts.times(text):
        if not span.minutes & allowed:
            reason = (
                "the business's hours were not loaded: call the tool that returns them"
                if not g.schedule
                else "it is not a time the hours, a tool or the customer gave"
            )
            failures.append(Unproven("time", f"{span.written!r}: {reason}"))
    for sentence in facts.sentences(_QUOTED.sub(" ", text)):  # a quoted name ("Sunday brunch") is no day
        # "Today we close early: open until 2 pm" - a clause without its own day takes the
        # sentence's today or tomorrow (a weekday in another clause is more often a contrast).
        whole = [d for d in _days_named(sentence, g) if _RELATIVE_DAY.fullmatch(d[0].strip())]
        opened: list[tuple[str, tuple[str, ...]]] = []  # the days the last "we open" clause named
        for clause in facts.clauses(sentence):
            inherited = whole if len(whole) == 1 and not _SPAN_OF_DAYS.search(clause) else []
            failures.extend(_open_or_closed(clause, inherited, g))
            if _OPEN.search(clause) and not _CLOSED.search(clause):
                opened = _days_named(clause, g) or inherited
            elif opened and not _CLOSED.search(clause) and not _days_named(clause, g):
                # "El sábado abrimos de 10 a 14 y por la tarde de 17 a 20:30": the same day, still open
                failures.extend(_more_hours(clause, opened))
            else:
                opened = []
    return failures


def _more_hours(clause: str, days: list[tuple[str, tuple[str, ...]]]) -> list[Unproven]:
    said = clause.strip()
    failures = []
    for label, ranges in days:
        ends = {_minutes(r) for span in ranges for r in span.split("-")}
        if any(not t.minutes & ends for t in facts.times(clause)):
            hours = ", ".join(ranges) or "closed"
            failures.append(Unproven("hours", f"{said!r}: on {label} the hours are {hours}"))
    return failures


def _open_or_closed(clause: str, sentence_days: list[tuple[str, tuple[str, ...]]], g: Grounds) -> list[Unproven]:
    """A clause saying the business is open or closed on a day (or now) must agree with that
    day's hours; a time it gives for that day must be one of that day's opening or closing times."""
    # "not open" is closed, not both: the open word inside a closed phrase does not count
    opens, closes = bool(_OPEN.search(_CLOSED.sub(" ", clause))), bool(_CLOSED.search(clause))
    if opens == closes:
        return []
    days = _days_named(clause, g) or sentence_days
    now = bool(_NOW.search(clause)) and not days
    if not days and not now:
        return []
    said = clause.strip()
    if not g.schedule:
        return [Unproven("hours", f"{said!r}: the business's hours were not loaded")]
    if now:
        ranges = _day_hours(g, g.today)
        is_open = any(_minutes(a) <= g.now_minutes < _minutes(b) for a, b in (r.split("-") for r in ranges))
        return [] if is_open == opens else [Unproven("hours", f"{said!r}: the hours say it is {_state(is_open)} now")]
    failures: list[Unproven] = []
    times_said = facts.times(clause)
    for label, ranges in days:
        ends = {_minutes(r) for span in ranges for r in span.split("-")}
        if opens and not ranges:
            failures.append(Unproven("hours", f"{said!r}: the hours say {label} is closed"))
        elif opens and any(not t.minutes & ends for t in times_said):
            hours = ", ".join(ranges)
            failures.append(Unproven("hours", f"{said!r}: on {label} the hours are {hours}"))
        elif closes and ranges and not _PART_OF_DAY.search(clause):
            failures.append(Unproven("hours", f"{said!r}: the hours say {label} is open ({', '.join(ranges)})"))
    return failures


def _state(is_open: bool) -> str:
    return "open" if is_open else "closed"


def _days_named(clause: str, g: Grounds) -> list[tuple[str, tuple[str, ...]]]:
    """(as written, that day's ranges) for every day the clause is about: a weekday, today,
    tomorrow, a date (a special day's hours win over its weekday's)."""
    return [
        (written, _day_hours(g, when))
        for written, when in facts.dates(clause, g.today)
        if not re.match(r"(?:in|within|en|dentro|trong|sau)\b", written, re.I)
    ]


def _day_hours(g: Grounds, when: date) -> tuple[str, ...]:
    return g.schedule.get(when.isoformat(), g.schedule.get(facts.WEEKDAYS[when.weekday()], ()))


def _promised_dates(text: str, g: Grounds) -> list[Unproven]:
    failures: list[Unproven] = []
    # "Friday coffee double" in quotes is a name. Most replies promise nothing: then the customer's
    # own dates are not read at all.
    promising = [s for s in facts.sentences(_QUOTED.sub(" ", text)) if _READY.search(s)]
    if not promising:
        return failures
    customer_dates = {when for t in g.customer for _, when in facts.dates(t, g.today)}
    customer_days = {d for t in g.customer for _, d in facts.durations(t)}
    stated = " ".join(g.tool_texts + g.policy)
    for sentence in promising:
        needed = _turnaround_for(sentence, g)
        echoed = bool(_ECHO.search(sentence))  # "you need them by Friday": the customer's date, not a promise
        said = facts.dates(sentence, g.today)
        latest = max((when for _, when in said), default=None)
        for written, when in said:
            if (echoed and when in customer_dates) or when.isoformat() in stated:
                continue
            if latest is not None and when < latest and (when in customer_dates or _started(sentence, written)):
                continue  # "order today, ready Thursday": the start, not the promise
            days = (when - g.today).days
            if needed is None:
                failures.append(Unproven("date", f"{written!r}: no turnaround was fetched for what is promised"))
            elif days < needed:
                failures.append(
                    Unproven("date", f"{written!r} is {days} day(s) away; the turnaround fetched is {needed} day(s)")
                )
        for written, days in facts.durations(sentence):
            if days in customer_days:
                continue
            if needed is None:
                failures.append(Unproven("turnaround", f"{written!r}: no turnaround was fetched"))
            elif days < needed:
                failures.append(Unproven("turnaround", f"{written!r}: the turnaround fetched is {needed} day(s)"))
    return failures


# An order's start, said before its date: "order today", "si la dejas hoy", "đặt hôm nay".
_START = re.compile(
    r"(?:order\w*|plac\w+|drop\w*(?: it| them)?(?: off)?|leav\w+|bring\w*|send\w*|book\w*|"
    r"dej\w+|encarg\w+|pid\w+|pides|trae\w*|reserv\w+|đặt|gửi|mang)\s+(?:\w+\s+){0,3}$",
    re.IGNORECASE,
)


def _started(sentence: str, written: str) -> bool:
    at = sentence.find(written)
    return at >= 0 and bool(_START.search(sentence[:at]))


def _turnaround_for(sentence: str, g: Grounds) -> int | None:
    if not g.turnaround:
        return None
    named = [item for item in _items_named(sentence, g) if item in g.turnaround]
    return max(g.turnaround[i] for i in named) if named else max(g.turnaround.values())


def _items_named(text: str, g: Grounds) -> set[str]:
    """The items ``text`` names. The most specific words win: "bánh mì chay" names the vegetarian
    banh mi, not every item called "bánh mì"."""
    folded = f" {fold(text)} "
    matched: dict[str, set[str]] = {}
    for item, words in g.item_words.items():
        hits = {f for f in map(fold, words) if f and f" {f} " in folded}
        if hits:
            matched[item] = hits
    longer = {w for hits in matched.values() for w in hits}
    return {
        item
        for item, hits in matched.items()
        if any(not any(w != other and f" {w} " in f" {other} " for other in longer) for w in hits)
    }


def _addresses(text: str, g: Grounds) -> list[Unproven]:
    known = [facts.address_words(t) for t in g.stated]
    failures = []
    for written in facts.addresses(text):
        tokens = facts.address_words(written) - _STOP
        if tokens and not any(tokens <= words for words in known):
            failures.append(Unproven("address", f"{written!r} is not an address any tool or the customer gave"))
    return failures


_IMAGE = re.compile(r"\.(?:png|jpe?g|gif|webp)(?:[?#]\S*)?$", re.I)


def _links(text: str, g: Grounds) -> list[Unproven]:
    known = {facts.link_key(link) for t in g.stated for link in facts.links(t)}
    known |= set(g.photo_items)
    failures = []
    for link in facts.links(text):
        if _IMAGE.search(link):
            continue  # an image's address is the image rule's: fetched this turn or refused
        key = facts.link_key(link)
        if not any(k == key or k.startswith(key + "/") for k in known):
            failures.append(Unproven("link", f"{link!r} is not a link any tool returned or the customer gave"))
    return failures


def _minimums(text: str, g: Grounds) -> list[Unproven]:
    """A minimum must be the smallest order a tool gave for the item the sentence names (any
    item's when it names none), or one the owner wrote; the customer's count is not one."""
    owner = {n for t in g.policy for n in re.findall(r"\d+", t.replace(",", ""))}
    failures = []
    for sentence in facts.sentences(text):
        named = {item: least for item, least in g.minimums.items() if item in _items_named(sentence, g)}
        allowed = {str(least) for least in (named or g.minimums).values()} | owner
        for m in _MINIMUM.finditer(sentence):
            said = re.sub(r"[,.]", "", next(v for k, v in m.groupdict().items() if v and k.startswith("n")))
            if said not in allowed:
                known = ", ".join(f"{item}: {least}" for item, least in sorted(named.items()))
                reason = f"the smallest order fetched is {known}" if named else "no tool gave that minimum"
                failures.append(Unproven("quantity", f"{m.group(0)!r}: {reason}"))
    return failures


_NUMBER = re.compile(r"(?<![\w.,/#:+@-])(?:\d{1,3}(?:[.,]\d{3})+(?!\d)|\d+(?:[.,]\d+)?)(?![\w%/:@])(?![.,]\d)")
_LIST_MARKER = re.compile(r"(?:^|\n)\s*$")
# Counted in passing ("one or two", "a couple"): no reply states these as a figure to prove.
_SMALL = {"0", "1", "2"}
_WEEKS = re.compile(r"\s*(?:weeks?|semanas?|tuần)\b", re.IGNORECASE)


def _number_key(written: str) -> str:
    if re.fullmatch(r"\d{1,3}(?:[.,]\d{3})+", written):
        return re.sub(r"[.,]", "", written)
    return (
        written.replace(",", ".").rstrip("0").rstrip(".") if re.search(r"[.,]", written) else written.lstrip("0") or "0"
    )


@lru_cache(maxsize=4096)
def _numbers_in(text: str) -> frozenset[str]:
    return frozenset(_number_key(m.group(0)) for m in re.finditer(r"\d{1,3}(?:[.,]\d{3})+(?!\d)|\d+(?:[.,]\d+)?", text))


def _numbers(text: str, g: Grounds) -> list[Unproven]:
    """Every other figure (a size, a count of people, a distance, a postcode, a number of
    days) must be one the tools, the owner or the customer wrote. Times, dates, percentages,
    links and contact details are blanked first: their own rules judge them."""
    blanked = text
    spans = [
        *(t.written for t in facts.times(text)),
        *(w for w, _ in facts.dates(text, g.today)),
        *(w for w, _ in facts.percents(text)),
        *facts.links(text),
        *(c.written for c in contact_values(text)),
        *facts.placeholders(text),
        *facts.addresses(text),
        *(m.group(0) for m in _MINIMUM.finditer(text)),
    ]
    for written in sorted(spans, key=len, reverse=True):
        blanked = blanked.replace(written, " " * len(written))
    # A question asserts no figure: "did you say 500 or 5000 flyers?" checks what the customer meant.
    for question in re.findall(r"[^.!?\n]*\?", blanked):
        blanked = blanked.replace(question, " " * len(question))
    known = {n for t in (*g.tool_texts, *g.policy, *g.customer) for n in _numbers_in(_digits(t))}
    failures = []
    for match in _NUMBER.finditer(blanked):
        key = _number_key(match.group(0))
        if key in known or key in _SMALL or _LIST_MARKER.search(blanked[: match.start()]):
            continue
        if key.isdigit() and str(int(key) * 7) in known and _WEEKS.match(blanked, match.end()):
            continue  # "about 3 weeks" for a 21-day turnaround
        around = blanked[max(0, match.start() - 25) : match.end() + 25].strip()
        failures.append(
            Unproven("figure", f"{match.group(0)!r} in {around!r} is not a figure any tool or the customer gave")
        )
    return failures


def _internal(text: str, g: Grounds) -> list[Unproven]:
    # Inside a quoted example the customer is shown what to send ("I'm Ana, [your phone], ..."):
    # the blank is theirs to fill, not the reply's.
    said = " ".join(g.customer)  # what the customer typed may be repeated back, braces and all
    failures = [
        Unproven("placeholder", f"{written!r} is template text that was never filled in")
        for written in facts.placeholders(_QUOTED.sub(" ", text))
        if written not in said
    ]
    failures.extend(
        Unproven("internal", f"{written!r} is addressed to the assistant, not to the customer")
        for written in facts.instructions(text)
    )
    failures.extend(
        Unproven("internal", f"{name!r} is the name of a tool; the customer must not see it")
        for name in dict.fromkeys(_TOOL_NAME.findall(text))
        if name in g.tool_names
    )
    return failures


def _photo_subjects(groups: Sequence[tuple[Sequence[str], str, str]], g: Grounds) -> list[Unproven]:
    failures: list[Unproven] = []
    for urls, caption, before in groups:
        shown = {g.photo_items[k] for k in map(facts.link_key, urls) if k in g.photo_items}
        if not shown:
            continue  # a photo not fetched this turn fails the image rule
        said = caption or (facts.sentences(before)[-1] if before.strip() else "")
        named = _items_named(said, g)
        if named and not named & shown:
            failures.append(
                Unproven(
                    "photo",
                    f"{said.strip()!r} shows photos of {', '.join(sorted(shown))} as "
                    f"{', '.join(sorted(named))}; show each item's own photos",
                )
            )
    return failures
