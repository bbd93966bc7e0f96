"""The print shop's answers in plain words, written by its tools from their own results.

A tool result may carry an answer (``ToolResult.answer``): the customer-facing sentence its data
makes, in the customer's language. It goes out when the model's replies about that result were
refused twice, instead of the hold message: the 1.5B model read the right prices for 500
postcards and still multiplied them wrongly, twice, and answered Vietnamese customers in English,
twice; the customer then heard "a person will get back to you" about a price the shop had just
looked up. Only the languages written here get an answer (None otherwise: the hold message).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from frontdesk.business.profile import WEEKDAY_NAMES, WEEKDAYS


@dataclass(frozen=True)
class DayWords:
    """How a language names the days of the week (Monday first) and a closed day."""

    weekdays: tuple[str, ...]  # seven, Monday first
    closed: str
    today: str
    tomorrow: str


# English is also what the model reads in the tool's output.
ENGLISH_DAYS = DayWords(
    tuple(WEEKDAY_NAMES[day] for day in WEEKDAYS),
    "closed",
    "today",
    "tomorrow",
)
DAY_WORDS = {
    "en": ENGLISH_DAYS,
    "es": DayWords(
        ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"), "cerrado", "hoy", "mañana"
    ),
    "vi": DayWords(
        ("Thứ hai", "Thứ ba", "Thứ tư", "Thứ năm", "Thứ sáu", "Thứ bảy", "Chủ nhật"), "nghỉ", "hôm nay", "ngày mai"
    ),
}

_HOURS = {"en": "Our hours: {days}.", "es": "Nuestro horario: {days}.", "vi": "Giờ mở cửa của shop: {days}."}
_PRICES = {"en": "Prices for {name}: {prices}.", "es": "Precios de {name}: {prices}.", "vi": "Giá {name}: {prices}."}
_READY = {"en": "Ready in {days} days.", "es": "Listo en {days} días.", "vi": "Thời gian làm: {days} ngày."}
_MINIMUM = {"en": "Minimum order: {quantity}.", "es": "Pedido mínimo: {quantity}.", "vi": "Đặt tối thiểu: {quantity}."}
_LISTING = {"en": "We print: {names}.", "es": "Imprimimos: {names}.", "vi": "Shop nhận in: {names}."}


def hours_answer(days: Sequence[tuple[str, str]], language: str) -> str | None:
    """``days``: (the day as ``language`` names it, its hours or closed word), as the tool listed them."""
    template = _HOURS.get(language)
    if template is None or not days:
        return None
    return template.format(days="; ".join(f"{day}: {hours}" for day, hours in days))


def detail_answer(
    name: str, prices: Sequence[str], turnaround_days: int | None, minimum: int | None, language: str
) -> str | None:
    """An item's prices, turnaround and minimum order: what a question about one item asks."""
    template = _PRICES.get(language)
    if template is None or not prices:
        return None  # a price quoted on request is the team's to give
    sentences = [template.format(name=name, prices=", ".join(prices))]
    if turnaround_days:
        sentences.append(_READY[language].format(days=turnaround_days))
    if minimum and minimum > 1:
        sentences.append(_MINIMUM[language].format(quantity=minimum))
    return " ".join(sentences)


def listing_answer(names: Sequence[str], language: str) -> str | None:
    template = _LISTING.get(language)
    if template is None or not names:
        return None  # nothing found is not "we don't print that": the search may have missed it
    return template.format(names=", ".join(names))
