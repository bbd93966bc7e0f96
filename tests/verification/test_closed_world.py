"""The closed world: the lies issue 19 saw reach customers are refused, each with an honest twin
that ships. Evidence is shaped as the catalog tools return it (a print shop in New York)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from frontdesk.capabilities.tools import ToolEvidence, ToolResult
from frontdesk.context.ledgers import WorkingState
from frontdesk.verification import ImageGroup, ReplyContent, verify
from frontdesk.verification.numbers import with_digits

NOW = datetime(2026, 12, 1, 15, 30, tzinfo=UTC)  # Tuesday 10:30 in New York
ZONE = "America/New_York"
WEEKLY = {d: ("09:00-18:00",) for d in ("mon", "tue", "wed", "thu", "fri")} | {"sat": ("10:00-14:00",), "sun": ()}
INFO = ToolResult(
    {
        "address": "1240 Maple Avenue, Suite B, Springfield, NJ 07081",
        "phone": "+15550100123",
        "website": "https://demo-print.example",
        "weekly_hours": ["Monday: 09:00-18:00", "Saturday: 10:00-14:00", "Sunday: closed"],
        "notes": "Orders can be picked up at the shop with free parking out front, or delivered locally for a fee.",
    },
    ToolEvidence(facts=frozenset({"business_info"}), contacts=("+15550100123",), schedule=WEEKLY),
)
CARDS = ToolResult(
    {"id": "business-cards", "name": "Business cards", "price": "$45 / 250 cards, $70 / 500 cards"},
    ToolEvidence(
        frozenset({"business-cards"}),
        prices=("$45 / 250 cards", "$70 / 500 cards"),
        prices_by_reference={"business-cards": ("$45 / 250 cards", "$70 / 500 cards")},
        turnaround_days={"business-cards": 3},
    ),
)
FLYERS = ToolResult(
    {
        "id": "flyers",
        "price": "$85 / 500 letter-size flyers, $120 / 1000 letter-size flyers",
        "min_order_quantity": 500,
    },
    ToolEvidence(
        frozenset({"flyers"}),
        prices=("$85 / 500 letter-size flyers", "$120 / 1000 letter-size flyers"),
        prices_by_reference={"flyers": ("$85 / 500 letter-size flyers", "$120 / 1000 letter-size flyers")},
        turnaround_days={"flyers": 2},
        minimums={"flyers": 500},
    ),
)
FLYER_PHOTO = "https://shop.example/media/catalog/demo/flyers-1-0a1b2c3d.png"
FLYER_PHOTOS = ToolResult(
    {"service_id": "flyers", "photos": [{"id": "flyers-1", "url": FLYER_PHOTO}]},
    ToolEvidence(frozenset({"flyers"}), photos={"flyers-1": FLYER_PHOTO}),
)
BAKERY = ToolResult(
    {"id": "banh-kem", "price": "250.000 ₫ / cái"},
    ToolEvidence(frozenset({"banh-kem"}), prices=("250.000 ₫ / cái",), turnaround_days={"banh-kem": 1}),
)
LEAD = ToolResult({"follow_up_id": "fu-1", "status": "saved"}, ToolEvidence(events=(("lead_captured", "fu-1"),)))
ITEMS = {
    "business-cards": ["business cards", "business card", "soft-touch business card"],
    "flyers": ["flyers", "flyer"],
}


def state(*results: ToolResult, policy: tuple[str, ...] = (), customer: tuple[str, ...] = ()) -> WorkingState:
    current = WorkingState(now=NOW, timezone=ZONE, item_words=ITEMS, policy_texts=policy, customer_contacts=customer)
    current.tool_names = frozenset({"get_business_info", "search_services", "capture_lead"})
    for result in results:
        current.record("tool", result)
    return current


def refused(text: str, current: WorkingState, groups: tuple[ImageGroup, ...] = ()) -> list[str]:
    urls = tuple(u for g in groups for u in g.urls)
    return [f.rule for f in verify(ReplyContent(text, urls, groups), [], current).failures]


@pytest.mark.parametrize(
    ("lie", "honest"),
    [
        ("That's twenty-five dollars for 250 cards.", "That's forty-five dollars for 250 cards."),
        ("Business cards are $70 for 250.", "Business cards are $70 for 500."),
        ("It's $1 200 for a big run.", "It's $45 for 250 cards."),
    ],
)
def test_prices_in_words_and_tied_to_a_quantity_must_be_fetched(lie, honest):
    assert "price" in refused(lie, state(CARDS))
    assert refused(honest, state(CARDS)) == []


BANNERS = ToolResult(
    {"id": "banners", "price": "$1,200 / 100 banners"},
    ToolEvidence(
        frozenset({"banners"}),
        prices=("$1,200 / 100 banners",),
        prices_by_reference={"banners": ("$1,200 / 100 banners",)},
    ),
)


@pytest.mark.parametrize("written", ["$1 200 for 100 banners.", "1 200 $ for 100 banners.", "$1,200.00 for 100."])
def test_thousands_grouped_with_a_plain_space_beside_a_currency_are_one_amount(written):
    assert refused(written, state(BANNERS)) == []
    assert "price" in refused(written.replace("200", "300"), state(BANNERS))


@pytest.mark.parametrize(
    ("lie", "honest"),
    [
        ("Bánh kem giá 450 nghìn đồng ạ.", "Bánh kem giá 250 nghìn đồng ạ."),
        ("Bánh kem giá 1,2 triệu đồng ạ.", "Bánh kem 250k một cái ạ."),
        ("Dạ bánh kem ba trăm nghìn ạ.", "Dạ bánh kem hai trăm rưỡi ạ."),
    ],
)
def test_vietnamese_spoken_amounts_are_read(lie, honest):
    assert "price" in refused(lie, state(BAKERY))
    assert refused(honest, state(BAKERY)) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("450 nghìn đồng", "450000 ₫"),
        ("1,2 triệu", "1200000 ₫"),
        ("hai trăm rưỡi", "250000 ₫"),
        ("1 nghìn tờ", "1000 tờ"),
    ],
)
def test_vietnamese_amounts_become_digits_and_counted_things_stay_quantities(text, value):
    assert with_digits(text) == value


@pytest.mark.parametrize(
    ("lie", "rule"),
    [
        ("We're open until 8 tonight!", "time"),
        ("Yes, we're open on Sunday.", "hours"),
        ("We are not open on Saturday.", "hours"),  # Saturday is 10:00-14:00
        ("Lo siento, no estamos abiertos el sábado.", "hours"),
        ("We're at 88 Oak Street, see you soon.", "address"),
        ("Find us at 1240 Maple Avenue, Suite C.", "address"),
    ],
)
def test_invented_hours_and_addresses_are_refused(lie, rule):
    assert rule in refused(lie, state(INFO))


@pytest.mark.parametrize(
    "honest",
    [
        "We're open till 6 on weekdays and closed Sundays.",
        "Saturday we open 10 am to 2 pm.",
        "We're open right now, until 6 pm.",
        "We're at 1240 Maple Avenue, Suite B, Springfield.",
        "There's free parking out front.",
        "See https://demo-print.example for more.",
    ],
)
def test_what_the_business_info_says_may_be_repeated(honest):
    assert refused(honest, state(INFO)) == []


def test_hours_and_addresses_without_the_business_info_are_refused():
    assert refused("We're open 9 to 5 and you'll find us at 88 Oak Street.", state(CARDS)) == [
        "time",
        "time",
        "address",
    ]


@pytest.mark.parametrize(
    "lie",
    ["Good news: 20% off this week, and free delivery!", "Hoy tenemos un descuento especial.", "Giảm giá 10% hôm nay!"],
)
def test_discounts_and_free_things_need_the_business_to_state_them(lie):
    assert refused(lie, state(CARDS, INFO))
    assert refused("10% off orders over $200 this month.", state(CARDS, policy=("10% off orders over $200",))) == []


@pytest.mark.parametrize(
    ("lie", "honest"),
    [
        ("They'll be ready tomorrow.", "They'll be ready by Friday."),
        ("Business cards take 1 day.", "Business cards take 3 days."),
    ],
)
def test_a_ready_date_must_allow_the_fetched_turnaround(lie, honest):
    assert refused(lie, state(CARDS))
    assert refused(honest, state(CARDS)) == []


def test_a_date_the_customer_gave_may_be_repeated():
    assert refused("Noted, you need them ready tomorrow.", state(CARDS, customer=("I need them tomorrow",))) == []


def test_a_minimum_must_be_the_fetched_one():
    assert refused("The minimum order is 100 flyers.", state(FLYERS)) == ["quantity"]
    assert refused("The minimum order is 500 flyers.", state(FLYERS)) == []


def test_a_photo_is_shown_as_the_item_it_was_fetched_for():
    lie = (ImageGroup((FLYER_PHOTO,), "Soft-touch business card"),)
    honest = (ImageGroup((FLYER_PHOTO,), "Our glossy flyers"),)
    before = (ImageGroup((FLYER_PHOTO,), "", "Here are our business cards:"),)

    assert refused("", state(CARDS, FLYER_PHOTOS), lie) == ["photo"]
    assert refused("", state(CARDS, FLYER_PHOTOS), honest) == []
    assert refused("", state(CARDS, FLYER_PHOTOS), before) == ["photo"]


def test_commitments_need_an_action_or_an_open_task():
    lie = "Your order for 500 flyers is confirmed! I've put you down for Thursday and you're all set."
    assert "undeclared confirmed" in refused(lie, state(FLYERS))
    assert "undeclared confirmed" in refused(lie, state(FLYERS, LEAD))  # a saved request confirms no order
    assert "undeclared committed" in refused("The team will call you this afternoon.", state(FLYERS))
    assert refused("I've saved your request and the team will call you.", state(FLYERS, LEAD)) == []


@pytest.mark.parametrize(
    ("lie", "rule"),
    [
        ("Just send an email to [email address] and we'll sort it.", "placeholder"),
        ("Hi {name}, thanks for asking!", "placeholder"),
        ("I called get_business_info for you.", "internal"),
        ("A person from the team now has this conversation. Tell the customer so, politely.", "internal"),
    ],
)
def test_template_text_and_words_for_the_assistant_never_ship(lie, rule):
    assert rule in refused(lie, state(INFO))


def test_a_link_the_tools_never_returned_is_refused():
    assert refused("Order online at demo-print.example/sale", state(INFO)) == ["link"]
    assert refused("Order online at https://demo-print.example", state(INFO)) == []


def test_a_figure_asked_about_is_no_assertion():
    asked = state(FLYERS, customer=("I need 500 flyers",))

    assert refused("Sorry, did you say 500 or 5000 flyers?", asked) == []
    assert refused("Sure, 5000 flyers it is.", asked) == ["figure"]


@pytest.mark.parametrize(
    ("lie", "honest", "customer"),
    [
        # a total from a unit price and the customer's count
        ("10 flyers... no: 3 boxes would be $150.", "3 boxes of 250 cards would be $135.", "3 boxes of 250 cards?"),
        # a sum of the reply's own proven amounts
        ("$45 and $85, so $140 together.", "$45 and $85, so $130 together.", "cards and flyers?"),
        # two said as a word
        ("Both would be $100.", "Both would be $90.", "two boxes of 250 cards"),
    ],
)
def test_a_total_computed_from_proven_prices_ships_and_a_wrong_one_does_not(lie, honest, customer):
    assert "price" in refused(lie, state(CARDS, FLYERS, customer=(customer,)))
    assert refused(honest, state(CARDS, FLYERS, customer=(customer,))) == []


def test_a_percentage_the_owner_wrote_applies_to_the_items_it_names_and_only_in_its_period():
    promo = ("December promotion: 15% off all flyer orders placed before December 20.",)
    flyers = "Flyers are 15% off this month: 500 letter-size flyers are $72.25 instead of $85."
    cards = "Business cards are 15% off too: $38.25 for 250."

    assert refused(flyers, state(FLYERS, CARDS, policy=promo)) == []
    assert "price" in refused(cards, state(FLYERS, CARDS, policy=promo))
    january = state(FLYERS, policy=promo)
    january.now = datetime(2027, 1, 5, 15, 30, tzinfo=UTC)
    assert {"price", "percentage"} <= set(refused(flyers, january))


def test_a_round_figure_after_about_is_near_a_proven_price_and_no_further():
    helmet = ToolResult(
        {"id": "helmet", "price": "€39.95 / helmet"},
        ToolEvidence(
            frozenset({"helmet"}), prices=("€39.95 / helmet",), prices_by_reference={"helmet": ("€39.95 / helmet",)}
        ),
    )
    assert refused("It's just under forty euros, €39.95 to be exact.", state(helmet)) == []
    assert "price" in refused("It's about forty-five euros.", state(helmet))
    assert "price" in refused("It's forty euros.", state(helmet))


@pytest.mark.parametrize(
    ("text", "reading"),
    [
        ("Collect it once it's done.", "Collect it once it's done."),
        ("Cerramos a las once.", "Cerramos a las 11."),
        ("bánh mì que bảy nghìn một que", "bánh mì que 7000 ₫ một que"),
        ("túi 10 que thì sáu chục nghìn", "túi 10 que thì 60000 ₫"),
    ],
)
def test_numbers_in_words_are_read_in_the_words_own_language(text, reading):
    assert with_digits(text) == reading


def test_a_weekday_with_its_day_of_the_month_is_a_date_not_a_stray_figure():
    shop = ToolResult({"weekly_hours": ["Thursday: 09:00-18:00"]}, ToolEvidence(schedule=WEEKLY))
    asked = ("If I drop the card order off on Thursday 3, when is it ready?",)
    assert set(refused("Drop it off today and it's ready on Thursday 3.", state(CARDS, shop))) == {"date"}
    assert refused("Drop it off on Thursday 3 and it's ready on Monday 7.", state(CARDS, shop, customer=asked)) == []


@pytest.mark.parametrize(
    ("lie", "honest", "rule"),
    [
        (
            "We're at 1240 Maple Avenue, Suite B, Springfield, NY 07081.",
            "We're at 1240 Maple Ave, Suite B, Springfield, NJ 07081.",
            "address",
        ),
        ("Deposit: <insert deposit amount from policy>.", "Deposit: ask us in the shop.", "placeholder"),
        ("Ya he pasado tu caso al mecánico.", "Puedo pasar tu caso al mecánico si quieres.", "undeclared handed over"),
        ("Order today and the cards are ready tomorrow.", "Order today and the cards are ready Friday.", "date"),
    ],
)
def test_addresses_template_text_hand_overs_and_start_dates(lie, honest, rule):
    assert rule in refused(lie, state(INFO, CARDS))
    assert refused(honest, state(INFO, CARDS)) == []


def test_an_address_is_judged_whole_its_parts_from_one_address_and_a_street_number_word_is_no_part():
    shop = ToolResult(
        {"address": "12 Lý Tự Trọng, Phường Bến Nghé, Quận 1", "notes": "Giao hàng trong Quận 1 và Quận 3."},
        ToolEvidence(facts=frozenset({"business_info"})),
    )
    assert "address" in refused("Dạ tiệm ở 12 Lý Tự Trọng, Quận 3 ạ.", state(shop))
    assert refused("Dạ tiệm ở số 12 Lý Tự Trọng, Quận 1 ạ.", state(shop)) == []


def test_a_turnaround_in_weeks_and_a_deposit_returned_on_return_are_what_the_business_said():
    build = ToolResult(
        {"id": "custom-bike", "turnaround_days": 21},
        ToolEvidence(frozenset({"custom-bike"}), turnaround_days={"custom-bike": 21}),
    )
    policy = ("Rentals need a deposit per bike, returned when the bike comes back.",)
    assert refused("The build takes about 3 weeks.", state(build)) == []
    assert "figure" in refused("The build takes about 4 weeks.", state(build))
    assert refused("Dejas una fianza que te devolvemos al entregar la bici.", state(build, policy=policy)) == []


SHIRTS = ToolResult(
    {"id": "t-shirts", "min_order_quantity": 12},
    ToolEvidence(frozenset({"t-shirts"}), minimums={"t-shirts": 12, "flyers": 500}),
)


@pytest.mark.parametrize(
    ("lie", "honest"),
    [
        ("Our minimum for custom t-shirts is 6.", "Our minimum for custom t-shirts is 12."),
        ("We can do as few as 6 t-shirts.", "We can do as few as 12 t-shirts."),
        ("6 is our minimum, so 6 t-shirts are fine.", "12 is our minimum, so 6 t-shirts won't do."),
        ("Áo thun in tối thiểu 6 cái ạ.", "Áo thun in tối thiểu 12 cái ạ."),
    ],
)
def test_a_minimum_is_the_smallest_order_fetched_for_the_item_not_the_customers_count(lie, honest):
    asked = ("Can I get 6 t-shirts?",)
    current = state(SHIRTS, customer=asked)
    current.item_words = {**ITEMS, "t-shirts": ["t-shirts", "áo thun"]}
    assert "quantity" in refused(lie, current)
    assert refused(honest, current) == []


def test_a_duration_said_with_an_article_and_a_same_day_promise_meet_the_turnaround():
    assert refused("Business cards take about a week.", state(CARDS)) == []
    assert "turnaround" in refused("Te puedes llevar las tarjetas hoy mismo.", state(CARDS))


def test_something_free_must_be_free_in_the_same_clause_of_the_business_text():
    assert refused("Parking out front is free.", state(INFO)) == []
    assert "offer" in refused("Local delivery is free.", state(INFO))


def test_hours_said_after_an_opening_clause_are_that_days_hours_too():
    saturday = "On Saturday we open 10:00 to 14:00, and in the afternoon {}."
    assert "hours" in refused(saturday.format("from 17:00 to 20:30"), state(INFO))
    assert refused(saturday.format("we are closed"), state(INFO)) == []


def test_a_use_the_catalog_names_is_no_promotion_the_embedded_model_invented():
    # bench/local_model.py: the embedded model's honest postcards answer was held for "promotions"
    postcards = ToolResult(
        {"id": "postcards", "summary": "Thick 4x6 or 5x7 postcards for mailers, thank-you notes and promotions."},
        ToolEvidence(frozenset({"postcards"}), turnaround_days={"postcards": 3}, minimums={"postcards": 250}),
    )
    reply = (
        "We have thick 4x6 or 5x7 postcards for mailers, thank-you notes and promotions. "
        "They are available in 3 days and require a minimum order of 250 cards."
    )
    assert refused(reply, state(postcards)) == []
    assert "offer" in refused("Postcards come with free delivery.", state(postcards))


def test_a_change_said_with_a_count_is_the_count_the_change_recorded():
    updated = ToolResult(
        {"follow_up_id": "fu-1", "status": "open", "quantity": 8, "details": "group of 8"},
        ToolEvidence(events=(("follow_up_updated", "fu-1"),)),
    )
    asked = ("Make it 10 people please",)
    assert "undeclared changed" in refused("I've changed your request to 10 people.", state(updated, customer=asked))
    assert refused("I've changed your request to 8 people.", state(updated, customer=asked)) == []
