"""What a customer message becomes in our store, whatever platform it came from."""

from __future__ import annotations

import pytest

from frontdesk.ingestion.events import MediaRef
from frontdesk.ingestion.modality import message_event, normalise_text, placeholder

IDS = {"channel_account_id": "acct", "contact_external_id": "c1", "channel_message_id": "m1"}


@pytest.mark.parametrize(
    ("raw", "markup", "stored"),
    [
        ("  hello   there \r\n\r\n\r\n\r\nbye ", "plain", "hello there\n\nbye"),
        ("<p>Hi <b>Ann</b> &amp; co</p><p>2&nbsp;cards<br>please</p>", "html", "Hi Ann & co\n2 cards\nplease"),
        ("<b>typed by a customer</b>", "plain", "<b>typed by a customer</b>"),
        ("nul\x00 and bell\x07 gone", "plain", "nul and bell gone"),
        ("Cafe\u0301 Vie\u0323\u0302t", "plain", "Caf\u00e9 Vi\u1ec7t"),  # NFC: one code point per letter
    ],
)
def test_text_is_normalised_before_it_is_stored(raw, markup, stored):
    assert normalise_text(raw, markup=markup) == stored


def test_a_blank_text_message_is_ignored_not_stored():
    event = message_event(**IDS, text=" \n\t ")
    assert (event.type, event.reason) == ("ignored", "empty message")


def test_an_image_with_a_reference_is_stored_pending_with_its_caption():
    event = message_event(**IDS, content_type="image", text="like this", media=MediaRef(kind="image", ref="f1"))
    assert event.model_dump() == {
        "type": "message",
        **IDS,
        "content_type": "image",
        "text": "[image: loading] like this",
        "contact_name": None,
        "status": "pending",
        "media": {"kind": "image", "ref": "f1", "mime_type": None, "size": None, "duration_s": None},
        "metadata": {"caption": "like this"},
    }


def test_a_voice_note_is_pending_with_a_placeholder():
    event = message_event(**IDS, content_type="voice", media=MediaRef(kind="audio", ref="v1"))
    assert (event.status, event.text) == ("pending", "[voice note: being transcribed]")


def test_media_that_cannot_be_fetched_is_still_stored_so_it_can_be_acknowledged():
    event = message_event(**IDS, content_type="image")
    assert (event.type, event.status, event.text) == ("message", "ready", "[image: not available]")


@pytest.mark.parametrize(
    ("content_type", "label", "caption", "stored"),
    [
        ("sticker", "😀", None, "[sticker: 😀]"),
        ("video", None, "our shop", "[video] our shop"),
        ("file", "menu.pdf", None, "[file: menu.pdf]"),
        ("file", "a\x00b" + "x" * 300, None, "[file: ab" + "x" * 118 + "]"),
    ],
)
def test_stickers_videos_and_files_become_labelled_placeholders(content_type, label, caption, stored):
    event = message_event(**IDS, content_type=content_type, label=label, text=caption)
    assert (event.status, event.text, event.media) == ("ready", stored, None)


def test_placeholder_names_read_like_words():
    assert placeholder("voice", note="being transcribed") == "[voice note: being transcribed]"
    assert placeholder("audio") == "[audio message]"
