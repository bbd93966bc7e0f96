"""Telegram inbound parsing: every fixture, in Telegram's own format, against the events it must become."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from typing import Any

import pytest

from frontdesk.errors import PayloadError
from frontdesk.ingestion.channels.telegram.inbound import MAX_DOWNLOAD_BYTES, parse_events

FIXTURES = resources.files("frontdesk.ingestion.channels.telegram").joinpath("fixtures")
BOT_ID = 7351862094
CONFIG = {"bot_id": BOT_ID}


def fixture(name: str) -> bytes:
    """A webhook body from the channel's fixtures folder, byte for byte as Telegram would send it."""
    return FIXTURES.joinpath(name).read_bytes()


def parse(raw: bytes, config: dict[str, Any] = CONFIG) -> list[dict[str, Any]]:
    return [event.model_dump() for event in parse_events(raw, "tg-acct", config)]


def with_change(name: str, change: Callable[[dict[str, Any]], object]) -> bytes:
    """A fixture with one change applied to its ``message`` object."""
    update = json.loads(fixture(name))
    change(update["message"])
    return json.dumps(update).encode()


# The whole list of events per fixture: a change a customer or an operator would notice fails here.
SNAPSHOTS: dict[str, list[dict[str, Any]]] = {
    "callback_query__button.json": [{"type": "ignored", "reason": "unsupported update: callback_query"}],
    "edited_message__text.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920432",
            "content_type": "text",
            "text": "Hi! Do you still print A5 flyers on recycled paper? I need 500 by Friday",
            "contact_name": "Linh Tran",
            "status": "ready",
            "media": None,
            "metadata": {"chat_id": 6112093847, "message_id": 1842, "edited": True},
        }
    ],
    "message__album_1.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920419",
            "content_type": "image",
            "text": "[image: loading] Three poster drafts, which paper would you use?",
            "contact_name": "Linh Tran",
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "AgACAgIAAxkBAAIHN1jo3zm5f0b2hN9cQ1uXj3pZk8R2AAJ1-zEbHk9JS0qT5rW1aLmBAQADAgADeQADNgQ",
                "mime_type": None,
                "size": 201934,
                "duration_s": None,
            },
            "metadata": {
                "chat_id": 6112093847,
                "message_id": 1844,
                "media_group_id": "13927415093842611",
                "caption": "Three poster drafts, which paper would you use?",
            },
        }
    ],
    "message__album_2.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920420",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": "Linh Tran",
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "AgACAgIAAxkBAAIHN2jo3zm5f0b2hN9cQ1uXj3pZk8R2AAJ2-zEbHk9JS0qT5rW1aLmBAQADAgADeQADNgQ",
                "mime_type": None,
                "size": 188207,
                "duration_s": None,
            },
            "metadata": {"chat_id": 6112093847, "message_id": 1845, "media_group_id": "13927415093842611"},
        }
    ],
    "message__album_3.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920421",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": "Linh Tran",
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "AgACAgIAAxkBAAIHN3jo3zm5f0b2hN9cQ1uXj3pZk8R2AAJ3-zEbHk9JS0qT5rW1aLmBAQADAgADeQADNgQ",
                "mime_type": None,
                "size": 176455,
                "duration_s": None,
            },
            "metadata": {"chat_id": 6112093847, "message_id": 1846, "media_group_id": "13927415093842611"},
        }
    ],
    "message__animation.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920427",
            "content_type": "video",
            "text": "[video]",
            "contact_name": "Linh Tran",
            "status": "ready",
            "media": None,
            "metadata": {"chat_id": 6112093847, "message_id": 1852},
        }
    ],
    "message__audio.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920423",
            "content_type": "audio",
            "text": "[audio message: being transcribed]",
            "contact_name": "Linh Tran",
            "status": "pending",
            "media": {
                "kind": "audio",
                "ref": "CQACAgIAAxkBAAIHOGjo4GQ3bWcR5tVx0P9hK1nA2cYwAAI0XQACHk9JS8z3bJ1s0u9wNgQ",
                "mime_type": "audio/mpeg",
                "size": 1507328,
                "duration_s": 94.0,
            },
            "metadata": {"chat_id": 6112093847, "message_id": 1848},
        }
    ],
    "message__document.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920428",
            "content_type": "file",
            "text": "[file: wedding-invite-final_v3.pdf] Here is the print-ready file, 120 copies please",
            "contact_name": "Linh Tran",
            "status": "ready",
            "media": None,
            "metadata": {"chat_id": 6112093847, "message_id": 1853},
        }
    ],
    "message__document_image.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920429",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": "Linh Tran",
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "BQACAgIAAxkBAAIHPmjo4gJN8EKWdXE_ch9G_JyNrFelAAI7XQACHk9JS8U9p_LkJuGZNgQ",
                "mime_type": "image/jpeg",
                "size": 3562208,
                "duration_s": None,
            },
            "metadata": {"chat_id": 6112093847, "message_id": 1854},
        }
    ],
    "message__document_image_too_large.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920430",
            "content_type": "image",
            "text": "[image: not available]",  # stored, so the agent can say it could not open it
            "contact_name": "Linh Tran",
            "status": "ready",
            "media": None,
            "metadata": {"chat_id": 6112093847, "message_id": 1855},
        }
    ],
    "message__from_bot.json": [{"type": "ignored", "reason": "echo"}],
    "message__group_chat.json": [{"type": "ignored", "reason": "group chat"}],
    "message__html_like_text.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "5893021174",
            "channel_message_id": "update:583920440",
            "content_type": "text",
            "text": 'Can you print it like this: <b>BIG SALE</b> & "50% off" &amp; <i>today only</i>?',
            "contact_name": "Marco",
            "status": "ready",
            "media": None,
            "metadata": {"chat_id": 5893021174, "message_id": 1861},
        }
    ],
    "message__location.json": [{"type": "ignored", "reason": "empty message"}],
    "message__new_chat_members.json": [{"type": "ignored", "reason": "group chat"}],
    "message__photo_caption.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920418",
            "content_type": "image",
            "text": "[image: loading] Can you match this shade of green for 200 business cards?",
            "contact_name": "Linh Tran",
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "AgACAgIAAxkBAAIHM2jo3xKvQ1pLQ2Ww6bF0m0a1c2d3AAJ4-jEbHk9JS4nV0o3Xq8yGAQADAgADeQADNgQ",
                "mime_type": None,
                "size": 142873,
                "duration_s": None,
            },
            "metadata": {
                "chat_id": 6112093847,
                "message_id": 1843,
                "caption": "Can you match this shade of green for 200 business cards?",
            },
        }
    ],
    "message__photo_too_large.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920431",
            "content_type": "image",
            "text": "[image: not available] Full resolution scan of the artwork",
            "contact_name": "Linh Tran",
            "status": "ready",
            "media": None,
            "metadata": {"chat_id": 6112093847, "message_id": 1856},
        }
    ],
    "message__pinned_message.json": [{"type": "ignored", "reason": "empty message"}],
    "message__sticker.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920424",
            "content_type": "sticker",
            "text": "[sticker: 👍]",
            "contact_name": "Linh Tran",
            "status": "ready",
            "media": None,
            "metadata": {"chat_id": 6112093847, "message_id": 1849},
        }
    ],
    "message__text.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920417",
            "content_type": "text",
            "text": "Hi! Do you still print A5 flyers on recycled paper? Like these: "
            "https://inkwell.example/p/flyers-a5",
            "contact_name": "Linh Tran",
            "status": "ready",
            "media": None,
            "metadata": {"chat_id": 6112093847, "message_id": 1842},
        }
    ],
    "message__unicode.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "1204583921",
            "channel_message_id": "update:583920442",
            "content_type": "text",
            # "thiê\u0301p" (a combining acute) is stored composed (NFC); three line breaks become two.
            "text": "Chào shop 👋 mình muốn in 300 thi\u1ebfp cưới 💍👩\u200d❤️\u200d👨 "
            "giao về Hà Nội 🇻🇳 được không ạ?\n\n"
            "مرحبا، هل يمكن الطباعة باللغة العربية؟ 🙏",
            "contact_name": "Thu Hà Nguyễn",
            "status": "ready",
            "media": None,
            "metadata": {"chat_id": 1204583921, "message_id": 927},
        }
    ],
    "message__video.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920425",
            "content_type": "video",
            "text": "[video] The binding came apart after two days, see",
            "contact_name": "Linh Tran",
            "status": "ready",
            "media": None,
            "metadata": {"chat_id": 6112093847, "message_id": 1850},
        }
    ],
    "message__video_note.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920426",
            "content_type": "video",
            "text": "[video]",
            "contact_name": "Linh Tran",
            "status": "ready",
            "media": None,
            "metadata": {"chat_id": 6112093847, "message_id": 1851},
        }
    ],
    "message__voice.json": [
        {
            "type": "message",
            "channel_account_id": "tg-acct",
            "contact_external_id": "6112093847",
            "channel_message_id": "update:583920422",
            "content_type": "voice",
            "text": "[voice note: being transcribed]",
            "contact_name": "Linh Tran",
            "status": "pending",
            "media": {
                "kind": "audio",
                "ref": "AwACAgIAAxkBAAIHN2jo4B9wU1xq0y4kL6QmJ8s2n5dTAAIyXQACHk9JS2Gq0Y8pW3r1NgQ",
                "mime_type": "audio/ogg",
                "size": 31214,
                "duration_s": 7.0,
            },
            "metadata": {"chat_id": 6112093847, "message_id": 1847},
        }
    ],
    "my_chat_member__blocked.json": [{"type": "ignored", "reason": "unsupported update: my_chat_member"}],
}

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
    on_disk = {entry.name for entry in FIXTURES.iterdir() if entry.is_file()}

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
