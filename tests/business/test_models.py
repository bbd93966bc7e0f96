"""The business data models an owner fills in: what each refuses (with a message that says what is
wrong) and what they compute from it (today's hours, prices written so the gate reads them back)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from pydantic import ValidationError

from frontdesk.business import CURRENCIES, BusinessProfile, ItemFields, Price, format_amount
from frontdesk.business.profile import weekly_lines
from frontdesk.verification.money import money_values

HOURS = {"mon": "08:00-12:00, 13:30-18:00", "sat": ["09:00-13:00"], "sun": "closed"}


def profile(**fields: object) -> BusinessProfile:
    return BusinessProfile.model_validate({"name": "Tiệm bánh Hoa Mai", "timezone": "Asia/Ho_Chi_Minh", **fields})


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("timezone", "Asia/Saigon City", "unknown time zone"),
        ("phone", "028 3822 1234", "international phone number"),
        ("phone", "+84 28 3822 1234 ext 5", "international phone number"),
        ("email", "hello at hoamai.vn", "not an e-mail address"),
        ("website", "hoamai.vn", "starting with https://"),
        ("hours", {"mon": "9-18"}, "not a time range"),
        ("hours", {"mon": "18:00-09:00"}, "closes before it opens"),
        ("hours", {"mon": "25:00-26:00"}, "not a time of day"),
        ("hours", {"mon": "08:00-12:00, 11:00-14:00"}, "overlap"),
        ("hours", {"monday": "08:00-12:00"}, "unknown weekday monday"),
        ("exceptions", [{"date": "2027-02-06"}], "say closed: true, or give its hours"),
        ("exceptions", [{"date": "2027-02-06", "closed": True, "hours": "08:00-10:00"}], "not both"),
        ("exceptions", [{"date": "2027-02-06", "closed": True}, {"date": "2027-02-06", "closed": True}], "twice"),
    ],
)
def test_a_profile_refuses_what_a_customer_could_not_use_and_says_why(field, value, problem):
    with pytest.raises(ValidationError, match=problem):
        profile(**{field: value})


def test_a_profile_keeps_phones_in_e164_and_fills_every_weekday():
    found = profile(phone="+84 (28) 3822-1234", email="Hello@HoaMai.vn", hours=HOURS)

    assert found.phone == "+842838221234"
    assert found.email == "hello@hoamai.vn"
    assert found.hours["mon"] == ["08:00-12:00", "13:30-18:00"]
    assert found.hours["tue"] == found.hours["sun"] == []
    # One line per run of days with the same hours (a small model summing up seven lines erred).
    assert weekly_lines(found) == [
        "Monday: 08:00-12:00, 13:30-18:00",
        "Tuesday to Friday: closed",
        "Saturday: 09:00-13:00",
        "Sunday: closed",
    ]


def test_a_holiday_or_special_hours_override_the_week_in_the_business_time_zone():
    found = profile(
        hours={"mon": "08:00-18:00", "fri": "08:00-18:00"},
        exceptions=[
            {"date": "2027-02-08", "closed": True, "note": {"vi": "Nghỉ Tết"}},  # a Monday
            {"date": "2027-02-12", "hours": "10:00-12:00"},  # a Friday
        ],
    )

    assert found.hours_on(date(2027, 2, 1)) == (["08:00-18:00"], None)
    assert found.hours_on(date(2027, 2, 8))[0] == []
    assert found.hours_on(date(2027, 2, 12))[0] == ["10:00-12:00"]
    # 02:30 UTC is 09:30 in Ho Chi Minh City: open on an ordinary Monday, closed on the holiday.
    assert found.open_at(datetime(2027, 2, 1, 2, 30, tzinfo=UTC))
    assert not found.open_at(datetime(2027, 2, 8, 2, 30, tzinfo=UTC))
    assert not found.open_at(datetime(2027, 2, 12, 2, 30, tzinfo=UTC))  # special hours start at 10:00
    assert [d.date for d in found.upcoming_exceptions(date(2027, 2, 10))] == [date(2027, 2, 12)]


AMOUNTS = ["0", "5", "45", "12.50", "1200", "250000", "1234567"]


@pytest.mark.parametrize(
    ("currency", "amount"),
    [(c, a) for c in sorted(CURRENCIES) for a in AMOUNTS if CURRENCIES[c].decimals or "." not in a],
)
def test_every_price_is_written_so_the_gate_reads_back_the_same_amount_and_currency(currency, amount):
    value = Decimal(amount)
    price = Price.model_validate(
        {"currency": currency, "unit": {"en": "cakes"}, "tiers": [{"quantity": 10, "amount": amount}]}
    )

    (text,) = price.texts("en", "en")
    found = money_values(text)

    assert text.startswith(format_amount(value, currency))
    assert [(m.value, m.currency) for m in found] == [(value, currency)], text


def test_prices_in_dong_read_as_the_customer_writes_them():
    price = Price.model_validate({"currency": "vnd", "unit": {"vi": "cái", "en": "cake"}, "amount": 250000})

    assert price.texts("vi", "vi") == ["250.000 ₫ / cái"]
    assert price.texts("en", "vi") == ["250.000 ₫ / cake"]
    assert price.texts("fr", "vi") == ["250.000 ₫ / cái"]


@pytest.mark.parametrize(
    ("price", "problem"),
    [
        ({"currency": "JPY", "amount": 500}, "not one the price check reads"),
        ({"currency": "VND", "amount": "25000.5"}, "at most 0 decimals"),
        ({"currency": "USD", "amount": "4.999"}, "at most 2 decimals"),
        ({"currency": "USD", "amount": -1}, "greater than or equal to 0"),
        ({"currency": "USD", "tiers": []}, "at least 1 item"),
        ({"currency": "USD", "amount": 5, "tiers": [{"amount": 5}]}, "not both"),
        ({"currency": "USD", "tiers": [{"quantity": 10, "amount": 5}, {"quantity": 10, "amount": 4}]}, "same thing"),
    ],
)
def test_a_price_that_could_not_be_proven_is_refused(price, problem):
    with pytest.raises(ValidationError, match=problem):
        Price.model_validate(price)


def test_an_item_needs_a_slug_id_and_a_name_in_the_default_language():
    with pytest.raises(ValidationError, match="should match pattern"):
        ItemFields.model_validate({"id": "Bánh mì", "name": {"vi": "Bánh mì"}, "price": "on_request"})
    item = ItemFields.model_validate({"id": "banh-mi", "name": {"en": "Banh mi"}, "price": "on_request"})

    assert item.language_problems(["vi", "en"], "vi") == ["name: no name in vi, the business's default language"]
    spanish = ItemFields.model_validate(
        {"id": "banh-mi", "name": {"vi": "Bánh mì", "es": "Pan"}, "price": "on_request"}
    )
    assert spanish.language_problems(["vi", "en"], "vi") == [
        "name: written in es, which this business does not speak (vi, en)"
    ]


def test_the_id_of_the_consoles_new_item_page_is_no_item_id():
    with pytest.raises(ValidationError, match="'new' is reserved"):
        ItemFields.model_validate({"id": "new", "name": {"en": "New arrivals"}, "price": "on_request"})


@pytest.mark.parametrize(
    ("stored", "language", "spoken"),
    [
        ("09:00-18:00", "en", "9 AM to 6 PM"),
        ("12:00-13:30", "en", "12 PM to 1:30 PM"),
        ("00:00-24:00", "en", "12 AM to 12 AM"),
        ("09:00-18:00", "es", "09:00-18:00"),  # a 24-hour clock, as Spanish and Vietnamese write it
        ("09:00-18:00", "vi", "09:00-18:00"),
    ],
)
def test_hours_are_given_to_the_model_as_the_customer_language_writes_them(stored, language, spoken):
    from frontdesk.business.profile import spoken_range
    from frontdesk.verification.facts import times

    assert spoken_range(stored, language) == spoken
    # The gate reads the spoken form as times the stored one allows (it reads 09:00 as 9 AM or 9 PM).
    spoken_times = [t.minutes for t in times(spoken)]
    assert len(spoken_times) == 2
    assert all(m & {n for t in times(stored) for n in t.minutes} for m in spoken_times)
