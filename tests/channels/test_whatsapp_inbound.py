"""WhatsApp Cloud API inbound parsing: each fixture, in Meta's webhook format, against a snapshot
of every event it becomes; then the edges (filtering, sender fallbacks, bodies we refuse)."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from typing import Any

import pytest

from frontdesk.errors import PayloadError
from frontdesk.ingestion.channels.whatsapp.inbound import parse_events

FIXTURES = resources.files("frontdesk.ingestion.channels.whatsapp").joinpath("fixtures")
ACCOUNT = "wa-acct"
PHONE_NUMBER_ID = "106540352242922"
CONFIG = {"phone_number_id": PHONE_NUMBER_ID}


def fixture(name: str) -> bytes:
    return FIXTURES.joinpath(name).read_bytes()


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

EXPECTED: dict[str, list[dict[str, Any]]] = {
    "batch__three_images.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQUIxQzJEM0U0RjUwNjE3MjhBMQA=",
            "content_type": "image",
            "text": "[image: loading] Front, back and the envelope",
            "contact_name": "Sheena Nelson",
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "1111222233334444",
                "mime_type": "image/jpeg",
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQUIxQzJEM0U0RjUwNjE3MjhBMQA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416750",
                "caption": "Front, back and the envelope",
            },
        },
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQUIxQzJEM0U0RjUwNjE3MjhBMgA=",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": "Sheena Nelson",
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "1111222233335555",
                "mime_type": "image/jpeg",
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQUIxQzJEM0U0RjUwNjE3MjhBMgA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416750",
            },
        },
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQUIxQzJEM0U0RjUwNjE3MjhBMwA=",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": "Sheena Nelson",
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "1111222233336666",
                "mime_type": "image/jpeg",
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQUIxQzJEM0U0RjUwNjE3MjhBMwA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416751",
            },
        },
    ],
    "change__account_update.json": [{"type": "ignored", "reason": "account_update change"}],
    "change__platform_error.json": [
        {
            "type": "ignored",
            "reason": "platform error: 130429 Rate limit hit: Cloud API message throughput has been reached.",
        }
    ],
    "message__audio_file.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTdFMkQ0QzlCMUY1MEIzQTg0NAA=",
            "content_type": "audio",
            "text": "[audio message: being transcribed]",
            "contact_name": "Sheena Nelson",
            "status": "pending",
            "media": {
                "kind": "audio",
                "ref": "987654321098765",
                "mime_type": "audio/mpeg",
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTdFMkQ0QzlCMUY1MEIzQTg0NAA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416440",
            },
        }
    ],
    "message__button_reply.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQThCMkM1RTFEN0Y5M0M5RDM5OQA=",
            "content_type": "text",
            "text": "Yes, confirm",
            "contact_name": "Sheena Nelson",
            "status": "ready",
            "media": None,
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQThCMkM1RTFEN0Y5M0M5RDM5OQA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416540",
                "context_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJGNkMxRTJCOEEwRDQ0MTVDOUIA",
                "reply_id": "confirm_order",
            },
        }
    ],
    "message__contacts.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTBFNEI3QzFGOUE0OEFEMTdERAA=",
            "content_type": "text",
            "text": "[contact card: Barbara J. Johnson]",
            "contact_name": "Sheena Nelson",
            "status": "ready",
            "media": None,
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTBFNEI3QzFGOUE0OEFEMTdERAA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416625",
            },
        }
    ],
    "message__document.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTJGOEQxQzZFOUIwN0ExQjE3NwA=",
            "content_type": "file",
            "text": "[file: quote-request.pdf] Our order details",
            "contact_name": "Sheena Nelson",
            "status": "ready",
            "media": None,
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTJGOEQxQzZFOUIwN0ExQjE3NwA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416502",
            },
        }
    ],
    "message__document_image.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTZBMEI5RDNGNEMyRUI4QzI4OAA=",
            "content_type": "image",
            "text": "[image: loading] Poster draft, A2",
            "contact_name": "Sheena Nelson",
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "1398765432109876",
                "mime_type": "image/png",
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTZBMEI5RDNGNEMyRUI4QzI4OAA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416519",
                "caption": "Poster draft, A2",
            },
        }
    ],
    "message__group.json": [{"type": "ignored", "reason": "group message (text)"}],
    "message__image_caption.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTBDOUUxQjJGN0Q0NEE4MUUyMgA=",
            "content_type": "image",
            "text": "[image: loading] Can you print this logo on 200 mugs?",
            "contact_name": "Sheena Nelson",
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "1003383421387256",
                "mime_type": "image/jpeg",
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTBDOUUxQjJGN0Q0NEE4MUUyMgA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416401",
                "caption": "Can you print this logo on 200 mugs?",
            },
        }
    ],
    "message__list_reply.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTREOUU2RjJBOEIxNURBRTRBQQA=",
            "content_type": "text",
            "text": "Matte 350 gsm",
            "contact_name": "Sheena Nelson",
            "status": "ready",
            "media": None,
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTREOUU2RjJBOEIxNURBRTRBQQA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416561",
                "context_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJGNkMxRTJCOEEwRDQ0MTVDOUIA",
                "reply_id": "paper_matte_350",
            },
        }
    ],
    "message__location.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTVGMUE4QjRENkUzN0ZDMDZDQwA=",
            "content_type": "text",
            "text": "[location: Philz Coffee, 1 Hacker Way, Menlo Park, CA 94025 (37.483307, -122.148981)]",
            "contact_name": "Sheena Nelson",
            "status": "ready",
            "media": None,
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTVGMUE4QjRENkUzN0ZDMDZDQwA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416604",
            },
        }
    ],
    "message__no_wa_id.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "US.13491208655302741918",
            "channel_message_id": "wamid.HBgXVVMuMTM0OTEyMDg2NTUzMDI3NDE5MTgVAgASGBQzQTJEOEY1QTNCNEU4MkUxNUIxMQA=",
            "content_type": "text",
            "text": "Hi, is the shop open on Sunday?",
            "contact_name": "Jordan Lee",
            "status": "ready",
            "media": None,
            "metadata": {
                "wamid": "wamid.HBgXVVMuMTM0OTEyMDg2NTUzMDI3NDE5MTgVAgASGBQzQTJEOEY1QTNCNEU4MkUxNUIxMQA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1775212800",
                "user_id": "US.13491208655302741918",
            },
        }
    ],
    "message__other_phone_number.json": [{"type": "ignored", "reason": "another phone number"}],
    "message__reaction.json": [{"type": "ignored", "reason": "reaction"}],
    "message__reply_context.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTFDN0U0RjJBM0Q3MUQwNEEwMAA=",
            "content_type": "text",
            "text": "Yes, the second option please",
            "contact_name": "Sheena Nelson",
            "status": "ready",
            "media": None,
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTFDN0U0RjJBM0Q3MUQwNEEwMAA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416688",
                "context_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJGNkMxRTJCOEEwRDQ0MTVDOUIA",
            },
        }
    ],
    "message__sticker.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTFENkIzRjhFMkE0N0M1RDk1NQA=",
            "content_type": "sticker",
            "text": "[sticker]",
            "contact_name": "Sheena Nelson",
            "status": "ready",
            "media": None,
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTFENkIzRjhFMkE0N0M1RDk1NQA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416455",
            },
        }
    ],
    "message__template_button.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTNFN0YwQTlDNUQyNkVCRjVCQgA=",
            "content_type": "text",
            "text": "Change pickup time",
            "contact_name": "Sheena Nelson",
            "status": "ready",
            "media": None,
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTNFN0YwQTlDNUQyNkVCRjVCQgA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416583",
                "context_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJGNkMxRTJCOEEwRDQ0MTVDOUIA",
                "reply_id": "RESCHEDULE_PICKUP",
            },
        }
    ],
    "message__text.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQUFERjg0NDEzNDdFODU3MUMxMAA=",
            "content_type": "text",
            "text": "Do you print business cards on recycled paper?",
            "contact_name": "Sheena Nelson",
            "status": "ready",
            "media": None,
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQUFERjg0NDEzNDdFODU3MUMxMAA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416383",
            },
        }
    ],
    "message__unicode.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "84912345678",
            "channel_message_id": "wamid.HBgLODQ5MTIzNDU2NzgVAgASGBQzQTZFOUEwQjRDNUY5M0YyNkMyMgA=",
            "content_type": "text",
            "text": "Xin chào! Tôi muốn in 500 danh thiếp 🎉🖨️ — giá bao nhiêu ạ? 👨\u200d👩\u200d👧",
            "contact_name": "Nguyễn Thị Hương 🌸",
            "status": "ready",
            "media": None,
            "metadata": {
                "wamid": "wamid.HBgLODQ5MTIzNDU2NzgVAgASGBQzQTZFOUEwQjRDNUY5M0YyNkMyMgA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416730",
            },
        }
    ],
    "message__unsupported.json": [{"type": "ignored", "reason": "unsupported: poll_creation"}],
    "message__video.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTlDNEU3QTJCNUQzOEU2RjA2NgA=",
            "content_type": "video",
            "text": "[video] This is the banner size we need",
            "contact_name": "Sheena Nelson",
            "status": "ready",
            "media": None,
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTlDNEU3QTJCNUQzOEU2RjA2NgA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416470",
            },
        }
    ],
    "message__voice.json": [
        {
            "type": "message",
            "channel_account_id": "wa-acct",
            "contact_external_id": "16505551234",
            "channel_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTVCOEYwRTZEMkMxMUE0OUYzMwA=",
            "content_type": "voice",
            "text": "[voice note: being transcribed]",
            "contact_name": "Sheena Nelson",
            "status": "pending",
            "media": {
                "kind": "audio",
                "ref": "1220456789012345",
                "mime_type": "audio/ogg; codecs=opus",
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "wamid": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTVCOEYwRTZEMkMxMUE0OUYzMwA=",
                "phone_number_id": "106540352242922",
                "timestamp": "1749416422",
            },
        }
    ],
    "status__delivered.json": [
        {
            "type": "status",
            "channel_account_id": "wa-acct",
            "platform_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJCNkY5RTBDMUQyQTNCNEM1RDYA",
            "status": "delivered",
            "error": None,
        }
    ],
    "status__failed.json": [
        {
            "type": "status",
            "channel_account_id": "wa-acct",
            "platform_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJCNkY5RTBDMUQyQTNCNEM1RDYA",
            "status": "failed",
            "error": "131047 Re-engagement message: Message failed to send because more than 24 hours have passed "
            "since the customer last replied to this number.",
        }
    ],
    "status__played.json": [
        {
            "type": "status",
            "channel_account_id": "wa-acct",
            "platform_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJDN0EwRjFEMkUzQjRDNUQ2RTcA",
            "status": "played",
            "error": None,
        }
    ],
    "status__read.json": [
        {
            "type": "status",
            "channel_account_id": "wa-acct",
            "platform_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJCNkY5RTBDMUQyQTNCNEM1RDYA",
            "status": "read",
            "error": None,
        }
    ],
    "status__sent.json": [
        {
            "type": "status",
            "channel_account_id": "wa-acct",
            "platform_message_id": "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJCNkY5RTBDMUQyQTNCNEM1RDYA",
            "status": "sent",
            "error": None,
        }
    ],
}

MALFORMED = {
    "malformed__not_json.txt": True,  # not parseable at all
    "malformed__no_entry.json": False,  # JSON, but not the shape Meta sends
    "malformed__wrong_object.json": False,  # a Messenger body posted to the WhatsApp URL
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_becomes_exactly_its_snapshot_events(name: str) -> None:
    assert events(fixture(name)) == EXPECTED[name]


@pytest.mark.parametrize(("name", "malformed"), sorted(MALFORMED.items()))
def test_unreadable_body_is_a_payload_error(name: str, malformed: bool) -> None:
    with pytest.raises(PayloadError) as caught:
        parse_events(fixture(name), ACCOUNT, CONFIG)

    assert caught.value.malformed is malformed


def test_every_fixture_in_the_folder_is_checked() -> None:
    on_disk = {item.name for item in FIXTURES.iterdir() if item.is_file()}

    assert on_disk == set(EXPECTED) | set(MALFORMED)


# -- batching and filtering


def test_every_entry_and_every_change_of_one_post_is_read_in_order() -> None:
    text, status, account = (
        json.loads(fixture(n)) for n in ("message__text.json", "status__read.json", "change__account_update.json")
    )
    text["entry"][0]["changes"] += status["entry"][0]["changes"]
    text["entry"] += account["entry"]

    parsed = events(json.dumps(text).encode())

    assert parsed == [
        *EXPECTED["message__text.json"],
        *EXPECTED["status__read.json"],
        *EXPECTED["change__account_update.json"],
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
        *EXPECTED["message__text.json"],
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
