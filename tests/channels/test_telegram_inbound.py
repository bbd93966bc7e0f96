"""Telegram inbound parsing: every fixture, in Telegram's own format, against the events it must become."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from snapshot import fixtures, load_snapshots, read_fixture

from frontdesk.errors import PayloadError
from frontdesk.ingestion.channels.telegram.inbound import MAX_DOWNLOAD_BYTES, parse_events

FIXTURES = fixtures("telegram")
BOT_ID = 7351862094
CONFIG = {"bot_id": BOT_ID}


def fixture(name: str) -> bytes:
    """A webhook body from the channel's fixtures folder, byte for byte as Telegram would send it."""
    return read_fixture("telegram", name)


def parse(raw: bytes, config: dict[str, Any] = CONFIG) -> list[dict[str, Any]]:
    return [event.model_dump() for event in parse_events(raw, "tg-acct", config)]


def with_change(name: str, change: Callable[[dict[str, Any]], object]) -> bytes:
    """A fixture with one change applied to its ``message`` object."""
    update = json.loads(fixture(name))
    change(update["message"])
    return json.dumps(update).encode()


# The whole list of events per fixture: a change a customer or an operator would notice fails here.
SNAPSHOTS = load_snapshots("telegram")  # snapshots/telegram_inbound.json

MALFORMED = {
    "malformed__not_json.txt": (True, "the body is not valid JSON"),
    "malformed__array.json": (True, "the body must be a JSON object (one Telegram update)"),
    "malformed__no_update_id.json": (False, "invalid Telegram update: update_id: Field required"),
    "malformed__update_id_string.json": (False, "invalid Telegram update: update_id: Input should be a valid integer"),
}


@pytest.mark.parametrize("name", sorted(SNAPSHOTS))
def test_fixture_becomes_exactly_its_snapshot_events(name: str) -> None:
    assert parse(fixture(name)) == SNAPSHOTS[name]


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_body_is_a_payload_error_saying_what_is_wrong(name: str) -> None:
    with pytest.raises(PayloadError) as caught:
        parse_events(fixture(name), "tg-acct", CONFIG)

    assert (caught.value.malformed, caught.value.message) == MALFORMED[name]


def test_every_fixture_file_is_used_by_a_test() -> None:
    # A fixture with no snapshot, or a snapshot (or malformed entry) with no fixture, fails here.
    on_disk = {entry.name for entry in FIXTURES.iterdir() if entry.is_file()}

    assert not set(SNAPSHOTS) & set(MALFORMED)
    assert on_disk == set(SNAPSHOTS) | set(MALFORMED)


def test_largest_photo_size_is_chosen_whatever_the_order() -> None:
    shuffled = with_change("message__photo_caption.json", lambda message: message["photo"].reverse())

    assert parse(shuffled) == SNAPSHOTS["message__photo_caption.json"]


@pytest.mark.parametrize(("size", "fetchable"), [(MAX_DOWNLOAD_BYTES, True), (MAX_DOWNLOAD_BYTES + 1, False)])
def test_media_over_the_20_mb_download_limit_has_no_ref(size: int, fetchable: bool) -> None:
    def resize(message: dict[str, Any]) -> None:
        message["photo"][-1]["file_size"] = size

    [event] = parse(with_change("message__photo_caption.json", resize))

    [usual] = SNAPSHOTS["message__photo_caption.json"]
    caption = "Can you match this shade of green for 200 business cards?"
    if fetchable:
        assert event == {**usual, "media": {**usual["media"], "size": size}}
    else:
        assert (event["text"], event["status"], event["media"]) == (f"[image: not available] {caption}", "ready", None)


@pytest.mark.parametrize("bot_id", [6112093847, "6112093847"])
def test_message_from_the_configured_bot_id_is_an_echo(bot_id: int | str) -> None:
    # is_bot is false here: the id alone identifies our own bot, as an int or a string in config.
    assert parse(fixture("message__text.json"), {"bot_id": bot_id}) == [{"type": "ignored", "reason": "echo"}]


def test_without_a_bot_id_in_config_a_customer_message_is_still_accepted() -> None:
    assert parse(fixture("message__text.json"), {}) == SNAPSHOTS["message__text.json"]


# Values that break naive parsers: wrong types, empty, negative, huge, a nested container.
HOSTILE: list[Any] = [None, True, -1, 0, 2**70, 1.5, "", "1", "x" * 5000, [], [{}], {}, {"file_id": ""}]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, child in children:
        found.extend(_paths(child, (*prefix, key)))
    return found


def _replace(document: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, *rest = path
    copy = dict(document) if isinstance(document, dict) else list(document)
    copy[head] = _replace(document[head], tuple(rest), new)
    return copy


@pytest.mark.parametrize("name", sorted(SNAPSHOTS))
def test_any_field_replaced_by_a_hostile_value_is_parsed_or_a_payload_error(name: str) -> None:
    # Every value in every fixture, in turn: nothing but PayloadError may escape (a 500 makes Telegram retry).
    update = json.loads(fixture(name))
    for path in _paths(update):
        for value in HOSTILE:
            raw = json.dumps(_replace(update, path, value)).encode()
            try:
                events = parse_events(raw, "tg-acct", CONFIG)
            except PayloadError:
                continue
            assert len(events) == 1, (path, value)
