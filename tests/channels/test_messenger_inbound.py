"""Messenger and Instagram webhook bodies -> our inbound events, one snapshot per fixture.

Each fixture is a body in Meta's own format; its snapshot, in snapshots/messenger_inbound.json, is the
whole event list we store or ignore. Then the edges, and a fuzz of well-formed and arbitrary bodies.
"""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from snapshot import fixtures, load_snapshots, read_fixture

from frontdesk.errors import ConfigError, PayloadError
from frontdesk.ingestion.channels.messenger.inbound import parse_events

FIXTURES = fixtures("messenger")
ACCOUNT = "fb-acct"

FILE_URL = "https://cdn.fbsbx.com/v/t59.2708-21/452300112_1122334455667788_8877665544332211009_n.pdf/Men%C3%BA%20verano%202026.pdf?_nc_cat=108&ccb=1-7&_nc_sid=2c9c2a&_nc_ohc=Fl5Kj7Hg9FdQ7kNvgHs2Kd1&_nc_ht=cdn.fbsbx.com&oh=03_Q7cD1Ab2Cd3Ef4Gh5Ij6&oe=68A22E33"
IG_ID = "17841405726653026"
IMG1_URL = "https://scontent.xx.fbcdn.net/v/t1.15752-9/452189763_1038475629184736_6482910375648291037_n.jpg?_nc_cat=104&ccb=1-7&_nc_sid=fc17b8&_nc_ohc=Qx7aB3kLm9EQ7kNvgH2p4Zr&_nc_ad=z-m&_nc_cid=0&_nc_ht=scontent.xx&oh=03_Q7cD1Ab2Cd3Ef4Gh5Ij6Kl7Mn8Op9Qr0St1Uv2Wx3Yz4A&oe=68A1B2C3"
IMG2_URL = "https://scontent.xx.fbcdn.net/v/t1.15752-9/452189811_1183746502918374_2837465019283746510_n.jpg?_nc_cat=104&ccb=1-7&_nc_sid=fc17b8&_nc_ohc=Qx7aB3kLm9EQ7kNvgH2p4Zr&_nc_ad=z-m&_nc_cid=0&_nc_ht=scontent.xx&oh=03_Q7cD1Ab2Cd3Ef4Gh5Ij6Kl7Mn8Op9Qr0St1Uv2Wx3Yz4A&oe=68A1B2C3"
MID_THREE = "m_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6a7B8c9D0e1F2g3H4i5J6k7L8m9N0o1P2qR"
PAGE_ID = "104857392016485"
PSID = "7234019865123456"

# fixture file name -> the whole event list, as model_dump() gives it
SNAPSHOTS = load_snapshots("messenger")

MALFORMED = {
    # fixture -> is the body unparseable (True) or parseable but wrong (False)
    "malformed__not_json.txt": True,
    "malformed__no_entry.json": False,
    "malformed__wrong_object.json": False,
}


def fixture(name: str) -> bytes:
    return read_fixture("messenger", name)


def channel_of(name: str) -> str:
    return "instagram" if name.startswith("instagram") else "messenger"


def config_of(channel: str) -> dict[str, str]:
    return {"instagram_id": IG_ID} if channel == "instagram" else {"page_id": PAGE_ID}


def parse(body: bytes | dict[str, Any], channel: str = "messenger", config: dict[str, Any] | None = None) -> list[Any]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    events = parse_events(raw, ACCOUNT, config_of(channel) if config is None else config, channel=channel)
    return [event.model_dump() for event in events]


@pytest.mark.parametrize("name", sorted(SNAPSHOTS))
def test_fixture_parses_to_its_snapshot(name: str) -> None:
    assert parse(fixture(name), channel_of(name)) == SNAPSHOTS[name]


@pytest.mark.parametrize(("name", "malformed"), sorted(MALFORMED.items()))
def test_malformed_fixture_is_a_payload_error(name: str, malformed: bool) -> None:
    with pytest.raises(PayloadError) as caught:
        parse(fixture(name))
    assert caught.value.malformed is malformed


def test_every_fixture_in_the_folder_has_a_test() -> None:
    # A fixture with no snapshot, or a snapshot (or malformed entry) with no fixture, fails here.
    on_disk = {entry.name for entry in FIXTURES.iterdir() if entry.is_file()}
    assert not set(SNAPSHOTS) & set(MALFORMED)
    assert on_disk == set(SNAPSHOTS) | set(MALFORMED)


def test_a_redelivery_yields_the_same_message_ids() -> None:
    body = fixture("message__three_images.json")
    first, again = parse(body), parse(body)
    assert [e["channel_message_id"] for e in first] == [e["channel_message_id"] for e in again]
    assert [e["channel_message_id"] for e in first] == [MID_THREE, f"{MID_THREE}#1", f"{MID_THREE}#2"]


@pytest.mark.parametrize(
    ("stem", "channel"),
    [("instagram_message__text", "messenger"), ("message__text", "instagram")],
)
def test_a_webhook_of_the_other_product_is_refused(stem: str, channel: str) -> None:
    with pytest.raises(PayloadError, match="takes object") as caught:
        parse(fixture(f"{stem}.json"), channel)
    assert caught.value.malformed is False


def test_without_a_configured_id_every_entry_is_accepted() -> None:
    (event,) = parse(fixture("message__other_page.json"), config={})
    assert (event["type"], event["text"]) == ("message", "Hi, I'd like to order")


def test_a_numeric_configured_page_id_still_filters() -> None:
    assert parse(fixture("message__text.json"), config={"page_id": int(PAGE_ID)})[0]["type"] == "message"
    assert parse(fixture("message__text.json"), config={"page_id": 1}) == [
        {"type": "ignored", "reason": "another page"}
    ]


def test_an_unusable_config_id_is_our_fault() -> None:
    with pytest.raises(ConfigError):
        parse(fixture("message__text.json"), config={"page_id": ["104857392016485"]})


def test_an_unknown_channel_name_is_our_fault() -> None:
    with pytest.raises(ConfigError):
        parse_events(fixture("message__text.json"), ACCOUNT, {}, channel="whatsapp")


@pytest.mark.parametrize("raw", [b"[]", b'"page"', b"null", b"42", b"\xff\xfe\x00", b"", b"[" * 100_000])
def test_a_body_that_is_not_a_json_object_is_malformed(raw: bytes) -> None:
    with pytest.raises(PayloadError) as caught:
        parse(raw)
    assert caught.value.malformed is True


@pytest.mark.parametrize(
    "body",
    [
        {"object": "page", "entry": []},
        {"object": "page", "entry": {"id": PAGE_ID}},
        {"object": "page", "entry": [{"time": 1783000000000, "messaging": []}]},
        {"object": "page", "entry": [{"id": PAGE_ID, "messaging": [{"timestamp": "soon"}]}]},
        {
            "object": "page",
            "entry": [{"id": PAGE_ID, "messaging": [{"sender": {"id": PSID}, "message": {"text": "hi"}}]}],
        },
        {"object": "page", "entry": [{"id": PAGE_ID, "messaging": [{"sender": {"id": 7}, "message": {"mid": "m_1"}}]}]},
        {"object": "page", "entry": [{"id": PAGE_ID, "messaging": [{"message": {"mid": "m_1", "attachments": "x"}}]}]},
        {"object": "page", "entry": [{"id": PAGE_ID, "messaging": [{"message": {"mid": "m" * 291}}]}]},
        {"object": 3, "entry": [{"id": PAGE_ID}]},
        {"object": "page", "entry": [{"id": PAGE_ID, "messaging": [{"message": {"mid": "m_1\u0000"}}]}]},
    ],
)
def test_a_body_of_the_wrong_shape_is_a_payload_error(body: dict[str, Any]) -> None:
    with pytest.raises(PayloadError) as caught:
        parse(body)
    assert caught.value.malformed is False


def message_body(message: dict[str, Any], **event: Any) -> dict[str, Any]:
    messaging = {"sender": {"id": PSID}, "recipient": {"id": PAGE_ID}, "timestamp": 1783000000000, "message": message}
    return {"object": "page", "entry": [{"id": PAGE_ID, "time": 1783000000100, "messaging": [{**messaging, **event}]}]}


def test_an_image_without_a_fetchable_url_has_no_media_and_is_stored_as_not_available() -> None:
    # A signed body can still name any URL, and the download runs inside our network: only https
    # on Meta's CDN is followed.
    refused = [
        "http://scontent.xx.fbcdn.net/v/a.jpg",
        "https://scontent.xx.fbcdn.net/" + "a" * 4000,
        "https://169.254.169.254/latest/meta-data/",
        "https://localhost/a.jpg",
        "https://fbcdn.net.evil.example/a.jpg",
        "https://scontent.xx.fbcdn.net:8443/a.jpg",
        "https://user@scontent.xx.fbcdn.net/a.jpg",
        "https://[::1/a.jpg",
    ]
    for attachment in [{"type": "image", "payload": {"url": url}} for url in refused] + [{"type": "image"}]:
        (event,) = parse(message_body({"mid": "m_1", "text": "this one", "attachments": [attachment]}))
        assert (event["content_type"], event["status"], event["media"]) == ("image", "ready", None)
        assert event["text"] == "[image: not available] this one"
    (alone,) = parse(message_body({"mid": "m_1", "attachments": [{"type": "image"}]}))
    assert (alone["status"], alone["text"]) == ("ready", "[image: not available]")


def test_media_on_the_accounts_own_api_base_is_fetchable() -> None:
    # The test double (or a proxy the operator configured) is the one non-CDN base we follow.
    local = "http://127.0.0.1:8123/cdn/a.jpg"
    config = {"page_id": PAGE_ID, "api_base_url": "http://127.0.0.1:8123"}
    attachment = {"type": "image", "payload": {"url": local}}
    (event,) = parse(message_body({"mid": "m_1", "attachments": [attachment]}), config=config)
    assert (event["status"], event["media"]["ref"]) == ("pending", local)
    other_port = {"type": "image", "payload": {"url": "http://127.0.0.1:81234/cdn/a.jpg"}}
    (event,) = parse(message_body({"mid": "m_1", "attachments": [other_port]}), config=config)
    assert event["media"] is None


def test_an_unsupported_attachment_is_ignored_unless_it_carries_the_text() -> None:
    booking = {"type": "appointment_booking", "payload": {"booking_id": "998877", "status": "requested"}}
    assert parse(message_body({"mid": "m_1", "attachments": [booking]})) == [
        {"type": "ignored", "reason": "unsupported attachment: appointment_booking"}
    ]
    fallback_without_payload = {"type": "fallback"}
    assert parse(message_body({"mid": "m_1", "attachments": [fallback_without_payload]})) == [
        {"type": "ignored", "reason": "unsupported attachment: fallback"}
    ]


def test_the_text_goes_with_the_first_attachment_only() -> None:
    images = [{"type": "image", "payload": {"url": IMG1_URL}}, {"type": "image", "payload": {"url": IMG2_URL}}]
    first, second = parse(message_body({"mid": "m_1", "text": "both of these", "attachments": images}))
    assert (first["text"], second["text"]) == ("[image: loading] both of these", "[image: loading]")


def test_a_message_without_a_sender_id_is_ignored() -> None:
    body = message_body({"mid": "m_1", "text": "hi"}, sender={"user_ref": "optin-ref-1"})
    assert parse(body) == [{"type": "ignored", "reason": "message without a sender id"}]


def test_a_message_sent_by_the_page_itself_is_an_echo_even_without_the_flag() -> None:
    body = message_body({"mid": "m_1", "text": "Thanks!"}, sender={"id": PAGE_ID}, recipient={"id": PSID})
    assert parse(body) == [{"type": "ignored", "reason": "echo"}]


def test_an_event_we_do_not_know_is_ignored_by_name() -> None:
    body = message_body({"mid": "m_1"})
    messaging = body["entry"][0]["messaging"][0]
    del messaging["message"]
    assert parse(body) == [{"type": "ignored", "reason": "unknown event"}]
    messaging["pass_thread_control"] = {"new_owner_app_id": "123456789", "metadata": "escalate"}
    assert parse(body) == [{"type": "ignored", "reason": "handover"}]


def test_a_file_named_only_by_title_or_not_at_all() -> None:
    titled = {"type": "file", "payload": {"url": "https://cdn.fbsbx.com/v/t59/x", "title": "Invoice.pdf"}}
    anonymous = {"type": "file", "payload": {"url": "https://cdn.fbsbx.com/v/t59.2708-21/452300112"}}
    first, second = parse(message_body({"mid": "m_1", "attachments": [titled, anonymous]}))
    assert (first["text"], second["text"]) == ("[file: Invoice.pdf]", "[file]")


def test_a_location_is_text_with_its_coordinates() -> None:
    pin = {"type": "location", "payload": {"title": "Pinned Location", "coordinates": {"lat": 45.764, "long": 4.8357}}}
    (event,) = parse(message_body({"mid": "m_1", "attachments": [pin]}))
    assert (event["content_type"], event["text"]) == ("text", "[location: Pinned Location] 45.764, 4.8357")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
TEXT = st.none() | st.text(max_size=30)
# Meta's ids are ASCII (control characters in ids are refused: see the wrong-shape cases).
ID = st.text(string.ascii_letters + string.digits + "_-.$:", min_size=1, max_size=40)
URL = st.sampled_from([IMG1_URL, FILE_URL, "http://a.example/b.jpg", "https://", "ftp://a/b", "", "x" * 5000]) | TEXT
ATTACHMENT = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "image",
                "audio",
                "video",
                "ig_reel",
                "file",
                "sticker",
                "like_heart",
                "fallback",
                "share",
                "story_mention",
                "location",
                "template",
            ]
        )
        | st.text(min_size=1, max_size=12)
    },
    optional={
        "payload": st.none()
        | st.fixed_dictionaries(
            {},
            optional={
                "url": URL,
                "title": TEXT,
                "sticker_id": st.none() | st.integers(0, 10**16),
                "coordinates": st.fixed_dictionaries({"lat": st.floats(-90, 90), "long": st.floats(-180, 180)}),
            },
        )
    },
)
MESSAGE = st.fixed_dictionaries(
    {"mid": ID},
    optional={
        "text": TEXT,
        "attachments": st.lists(ATTACHMENT, max_size=4),
        "is_echo": st.booleans(),
        "is_deleted": st.booleans(),
        "is_unsupported": st.booleans(),
        "reply_to": st.fixed_dictionaries(
            {}, optional={"mid": TEXT, "story": st.fixed_dictionaries({"id": TEXT, "url": URL})}
        ),
        "quick_reply": st.fixed_dictionaries({"payload": TEXT}),
        "sticker_id": st.none() | st.integers(0, 10**16),
    },
)
PARTY = st.fixed_dictionaries({}, optional={"id": st.sampled_from([PSID, PAGE_ID]) | ID, "user_ref": TEXT})
MESSAGE_EVENT = st.fixed_dictionaries(
    {
        "sender": st.fixed_dictionaries({"id": st.sampled_from([PSID, PSID, PSID, PAGE_ID]) | ID}),
        "recipient": st.fixed_dictionaries({"id": st.just(PAGE_ID)}),
        "timestamp": st.integers(0, 2**53),
        "message": MESSAGE,
    }
)
OTHER_EVENT = st.fixed_dictionaries(
    {},
    optional={
        "sender": PARTY,
        "recipient": PARTY,
        "timestamp": st.integers(0, 2**53),
        "message": MESSAGE,
        "delivery": st.fixed_dictionaries({"watermark": st.integers(0, 2**53)}),
        "read": st.fixed_dictionaries({}, optional={"watermark": st.integers(0, 2**53), "mid": TEXT}),
        "reaction": st.fixed_dictionaries({"action": st.sampled_from(["react", "unreact"]), "emoji": TEXT}),
        "optin": st.dictionaries(st.text(max_size=8), JSON, max_size=3),
    },
)
ENTRY = st.fixed_dictionaries(
    {
        "id": st.sampled_from([PAGE_ID, PAGE_ID, PAGE_ID, "231904857716203"]),
        "messaging": st.lists(MESSAGE_EVENT, max_size=3),
    },
    optional={
        "time": st.integers(0, 2**53),
        "standby": st.lists(OTHER_EVENT, max_size=2),
        "changes": st.lists(st.fixed_dictionaries({}, optional={"field": TEXT}), max_size=2),
    },
)
ENTRY_WITH_OTHER_EVENTS = st.tuples(ENTRY, st.lists(OTHER_EVENT, max_size=2)).map(
    lambda pair: {**pair[0], "messaging": [*pair[0]["messaging"], *pair[1]]}
)
ENVELOPE = st.fixed_dictionaries(
    {"object": st.just("page"), "entry": st.lists(ENTRY_WITH_OTHER_EVENTS, min_size=1, max_size=3)}
)
FUZZ = settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(body=ENVELOPE)
def test_every_event_of_any_well_formed_body_yields_an_event(body: dict[str, Any]) -> None:
    try:
        events = parse(body)
    except PayloadError:
        return  # a value our event types refuse (an empty sender id, a control character...)
    received = sum(
        len(e.get("messaging", [])) + len(e.get("standby", [])) + len(e.get("changes", [])) for e in body["entry"]
    )
    assert len(events) >= received
    for event in events:
        if event["type"] == "message":
            assert event["channel_message_id"].startswith(event["metadata"]["mid"])
            assert event["media"] is None or event["media"]["ref"].startswith("https://")


@FUZZ
@given(body=JSON)
def test_any_json_body_yields_events_or_a_payload_error(body: Any) -> None:
    try:
        events = parse(json.dumps(body).encode())
    except PayloadError:
        return
    assert all(event["type"] in ("message", "ignored") for event in events)
