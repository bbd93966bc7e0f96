"""LINE inbound parsing: every fixture (real webhook bodies) against a snapshot of the events we make."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from snapshot import fixtures, load_snapshots, read_fixture

from frontdesk.errors import ConfigError, PayloadError
from frontdesk.ingestion.channels.line.inbound import parse_events

FIXTURES = fixtures("line")
ACCOUNT = "line-acct"
BOT = "U3f9c2a7e81b64d05a9e7c1d2b4f6a8c0"
CONFIG = {"destination": BOT}


def fixture(name: str) -> bytes:
    """A webhook body from the channel's fixtures folder, byte for byte as LINE would POST it."""
    return read_fixture("line", name)


def dumped(raw: bytes, config: dict[str, Any] = CONFIG) -> list[dict[str, Any]]:
    return [event.model_dump() for event in parse_events(raw, ACCOUNT, config)]


def variant(name: str, **message_changes: Any) -> dict[str, Any]:
    """The single event of a fixture with some ``message`` fields replaced (``None`` removes one)."""
    event = json.loads(fixture(name))["events"][0]
    for key, value in message_changes.items():
        if value is None:
            event["message"].pop(key, None)
        else:
            event["message"][key] = value
    return event


def body(*events: dict[str, Any]) -> bytes:
    return json.dumps({"destination": BOT, "events": list(events)}).encode()


# -- snapshots: one per fixture, the whole event list

SNAPSHOTS = load_snapshots("line")  # snapshots/line_inbound.json


MALFORMED = {
    "malformed__not_json.txt": True,
    "malformed__no_events.json": False,
    "malformed__events_not_list.json": False,
}


@pytest.mark.parametrize("name", sorted(SNAPSHOTS))
def test_fixture_parses_to_its_snapshot(name: str):
    assert dumped(fixture(name)) == SNAPSHOTS[name]


@pytest.mark.parametrize(("name", "malformed"), sorted(MALFORMED.items()))
def test_malformed_fixture_is_a_payload_error(name: str, malformed: bool):
    with pytest.raises(PayloadError) as caught:
        parse_events(fixture(name), ACCOUNT, CONFIG)

    assert caught.value.malformed is malformed


def test_every_fixture_has_a_snapshot_or_an_expected_error():
    # A fixture with no snapshot, or a snapshot (or malformed entry) with no fixture, fails here.
    on_disk = {entry.name for entry in FIXTURES.iterdir() if entry.is_file()}

    assert not set(SNAPSHOTS) & set(MALFORMED)
    assert on_disk == set(SNAPSHOTS) | set(MALFORMED)


# -- behaviour the snapshots imply, said once in words


def test_redelivery_keeps_the_idempotency_key_of_the_first_delivery():
    first, again = dumped(fixture("message__text.json")), dumped(fixture("message__redelivery.json"))

    assert again[0]["channel_message_id"] == first[0]["channel_message_id"]
    assert (first[0]["metadata"]["redelivery"], again[0]["metadata"]["redelivery"]) == (False, True)


def test_image_set_in_one_post_equals_the_same_images_in_three_posts():
    one_by_one = [dumped(fixture(f"message__image_set_{i}.json"))[0] for i in (1, 2, 3)]

    assert dumped(fixture("batch__image_set.json")) == one_by_one


def test_other_destination_is_kept_when_no_destination_is_configured():
    events = dumped(fixture("message__other_destination.json"), config={})

    assert [(e["type"], e["text"]) for e in events] == [("message", "Hello?")]


def test_verification_ping_for_another_destination_is_still_empty():
    assert dumped(b'{"destination": "U00000000000000000000000000000000", "events": []}') == []


def test_destination_configured_as_a_non_string_is_a_config_error():
    with pytest.raises(ConfigError):
        parse_events(fixture("message__text.json"), ACCOUNT, {"destination": 42})


def test_message_without_a_user_id_is_ignored():
    event = json.loads(fixture("message__text.json"))["events"][0]
    event["source"] = {"type": "user"}

    assert dumped(body(event)) == [{"type": "ignored", "reason": "message without a user id"}]


def test_room_chat_is_ignored_like_a_group_chat():
    event = json.loads(fixture("message__group.json"))["events"][0]
    event["source"] = {
        "type": "room",
        "roomId": "Ra8dbf4673c4c812cd491258042226c99",
        "userId": event["source"]["userId"],
    }

    assert dumped(body(event)) == [{"type": "ignored", "reason": "group chat"}]


def test_external_image_without_a_url_is_stored_as_not_available():
    [event] = dumped(body(variant("message__image_external.json", contentProvider={"type": "external"})))

    assert (event["text"], event["status"], event["media"]) == ("[image: not available]", "ready", None)


def test_audio_without_duration_has_no_duration():
    [event] = dumped(body(variant("message__audio.json", duration=None)))

    assert event["media"] == {
        "kind": "audio",
        "ref": json.loads(fixture("message__audio.json"))["events"][0]["message"]["id"],
        "mime_type": None,
        "size": None,
        "duration_s": None,
    }


def test_sticker_without_text_or_keywords_is_a_bare_placeholder():
    [event] = dumped(body(variant("message__sticker.json", keywords=None)))

    assert event["text"] == "[sticker]"


def test_location_without_title_or_address_shows_the_coordinates():
    [event] = dumped(body(variant("message__location.json", title=None, address=None)))

    assert event["text"] == "[location: (35.67966, 139.73669)]"


def test_mode_other_than_active_or_standby_is_ignored_and_named():
    event = {**json.loads(fixture("message__text.json"))["events"][0], "mode": "paused"}

    assert dumped(body(event)) == [{"type": "ignored", "reason": "mode 'paused'"}]


def test_blank_text_message_is_ignored():
    assert dumped(body(variant("message__text.json", text=" \u0007 "))) == [
        {"type": "ignored", "reason": "empty message"}
    ]


@pytest.mark.parametrize(
    "raw",
    [b"", b"null", b"[]", b'"events"', b"\xff\xfe{}", b'{"destination": "U1", "events": [', b'{"a": "\\ud800"}'],
)
def test_body_that_is_not_a_json_object_is_malformed(raw: bytes):
    with pytest.raises(PayloadError) as caught:
        parse_events(raw, ACCOUNT, CONFIG)

    assert caught.value.malformed is True


@pytest.mark.parametrize(
    "event",
    [
        1,
        {"mode": "active"},
        {**json.loads(fixture("message__text.json"))["events"][0], "webhookEventId": None},
        {**json.loads(fixture("message__text.json"))["events"][0], "timestamp": "yesterday"},
        {**json.loads(fixture("message__text.json"))["events"][0], "deliveryContext": {}},
        variant("message__text.json", text=None),
        variant("message__image.json", contentProvider=None),
        variant("message__audio.json", duration=-1),
        variant("message__file.json", fileName=None),
        variant("message__location.json", latitude="north"),
        variant("message__image_external.json", contentProvider={"type": "external", "originalContentUrl": "x" * 4001}),
    ],
    ids=lambda e: "event" if not isinstance(e, dict) else str(sorted(e))[:40],
)
def test_event_of_the_wrong_shape_is_an_invalid_payload(event: Any):
    with pytest.raises(PayloadError) as caught:
        parse_events(body(event), ACCOUNT, CONFIG)

    assert caught.value.malformed is False
    assert caught.value.details


# -- nothing but PayloadError escapes, whatever the fields hold

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)
MESSAGE_KEYS = [
    "type", "id", "text", "emojis", "contentProvider", "imageSet", "duration", "fileName", "fileSize", "title",
    "address", "latitude", "longitude", "packageId", "stickerId", "keywords", "quoteToken", "markAsReadToken",
]  # fmt: skip
EVENT_KEYS = ["type", "mode", "timestamp", "source", "webhookEventId", "deliveryContext", "replyToken", "message"]
TYPES = st.sampled_from(["text", "image", "audio", "sticker", "message", "follow", "active", "standby", "user", "new"])
MESSAGE_FIXTURES = [
    "message__text.json", "message__text_emoji.json", "message__image.json", "message__image_set_1.json",
    "message__image_external.json", "message__audio.json", "message__video.json", "message__file.json",
    "message__sticker.json", "message__location.json",
]  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(MESSAGE_FIXTURES),
    message_changes=st.dictionaries(st.sampled_from(MESSAGE_KEYS), JSON_VALUES | TYPES, max_size=2),
    event_changes=st.dictionaries(st.sampled_from(EVENT_KEYS), JSON_VALUES | TYPES, max_size=1),
)
def test_any_field_values_give_one_event_or_a_payload_error(
    name: str, message_changes: dict[str, Any], event_changes: dict[str, Any]
):
    event = json.loads(fixture(name))["events"][0]
    event = {**event, "message": {**event["message"], **message_changes}, **event_changes}
    outcome: list[Any] | PayloadError
    try:
        outcome = parse_events(body(event), ACCOUNT, CONFIG)
    except PayloadError as exc:
        outcome = exc
    if isinstance(outcome, PayloadError):
        assert not outcome.malformed
    else:
        [event] = outcome
        assert event.type != "ignored" or event.reason
