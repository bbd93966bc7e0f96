"""WhatsApp Cloud API inbound parsing: each fixture, in Meta's webhook format, against a snapshot
of every event it becomes; then the edges (filtering, sender fallbacks, bodies we refuse)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from snapshot import fixtures, load_snapshots, read_fixture

from frontdesk.errors import PayloadError
from frontdesk.ingestion.channels.whatsapp.inbound import parse_events

FIXTURES = fixtures("whatsapp")
ACCOUNT = "wa-acct"
PHONE_NUMBER_ID = "106540352242922"
CONFIG = {"phone_number_id": PHONE_NUMBER_ID}


def fixture(name: str) -> bytes:
    return read_fixture("whatsapp", name)


def events(raw: bytes, config: dict[str, Any] = CONFIG) -> list[dict[str, Any]]:
    return [event.model_dump() for event in parse_events(raw, ACCOUNT, config)]


def edited(name: str, edit: Callable[[dict[str, Any]], Any]) -> bytes:
    """A fixture with one change applied to its parsed JSON, serialised again."""
    data = json.loads(fixture(name))
    edit(data)
    return json.dumps(data).encode()


def value(data: dict[str, Any]) -> dict[str, Any]:
    """The first change's ``value``: where messages and statuses live."""
    result: dict[str, Any] = data["entry"][0]["changes"][0]["value"]
    return result


def first_message(data: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = value(data)["messages"][0]
    return result


# -- one snapshot per fixture

SNAPSHOTS = load_snapshots("whatsapp")  # snapshots/whatsapp_inbound.json

MALFORMED = {
    "malformed__not_json.txt": True,  # not parseable at all
    "malformed__no_entry.json": False,  # JSON, but not the shape Meta sends
    "malformed__wrong_object.json": False,  # a Messenger body posted to the WhatsApp URL
}


@pytest.mark.parametrize("name", sorted(SNAPSHOTS))
def test_fixture_becomes_exactly_its_snapshot_events(name: str) -> None:
    assert events(fixture(name)) == SNAPSHOTS[name]


@pytest.mark.parametrize(("name", "malformed"), sorted(MALFORMED.items()))
def test_unreadable_body_is_a_payload_error(name: str, malformed: bool) -> None:
    with pytest.raises(PayloadError) as caught:
        parse_events(fixture(name), ACCOUNT, CONFIG)

    assert caught.value.malformed is malformed


def test_every_fixture_in_the_folder_is_checked() -> None:
    # A fixture with no snapshot, or a snapshot (or malformed entry) with no fixture, fails here.
    on_disk = {item.name for item in FIXTURES.iterdir() if item.is_file()}

    assert not set(SNAPSHOTS) & set(MALFORMED)
    assert on_disk == set(SNAPSHOTS) | set(MALFORMED)


# -- batching and filtering


def test_every_entry_and_every_change_of_one_post_is_read_in_order() -> None:
    text, status, account = (
        json.loads(fixture(n)) for n in ("message__text.json", "status__read.json", "change__account_update.json")
    )
    text["entry"][0]["changes"] += status["entry"][0]["changes"]
    text["entry"] += account["entry"]

    parsed = events(json.dumps(text).encode())

    assert parsed == [
        *SNAPSHOTS["message__text.json"],
        *SNAPSHOTS["status__read.json"],
        *SNAPSHOTS["change__account_update.json"],
    ]


def test_without_a_configured_number_no_change_is_filtered_out() -> None:
    parsed = events(fixture("message__other_phone_number.json"), config={})

    assert [(e["type"], e["text"], e["metadata"]["phone_number_id"]) for e in parsed] == [
        ("message", "Is this the Saigon branch?", "113259878245771")
    ]


def test_only_the_change_for_another_number_is_ignored() -> None:
    ours = json.loads(fixture("message__text.json"))
    other = json.loads(fixture("message__other_phone_number.json"))
    ours["entry"][0]["changes"] += other["entry"][0]["changes"]

    assert events(json.dumps(ours).encode()) == [
        *SNAPSHOTS["message__text.json"],
        {"type": "ignored", "reason": "another phone number"},
    ]


# -- senders and names


def test_sender_without_a_phone_number_is_keyed_on_from_user_id() -> None:
    def hide_phone(data: dict[str, Any]) -> None:
        del value(data)["contacts"][0]["wa_id"]
        message = first_message(data)
        del message["from"]
        message["from_user_id"] = "US.13491208655302741918"

    parsed = events(edited("message__text.json", hide_phone))

    assert [(e["contact_external_id"], e["contact_name"], e["metadata"]["user_id"]) for e in parsed] == [
        ("US.13491208655302741918", "Sheena Nelson", "US.13491208655302741918")
    ]


def test_contact_name_comes_from_the_only_contact_when_wa_id_and_from_differ() -> None:
    def mexican_number(data: dict[str, Any]) -> None:
        value(data)["contacts"][0]["wa_id"] = "5215512345678"  # Meta's wa_id keeps the old "1" after 52
        first_message(data)["from"] = "525512345678"

    parsed = events(edited("message__text.json", mexican_number))

    assert (parsed[0]["contact_external_id"], parsed[0]["contact_name"]) == ("525512345678", "Sheena Nelson")


def test_message_with_no_sender_id_at_all_is_ignored_not_a_failed_batch() -> None:
    def anonymous(data: dict[str, Any]) -> None:
        del first_message(data)["from"]
        value(data)["contacts"] = []

    assert events(edited("message__text.json", anonymous)) == [
        {"type": "ignored", "reason": "text message without a sender id"}
    ]


# -- content edges


def test_image_without_a_media_id_keeps_its_caption() -> None:
    parsed = events(edited("message__image_caption.json", lambda d: first_message(d)["image"].pop("id")))

    assert (parsed[0]["text"], parsed[0]["status"], parsed[0]["media"]) == (
        "[image: not available] Can you print this logo on 200 mugs?",
        "ready",
        None,
    )


def test_blank_text_is_ignored() -> None:
    blank = edited("message__text.json", lambda d: first_message(d).update(text={"body": " \n\t "}))

    assert events(blank) == [{"type": "ignored", "reason": "empty message"}]


def test_location_without_a_name_shows_only_its_coordinates() -> None:
    def pin_only(data: dict[str, Any]) -> None:
        first_message(data)["location"] = {"latitude": 10.7769, "longitude": 106.7009}

    assert events(edited("message__location.json", pin_only))[0]["text"] == "[location: (10.7769, 106.7009)]"


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ({"type": "request_welcome"}, "request_welcome"),
        ({"type": "unknown", "errors": [{"code": 131051, "title": "Unsupported message type"}]}, "unknown"),
        (
            {"type": "interactive", "interactive": {"type": "nfm_reply", "nfm_reply": {"response_json": "{}"}}},
            "interactive nfm_reply",
        ),
        ({"type": "system", "system": {"type": "user_changed_number", "body": "..."}}, "system"),
        ({"type": "order", "order": {"catalog_id": "1", "product_items": []}}, "order"),
    ],
)
def test_types_we_do_not_read_are_ignored_by_name(message: dict[str, Any], reason: str) -> None:
    def replace(data: dict[str, Any]) -> None:
        original = first_message(data)
        value(data)["messages"] = [{k: original[k] for k in ("from", "id", "timestamp")} | message]

    assert events(edited("message__text.json", replace)) == [{"type": "ignored", "reason": reason}]


@pytest.mark.parametrize("state", ["deleted", "warning", "SENT"])
def test_status_values_we_do_not_know_are_ignored(state: str) -> None:
    raw = edited("status__sent.json", lambda d: value(d)["statuses"][0].update(status=state))

    assert events(raw) == [{"type": "ignored", "reason": f"status {state}"}]


def test_failed_status_with_several_errors_lists_them_all() -> None:
    def two_errors(data: dict[str, Any]) -> None:
        errors = value(data)["statuses"][0]["errors"]
        errors.append({"code": 131026, "title": "Message undeliverable"})

    parsed = events(edited("status__failed.json", two_errors))

    assert parsed[0]["error"].endswith("to this number.; 131026 Message undeliverable")


# -- bodies we refuse: always PayloadError, never a pydantic or key error


def _set(path: tuple[Any, ...], new: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = new

    return edit


MESSAGE = ("entry", 0, "changes", 0, "value", "messages", 0)


@pytest.mark.parametrize(
    "edit",
    [
        _set(("entry",), "not a list"),
        _set(("entry", 0, "changes"), None),
        _set(("entry", 0, "changes", 0), "messages"),
        _set(("entry", 0, "changes", 0, "value", "metadata"), None),
        _set((*MESSAGE, "id"), ""),
        _set((*MESSAGE, "id"), "wamid." + "A" * 400),
        _set((*MESSAGE, "from"), "1" * 500),
        _set((*MESSAGE, "type"), None),
        _set((*MESSAGE, "text"), {"no_body": True}),
        _set(("entry", 0, "changes", 0, "value", "contacts"), "Sheena"),
    ],
    ids=[
        "entry",
        "changes",
        "change",
        "metadata",
        "empty-id",
        "long-id",
        "long-from",
        "no-type",
        "no-body",
        "contacts",
    ],
)
def test_shape_we_cannot_read_is_a_payload_error(edit: Callable[[dict[str, Any]], None]) -> None:
    with pytest.raises(PayloadError) as caught:
        parse_events(edited("message__text.json", edit), ACCOUNT, CONFIG)

    assert not caught.value.malformed
    assert caught.value.message.startswith("invalid WhatsApp webhook: ")


@pytest.mark.parametrize(
    "raw",
    [b"", b"[]", b'"whatsapp_business_account"', b"\xff\xfe\x00garbage", b"[" * 100_000 + b"]" * 100_000],
    ids=["empty", "array", "string", "not-utf8", "deep-nesting"],
)
def test_body_that_is_not_a_json_object_is_malformed(raw: bytes) -> None:
    with pytest.raises(PayloadError) as caught:
        parse_events(raw, ACCOUNT, CONFIG)

    assert caught.value.malformed
