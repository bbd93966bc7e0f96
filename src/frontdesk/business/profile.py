"""A business's profile: who it is, where, how to reach it, and when it is open.

Everything here is the owner's data (edited in the console, imported from a file or set from the
command line), validated once at that edge: an IANA time zone, ``HH:MM`` times, an E.164 phone
number, an e-mail address, an http(s) website. Tools read it; nothing here is code's opinion.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time
from itertools import pairwise
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from frontdesk.business.text import LongText, MessageText, ShortText, language_problems

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
WEEKDAY_NAMES = {
    "mon": "Monday",
    "tue": "Tuesday",
    "wed": "Wednesday",
    "thu": "Thursday",
    "fri": "Friday",
    "sat": "Saturday",
    "sun": "Sunday",
}
_RANGE = re.compile(r"(\d{1,2}):(\d{2})\s*[-\u2013]\s*(\d{1,2}):(\d{2})")
_PHONE_JUNK = re.compile(r"[\s().\-\u00a0]")
_E164 = re.compile(r"\+[1-9]\d{6,14}")
# An e-mail address, loosely: the one shape every e-mail field of frontdesk accepts.
EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]+\.[^@\s]{2,}")
_WEBSITE = re.compile(r"https?://[^\s/?#]+\.[^\s/?#]+(?:[/?#]\S*)?", re.IGNORECASE)


def _time_range(value: str) -> str:
    """``"9:00-18:00"`` as ``"09:00-18:00"``; the close is after the open (``24:00`` ends the day)."""
    match = _RANGE.fullmatch(value.strip())
    if not match:
        raise ValueError(f"{value!r} is not a time range like 09:00-18:00")
    oh, om, ch, cm = (int(g) for g in match.groups())
    if oh > 23 or om > 59 or ch > 24 or cm > 59 or (ch == 24 and cm):
        raise ValueError(f"{value!r} is not a time of day (00:00 to 24:00)")
    if (ch, cm) <= (oh, om):
        raise ValueError(f"{value!r} closes before it opens (a night past midnight is two ranges)")
    return f"{oh:02d}:{om:02d}-{ch:02d}:{cm:02d}"


def _ranges(value: Any) -> Any:
    """A day's hours as written: a list of ranges, ``"09:00-12:00, 13:00-18:00"``, or ``closed``."""
    if value is None:
        return []
    if isinstance(value, str):
        if value.strip().lower() in ("", "closed"):
            return []
        return [part for part in value.split(",") if part.strip()]
    return value


def _no_overlap(ranges: list[str]) -> list[str]:
    ordered = sorted(ranges)
    for earlier, later in pairwise(ordered):
        if later[:5] < earlier[6:]:
            raise ValueError(f"{earlier} and {later} overlap")
    return ordered


TimeRange = Annotated[str, AfterValidator(_time_range)]
DayHours = Annotated[list[TimeRange], BeforeValidator(_ranges), Field(max_length=6), AfterValidator(_no_overlap)]


def e164(value: str) -> str:
    """A phone number as written by a person (``+1 555 0100 123``) in E.164 form (``+15550100123``)."""
    compact = _PHONE_JUNK.sub("", value)
    if not _E164.fullmatch(compact):
        raise ValueError(
            f"{value!r} is not an international phone number: + country code and number, e.g. +84 28 3822 1234"
        )
    return compact


def _email(value: str) -> str:
    if not EMAIL.fullmatch(value.strip()):
        raise ValueError(f"{value!r} is not an e-mail address")
    return value.strip().lower()


def _website(value: str) -> str:
    if not _WEBSITE.fullmatch(value.strip()):
        raise ValueError(f"{value!r} is not a website address starting with https:// or http://")
    return value.strip()


def _zone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {value!r} (an IANA name such as Asia/Ho_Chi_Minh)") from exc
    return value


def _empty_is_none(value: Any) -> Any:
    return None if isinstance(value, str) and not value.strip() else value


Phone = Annotated[Annotated[str, Field(max_length=40), AfterValidator(e164)] | None, BeforeValidator(_empty_is_none)]
Email = Annotated[Annotated[str, Field(max_length=254), AfterValidator(_email)] | None, BeforeValidator(_empty_is_none)]
Website = Annotated[
    Annotated[str, Field(max_length=500), AfterValidator(_website)] | None, BeforeValidator(_empty_is_none)
]
TimeZone = Annotated[str, AfterValidator(_zone)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


class SpecialDay(_Frozen):
    """A dated exception to the weekly hours: a holiday (``closed``) or special hours."""

    date: date
    closed: bool = False
    hours: DayHours = Field(default_factory=list)
    note: ShortText = Field(default_factory=dict)

    @model_validator(mode="after")
    def _closed_or_hours(self) -> SpecialDay:
        if self.closed and self.hours:
            raise ValueError(f"{self.date}: either closed or special hours, not both")
        if not self.closed and not self.hours:
            raise ValueError(f"{self.date}: say closed: true, or give its hours")
        return self


class BusinessProfile(_Frozen):
    name: str = Field(min_length=1, max_length=200)
    description: LongText = Field(default_factory=dict)
    address: str = Field(default="", max_length=300)
    phone: Phone = None
    email: Email = None
    website: Website = None
    timezone: TimeZone = "UTC"
    # Weekly hours: a weekday with no ranges (or left out) is closed.
    hours: dict[str, DayHours] = Field(default_factory=dict, validate_default=True)
    exceptions: list[SpecialDay] = Field(default_factory=list, max_length=400)
    # Anything else a customer asks the counter: parking, pick-up, delivery.
    notes: LongText = Field(default_factory=dict)
    # What a customer is told when no answer could be proven and a person will reply instead
    # (empty: the pack's own words). It opens a "needs a reply" task, so it may promise that.
    hold_message: MessageText = Field(default_factory=dict)

    @field_validator("hours")
    @classmethod
    def _weekdays(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        unknown = sorted(set(value) - set(WEEKDAYS))
        if unknown:
            raise ValueError(f"unknown weekday {', '.join(unknown)} (use {', '.join(WEEKDAYS)})")
        return {day: value.get(day, []) for day in WEEKDAYS}

    @field_validator("exceptions")
    @classmethod
    def _one_per_date(cls, value: list[SpecialDay]) -> list[SpecialDay]:
        seen: set[date] = set()
        for day in value:
            if day.date in seen:
                raise ValueError(f"{day.date} is listed twice")
            seen.add(day.date)
        return sorted(value, key=lambda d: d.date)

    def language_problems(self, languages: list[str]) -> list[str]:
        problems = language_problems("description", self.description, languages)
        problems += language_problems("notes", self.notes, languages)
        problems += language_problems("hold_message", self.hold_message, languages)
        for day in self.exceptions:
            problems += language_problems(f"exceptions {day.date} note", day.note, languages)
        return problems

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def hours_on(self, day: date) -> tuple[list[str], SpecialDay | None]:
        """The ranges the business is open on ``day`` (empty: closed), and the exception that set them."""
        for special in self.exceptions:
            if special.date == day:
                return list(special.hours), special
        return list(self.hours.get(WEEKDAYS[day.weekday()], [])), None

    def open_at(self, moment: datetime) -> bool:
        local = moment.astimezone(self.zone)
        ranges, _ = self.hours_on(local.date())
        now = local.time()
        return any(_parse(r[:5]) <= now < _parse_close(r[6:]) for r in ranges)

    def upcoming_exceptions(self, today: date, days: int = 60) -> list[SpecialDay]:
        return [d for d in self.exceptions if 0 <= (d.date - today).days <= days]


def _parse(text: str) -> time:
    return time(int(text[:2]), int(text[3:]))


def _parse_close(text: str) -> time:
    return time.max if text == "24:00" else _parse(text)


def weekly_lines(profile: BusinessProfile, language: str = "") -> list[str]:
    """The weekly hours in English (the tool output the model reads), one line per run of days
    with the same hours ("Monday to Friday: …"), each range as ``language`` writes it
    (``spoken_range``). Grouped here, not by the model: a 1.5B model summing up seven lines wrote
    "Monday through Saturday from 9 AM to 6 PM" for a shop that closes at 2 on Saturdays."""
    runs: list[tuple[list[str], str]] = []
    for day in WEEKDAYS:
        hours = ", ".join(spoken_range(r, language) for r in profile.hours.get(day, [])) or "closed"
        if runs and runs[-1][1] == hours:
            runs[-1][0].append(day)
        else:
            runs.append(([day], hours))
    lines = []
    for days, hours in runs:
        named = WEEKDAY_NAMES[days[0]] if len(days) == 1 else f"{WEEKDAY_NAMES[days[0]]} to {WEEKDAY_NAMES[days[-1]]}"
        lines.append(f"{named}: {hours}")
    return lines


def spoken_range(text: str, language: str) -> str:
    """An ``HH:MM-HH:MM`` range as a customer writing ``language`` reads it: "9 AM to 6 PM" in
    English, as stored elsewhere (24-hour clocks). A 1.5B model asked in English converted 18:00
    itself, to "5 PM"; given the 12-hour form it copies it."""
    if language != "en" or len(text) != 11:
        return text
    return f"{_twelve_hour(text[:5])} to {_twelve_hour(text[6:])}"


def _twelve_hour(text: str) -> str:
    hour, minute = int(text[:2]) % 24, int(text[3:])
    shown = f"{hour % 12 or 12}" + (f":{minute:02d}" if minute else "")
    return f"{shown} {'AM' if hour < 12 else 'PM'}"
