"""A conversation written as a scenario file: the customer's details masked the same way
everywhere, the checks taken from the operator's correction, and the file one that
``frontdesk eval`` reads."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import yaml

from frontdesk.evals.scenario import Scenario
from frontdesk.humans.console.masking import Masker
from frontdesk.humans.console.scenario_file import (
    Correction,
    NothingToCheck,
    Provenance,
    RecordedTurn,
    Tenancy,
    build,
    differences,
)

AT = datetime(2026, 12, 7, 9, 30, tzinfo=UTC)
PROVENANCE = Provenance("Owner", AT, "c1")


def test_a_phone_written_two_ways_gets_one_stand_in_and_the_business_number_stays():
    masker = Masker(["I'm Ana, 0903 123 456, ana.le@mail.vn"])
    assert masker.text("call 0903 123 456") == "call +1 202 555 0100"
    # The same number as a tool stored it: with the country code, without spaces.
    assert masker.text('{"phone": "+84903123456"}') == '{"phone": "+1 202 555 0100"}'
    assert masker.text("mail ANA.LE@mail.vn") == "mail customer1@example.com"
    # The shop's own number is not the customer's: it stays, so a reply giving it is still proven.
    assert masker.text("our phone is +1 212 555 0199") == "our phone is +1 212 555 0199"
    assert masker.value({"args": ["0903-123-456"], "n": 3}) == {"args": ["+1 202 555 0100"], "n": 3}


@pytest.mark.parametrize("written", ["+84 903.123.456", "(+84) 903.123.456", "0903 - 123 - 456", "0903/123/456"])
def test_a_known_number_is_masked_however_it_is_written(written):
    # Written like an amount or a date, it is not read as a phone number; it is still the customer's.
    assert Masker(["my number: +84903123456"]).text(f"at {written}.") == "at +1 202 555 0100."


def test_quantities_dates_and_references_are_not_masked():
    masker = Masker(["I need 1000000 stickers by 2026-12-07 10:30, order ORD-2026-0042, 0903 123 456"])
    assert masker.text("1000000 stickers, 1.000.000 VND, 2026-12-07 10:30, ORD-2026-0042") == (
        "1000000 stickers, 1.000.000 VND, 2026-12-07 10:30, ORD-2026-0042"
    )


def test_two_customers_numbers_get_different_stand_ins():
    masker = Masker(["0903 123 456", "and my wife's: 0912 987 654"])
    assert masker.text("0912 987 654 / 0903 123 456") == "+1 202 555 0101 / +1 202 555 0100"


@pytest.mark.parametrize(
    ("sent", "corrected", "must_not", "must"),
    [
        ("Business cards are $30 for 100.", "Business cards are $25 for 100.", ["$30"], ["$25"]),
        ("We close at 5pm. See you!", "We close at 6pm on weekdays. See you!", ["5pm"], ["6pm on weekdays"]),
        ("Sure, done! Call us anytime.", "Sure, done!", ["Call us anytime"], []),
        # A rewrite that keeps a word or two of the old sentence is one change, not several.
        (
            "Cards: $45. If you are on a budget, skip cards and order stickers.",
            "Cards: $45. Shall I save a request for cards?",
            ["If you are on a budget, skip cards and order stickers"],
            ["Shall I save a request for cards"],
        ),
        # A paragraph is a block of the reply: no check spans two (the eval reads them a line apart).
        ("Hello!\n\nWe deliver today.\n\nFree shipping too.", "Hello!", ["We deliver today", "Free shipping too"], []),
        (
            "The price is 100k.",
            "The price is 120k.\n\nDelivery takes 2 days.",
            ["100k"],
            ["120k", "Delivery takes 2 days"],
        ),
        # A short word alone would match anywhere: it keeps its neighbours.
        ("Sorry, we do not deliver.", "Sorry, we do deliver.", ["do not deliver"], []),
        # Case and edge punctuation are not a correction.
        ("Hello there.", "hello there!", [], []),
    ],
)
def test_the_checks_are_what_the_correction_took_out_and_put_in(sent, corrected, must_not, must):
    assert differences(sent, corrected) == (must_not, must)


def _turn(trace_id, said, calls=(), blocks=None, claims=(), outcome="replied", refused=()):
    return RecordedTurn(
        trace_id=trace_id,
        started_at=AT,
        said=list(said),
        calls=list(calls),
        refused=list(refused),
        blocks=blocks or [{"type": "text", "text": "ok"}],
        claims=list(claims),
        outcome=outcome,
    )


TENANCY = Tenancy(
    pack="catalog",
    channel="telegram",
    languages=["en"],
    policy={"tone": "Warm."},
    business={"version": 1, "items": [{"id": "cards", "name": {"en": "Cards"}, "price": "$25"}]},
)


def test_the_file_replays_every_turn_and_checks_the_flagged_one():
    turns = [
        _turn(
            7,
            ["hi, I'm Ana", "0903 123 456"],
            refused=[{"reply_text": "Hi Ana, we're open 24/7!", "claims": []}],
            blocks=[{"type": "text", "text": "Hi Ana!"}, {"type": "image_group", "urls": ["https://x.test/a.jpg"]}],
        ),
        _turn(
            9,
            ["how much are cards?"],
            calls=[{"name": "get_service_detail", "args": '{"service_id": "cards"}', "ok": True, "result": "$25"}],
            blocks=[{"type": "text", "text": "Cards are $25. I'll text you on 0903 123 456."}],
            claims=[{"type": "service_presented", "service_id": "cards"}, {"type": "images_shown", "urls": []}],
        ),
    ]
    saved = build(
        turns,
        TENANCY,
        Correction("Don't promise texts: 0903 123 456 asked for a call.", "Cards are $25. Shall I save a request?"),
        Masker(["hi, I'm Ana", "0903 123 456"]),
        PROVENANCE,
    )
    data = yaml.safe_load(saved.content)
    scenario = Scenario.model_validate(data)  # a file `frontdesk eval` reads

    assert "0903" not in saved.content
    assert "903123456" not in saved.content
    assert [t.say for t in scenario.turns] == [["hi, I'm Ana", "+1 202 555 0100"], ["how much are cards?"]]
    assert scenario.turns[-1].expect.reply_not_contains == ["I'll text you on +1 202 555 0100"]
    assert scenario.turns[-1].expect.reply_contains == ["Shall I save a request"]
    assert scenario.turns[0].expect.reply_contains == []  # earlier turns replay, they are not judged
    assert scenario.channel == "webchat"
    assert scenario.at == AT
    assert scenario.business == TENANCY.business
    flagged, earlier = data["model"]["script"]["rules"]
    # The flagged turn first: its own rule wins even if an earlier turn said the same words.
    assert flagged["match"] == r"\Ahow\ much\ are\ cards\?\Z"
    assert flagged["responses"] == [
        {"tool": "get_service_detail", "args": {"service_id": "cards"}},
        {
            "reply": {
                "blocks": [{"type": "text", "text": "Cards are $25. Shall I save a request?"}],
                "claims": [{"type": "service_presented", "service_id": "cards"}],  # no photos in the file
            }
        },
    ]
    # An earlier turn goes as it went: the refused reply, then the one that shipped (photos aside).
    assert earlier["responses"] == [
        {"reply": {"blocks": [{"type": "text", "text": "Hi Ana, we're open 24/7!"}], "claims": []}},
        {"reply": {"blocks": [{"type": "text", "text": "Hi Ana!"}], "claims": []}},
    ]
    assert "# The conversation was on telegram" in saved.content
    assert "# Photos are not in this file" in saved.content
    assert "#     -> $25" in saved.content  # what the tool returned in production, for the reader
    assert saved.note == "Don't promise texts: +1 202 555 0100 asked for a call."


def test_a_comment_cannot_spill_into_the_file_and_the_replayed_reply_is_the_one_sent():
    turns = [
        _turn(
            4,
            ["save me: 0903 123 456"],
            calls=[
                {
                    "name": "capture_lead",
                    "args": "{}",
                    "ok": False,
                    "error": "invalid:\n  phone='0903 123 456'\u2028name: x",
                }
            ],
            blocks=[{"type": "text", "text": "Saved!"}, {"type": "text", "text": "We never call back."}],
        )
    ]
    saved = build(
        turns, TENANCY, Correction("call back", "Saved!\n\nWe will call you."), Masker(["0903 123 456"]), PROVENANCE
    )
    data = yaml.safe_load(saved.content)
    assert set(data) == {
        "name",
        "description",
        "tags",
        "at",
        "pack",
        "channel",
        "languages",
        "policy",
        "turns",
        "model",
        "business",
    }
    assert "0903" not in saved.content
    assert data["turns"][0]["expect"] == {
        "reply_contains": ["will call you"],
        "reply_not_contains": ["never call back"],
    }
    replayed = yaml.safe_load(saved.replayed)["model"]["script"]["rules"][0]["responses"][-1]
    assert replayed["reply"]["blocks"] == [
        {"type": "text", "text": "Saved!"},
        {"type": "text", "text": "We never call back."},
    ]


def test_turns_before_a_hand_off_are_not_replayed():
    handoff = {"name": "refer_to_human", "args": "{}", "ok": True}
    turns = [_turn(1, ["hi"]), _turn(2, ["a person please"], calls=[handoff]), _turn(3, ["so?"]), _turn(4, ["price?"])]
    saved = build(turns, TENANCY, Correction("n", "something else"), Masker([]), PROVENANCE)
    assert [t["say"] for t in yaml.safe_load(saved.content)["turns"]] == [["so?"], ["price?"]]


def test_a_correction_that_changes_nothing_is_refused():
    turns = [_turn(3, ["hello"], blocks=[{"type": "text", "text": "Hello! How can I help?"}])]
    with pytest.raises(NothingToCheck):
        build(
            turns,
            TENANCY,
            Correction("too short", "hello, how can I help"),
            Masker([]),
            PROVENANCE,
        )
