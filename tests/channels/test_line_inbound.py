"""LINE inbound parsing: every fixture (real webhook bodies) against a snapshot of the events we make."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frontdesk.errors import ConfigError, PayloadError
from frontdesk.ingestion.channels.line.inbound import parse_events

FIXTURES = resources.files("frontdesk.ingestion.channels.line").joinpath("fixtures")
ACCOUNT = "line-acct"
BOT = "U3f9c2a7e81b64d05a9e7c1d2b4f6a8c0"
CONFIG = {"destination": BOT}


def fixture(name: str) -> bytes:
    """A webhook body from the channel's fixtures folder, byte for byte as LINE would POST it."""
    return FIXTURES.joinpath(name).read_bytes()


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

EXPECTED: dict[str, list[dict[str, Any]]] = {
    "batch__image_set.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHG4FECYFG4HPDSNDHQVZEC",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": None,
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "529882693084981085",
                "mime_type": None,
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "line_message_id": "529882693084981085",
                "reply_token": "b6a1d2d237042e1b9c6e100ceb99e287",
                "event_timestamp": 1717500526028,
                "redelivery": False,
                "mark_as_read_token": "65t6ZVJ8ENUAzHU7QZxoP_qx1ccnK6qjq517xLawfDVv",
                "quote_token": "ylvT1ng8ASaMJRyeBSP7rtGNub_0vtUOnakfh3DNphXodj6Er2hQBZMBWTGyPYD6",
                "image_set": {
                    "id": "E005D41A7288F41B65593ED38FF6E9834B046AB36A37921A56BC236F13A91855",
                    "index": 1,
                    "total": 3,
                },
            },
        },
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHG4FSAE5Y7Q6X1V0XPZA9W",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": None,
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "520581952987616758",
                "mime_type": None,
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "line_message_id": "520581952987616758",
                "reply_token": "25a2a84da5bef2bf2cfd46b561cc7380",
                "event_timestamp": 1717500526378,
                "redelivery": False,
                "mark_as_read_token": "JI80hJvhnp0qLdMzreisep0bbB0S_cTKTt_WRPxkJbmw",
                "quote_token": "mgrebY4r1LhR4V-aDxJSTV5pVAavSQT_pZr3Y49fVcaAOUoMnOVQJhJahBhfyxGA",
                "image_set": {
                    "id": "E005D41A7288F41B65593ED38FF6E9834B046AB36A37921A56BC236F13A91855",
                    "index": 2,
                    "total": 3,
                },
            },
        },
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHG4G48NG917V2W11EPMH72",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": None,
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "523357244429920683",
                "mime_type": None,
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "line_message_id": "523357244429920683",
                "reply_token": "779e359822f90714b7f938c301e24ce8",
                "event_timestamp": 1717500526728,
                "redelivery": False,
                "mark_as_read_token": "5Iwg7OT-GkwMnvgmSfRfB97JVpwRWy7ntjL5DQjJoUIl",
                "quote_token": "4tnMsYKcFMEw_FtjB39-QTMgeZGDGoBu8KO4_x5nnR2uag9wFJZ9Drd2282ANT88",
                "image_set": {
                    "id": "E005D41A7288F41B65593ED38FF6E9834B046AB36A37921A56BC236F13A91855",
                    "index": 3,
                    "total": 3,
                },
            },
        },
    ],
    "event__unknown_type.json": [{"type": "ignored", "reason": "chatReaction event"}],
    "follow__user.json": [{"type": "ignored", "reason": "follow event"}],
    "message__audio.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHG849EPSKQH36HZ2T5NA8M",
            "content_type": "audio",
            "text": "[audio message: being transcribed]",
            "contact_name": None,
            "status": "pending",
            "media": {
                "kind": "audio",
                "ref": "529363665890682536",
                "mime_type": None,
                "size": None,
                "duration_s": 7.36,
            },
            "metadata": {
                "line_message_id": "529363665890682536",
                "reply_token": "fcf5817def6a59be6b983a4a5a6ec292",
                "event_timestamp": 1717500645678,
                "redelivery": False,
                "mark_as_read_token": "QxIHXjq5QmqXZOS7LLdBiR8FSoqP3ewSs6blcsQbp1-T",
            },
        }
    ],
    "message__file.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHGBSFE9H2KDXAEEQAXN5ZT",
            "content_type": "file",
            "text": "[file: booking_request_June.pdf]",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "line_message_id": "517329029237907754",
                "reply_token": "9097a9ad090c5f52d1c1af24ae10f9c7",
                "event_timestamp": 1717500765678,
                "redelivery": False,
                "mark_as_read_token": "DMIHOBj354e30r0OgXSOK08Bukggiry4VOBsjd8VPVDv",
            },
        }
    ],
    "message__group.json": [{"type": "ignored", "reason": "group chat"}],
    "message__image.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHG2MGENYXE9VWYBVTYJ9F2",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": None,
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "509034613081082804",
                "mime_type": None,
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "line_message_id": "509034613081082804",
                "reply_token": "a75981de63b9e9981c1488647a7c4219",
                "event_timestamp": 1717500465678,
                "redelivery": False,
                "mark_as_read_token": "DzKO31XRHnSEmhsrbdh-1KV0Rzf1iVHaTrKJeKEfEw6P",
                "quote_token": "2odGU7c0HuAq12cGGNLERvquwaCWhgWDz1me1CPWhppXZ50yq18zxjA1r9c-sOvm",
            },
        }
    ],
    "message__image_external.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHG69PEPA4TEK1VJR1BPBZV",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": None,
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "https://cdn.example.com/line/share/7f3a9c2e/original.jpg",
                "mime_type": None,
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "line_message_id": "500037975533669353",
                "reply_token": "c8efadd0740123ea72afed92276255be",
                "event_timestamp": 1717500585678,
                "redelivery": False,
                "mark_as_read_token": "M_j9g7kSBlwwKfcOiEQKLaifPmV-q0rACCmKIT2w7UbO",
                "quote_token": "IxX7EOAlTlS172iRGE4SInH9jh8KlWyWfQPl7QNkYWB9GXpsOP4MWC2xCWnIS2YV",
            },
        }
    ],
    "message__image_set_1.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHG4FECYFG4HPDSNDHQVZEC",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": None,
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "529882693084981085",
                "mime_type": None,
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "line_message_id": "529882693084981085",
                "reply_token": "b6a1d2d237042e1b9c6e100ceb99e287",
                "event_timestamp": 1717500526028,
                "redelivery": False,
                "mark_as_read_token": "65t6ZVJ8ENUAzHU7QZxoP_qx1ccnK6qjq517xLawfDVv",
                "quote_token": "ylvT1ng8ASaMJRyeBSP7rtGNub_0vtUOnakfh3DNphXodj6Er2hQBZMBWTGyPYD6",
                "image_set": {
                    "id": "E005D41A7288F41B65593ED38FF6E9834B046AB36A37921A56BC236F13A91855",
                    "index": 1,
                    "total": 3,
                },
            },
        }
    ],
    "message__image_set_2.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHG4FSAE5Y7Q6X1V0XPZA9W",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": None,
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "520581952987616758",
                "mime_type": None,
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "line_message_id": "520581952987616758",
                "reply_token": "25a2a84da5bef2bf2cfd46b561cc7380",
                "event_timestamp": 1717500526378,
                "redelivery": False,
                "mark_as_read_token": "JI80hJvhnp0qLdMzreisep0bbB0S_cTKTt_WRPxkJbmw",
                "quote_token": "mgrebY4r1LhR4V-aDxJSTV5pVAavSQT_pZr3Y49fVcaAOUoMnOVQJhJahBhfyxGA",
                "image_set": {
                    "id": "E005D41A7288F41B65593ED38FF6E9834B046AB36A37921A56BC236F13A91855",
                    "index": 2,
                    "total": 3,
                },
            },
        }
    ],
    "message__image_set_3.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHG4G48NG917V2W11EPMH72",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": None,
            "status": "pending",
            "media": {
                "kind": "image",
                "ref": "523357244429920683",
                "mime_type": None,
                "size": None,
                "duration_s": None,
            },
            "metadata": {
                "line_message_id": "523357244429920683",
                "reply_token": "779e359822f90714b7f938c301e24ce8",
                "event_timestamp": 1717500526728,
                "redelivery": False,
                "mark_as_read_token": "5Iwg7OT-GkwMnvgmSfRfB97JVpwRWy7ntjL5DQjJoUIl",
                "quote_token": "4tnMsYKcFMEw_FtjB39-QTMgeZGDGoBu8KO4_x5nnR2uag9wFJZ9Drd2282ANT88",
                "image_set": {
                    "id": "E005D41A7288F41B65593ED38FF6E9834B046AB36A37921A56BC236F13A91855",
                    "index": 3,
                    "total": 3,
                },
            },
        }
    ],
    "message__location.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHGFENEBZCDVTZWGR9QW7V9",
            "content_type": "text",
            "text": "[location: Tokyo Garden Terrace Kioicho, 1-2 Kioicho, Chiyoda City, Tokyo 102-0094, Japan "
            "(35.67966, 139.73669)]",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "line_message_id": "519806840161295877",
                "reply_token": "31a9c2cde275a26c6c8247821492eec7",
                "event_timestamp": 1717500885678,
                "redelivery": False,
                "mark_as_read_token": "XAwBGXcSmnEnPM-SaNZ-RAgrE3rEAaHyhoNK3OMGcdR0",
            },
        }
    ],
    "message__other_destination.json": [{"type": "ignored", "reason": "another bot"}],
    "message__redelivery.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHFYZAETJ4FBJ64DGFJHY8D",
            "content_type": "text",
            "text": "Hi! Do you have a table for two tonight at 7?",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "line_message_id": "517156908521905551",
                "reply_token": "fdc776a0854f704d3b32e197393bd542",
                "event_timestamp": 1717500345678,
                "redelivery": True,
                "mark_as_read_token": "ouK5YJz0erCXg1QuGQZtHs9-CC8sC_BXgTc2u-IaI8XM",
                "quote_token": "Avuqv0UXXF_XV_MKPX9dzD7Hl-0SaeHrLdtTUfxDqCh9U73y2F1IcBe1y8-jA-Vc",
            },
        }
    ],
    "message__standby.json": [{"type": "ignored", "reason": "standby"}],
    "message__sticker.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHGDM2E1Q57K2F4DP5FQG8J",
            "content_type": "sticker",
            "text": "[sticker: cony]",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "line_message_id": "506699994111317358",
                "reply_token": "7f986b7ec8c9c59165a71050ac169c2f",
                "event_timestamp": 1717500825678,
                "redelivery": False,
                "mark_as_read_token": "NrcJxFg4KsBLzJDYT-Dsj4nRzqndcgcMJMwg4xdSRwBS",
                "quote_token": "NKxtDbRApb4g3aav8ve5XolEr5xb0laQIvuhx3sr0KLsAKAABXwctLbPJkTzpdTf",
            },
        }
    ],
    "message__sticker_message_text.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHGDXTYF0AC4MXTAN8SY0ED",
            "content_type": "sticker",
            "text": "[sticker: See you at 7!]",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "line_message_id": "509584981866254430",
                "reply_token": "3a1f80abdffa1870f1e450be67bdcc19",
                "event_timestamp": 1717500835678,
                "redelivery": False,
                "mark_as_read_token": "TNBMxXA2bc8r2tSZClin6hkNlTjOKZCPT6Qq76k-aJ0i",
                "quote_token": "O4nqY4JVgbqvhnRGuCG9HxXAY3o-1JqVW78c5_Kjw2LMZloBVVmZ_EHnzZqvpB_C",
            },
        }
    ],
    "message__text.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHFYZAETJ4FBJ64DGFJHY8D",
            "content_type": "text",
            "text": "Hi! Do you have a table for two tonight at 7?",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "line_message_id": "517156908521905551",
                "reply_token": "fdc776a0854f704d3b32e197393bd542",
                "event_timestamp": 1717500345678,
                "redelivery": False,
                "mark_as_read_token": "ouK5YJz0erCXg1QuGQZtHs9-CC8sC_BXgTc2u-IaI8XM",
                "quote_token": "Avuqv0UXXF_XV_MKPX9dzD7Hl-0SaeHrLdtTUfxDqCh9U73y2F1IcBe1y8-jA-Vc",
            },
        }
    ],
    "message__text_emoji.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHG0TWP8DT45FKMKABCAB0T",
            "content_type": "text",
            "text": "Thank you so much (love)",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "line_message_id": "507088444583979141",
                "reply_token": "461060c7f9c04bb99015fe05bacc2e0f",
                "event_timestamp": 1717500406678,
                "redelivery": False,
                "mark_as_read_token": "KFltrsGlp1RrSHesVbNoOD9mdwit9w4yGLcp8IJZYTBC",
                "quote_token": "60OwhyEyiEoYITdWdiwr4eLC_o7mwT2yvjUgDX0YXye2s4MxghwpoegjaHHG3mnG",
            },
        }
    ],
    "message__unicode.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHGTE7E05JGH7JEEMZ2A149",
            "content_type": "text",
            "text": "予約できますか\uff1f\nCafé ☕ for 👨\u200d👩\u200d👧 , ราคาเท่าไหร่ ok?",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "line_message_id": "521675305527832119",
                "reply_token": "1731400d5004f0b0948b222e4cb2a38c",
                "event_timestamp": 1717501245678,
                "redelivery": False,
                "mark_as_read_token": "c-N4AbmUE8W6gkB7lRtd5e8C5paDZohKqLxGt8acujcb",
                "quote_token": "J2LF93yAOikFwMcrFMeB7RrKkYKdoGGfWmtN_yxHO2kC7ADoanSA2gYnruNzwfvF",
            },
        }
    ],
    "message__unknown_type.json": [{"type": "ignored", "reason": "hologram message"}],
    "message__video.json": [
        {
            "type": "message",
            "channel_account_id": "line-acct",
            "contact_external_id": "U4af4980629c1b7e2d5f8a0c3e6b9d2f1",
            "channel_message_id": "01HZHG9YWE9RGH0DZW2DM77EQG",
            "content_type": "video",
            "text": "[video]",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "line_message_id": "516521439974146528",
                "reply_token": "fec4b52ec8f63a7e40f59d84a4a4db87",
                "event_timestamp": 1717500705678,
                "redelivery": False,
                "mark_as_read_token": "h1iVB8kKNE8JlbLXISpZl9S4OgdEivU6PmGTzJnznQt1",
                "quote_token": "XpHNr0SaRsDeXaXBRlmGRzBuO2Xl9URYapzRsFlm6IyfOltRvtuq1yNXxCQFvTbb",
            },
        }
    ],
    "postback__button.json": [{"type": "ignored", "reason": "postback event"}],
    "unfollow__user.json": [{"type": "ignored", "reason": "unfollow event"}],
    "unsend__user.json": [{"type": "ignored", "reason": "unsend event"}],
    "verification__empty_events.json": [],
}


MALFORMED = {
    "malformed__not_json.txt": True,
    "malformed__no_events.json": False,
    "malformed__events_not_list.json": False,
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_parses_to_its_snapshot(name: str):
    assert dumped(fixture(name)) == EXPECTED[name]


@pytest.mark.parametrize(("name", "malformed"), sorted(MALFORMED.items()))
def test_malformed_fixture_is_a_payload_error(name: str, malformed: bool):
    with pytest.raises(PayloadError) as caught:
        parse_events(fixture(name), ACCOUNT, CONFIG)

    assert caught.value.malformed is malformed


def test_every_fixture_has_a_snapshot_or_an_expected_error():
    on_disk = {entry.name for entry in FIXTURES.iterdir() if entry.is_file()}

    assert on_disk == set(EXPECTED) | set(MALFORMED)


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
