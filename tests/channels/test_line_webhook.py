"""LINE end to end: real fixtures signed and posted to our webhook over loopback HTTP, the exact
Messaging API calls our reply makes recorded by the platform double."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time
import uuid
from typing import Any

import pytest
from fake_line import TOKEN, FakeLine
from live import Live, live_channel
from snapshot import read_fixture
from sqlalchemy import select

from frontdesk.ingestion.channels.line.renderer import retry_key
from frontdesk.output.blocks import ImageGroupBlock, TextBlock
from frontdesk.output.rendering import DeliveryTarget
from frontdesk.platform.store.schema import DeliveryPart, Message, Receipt, TurnTrace
from harness import count, receipts

ACCOUNT = "line-bistro-01"
SECRET = "8c3f1d2e9a7b4c6d0e5f1a2b3c4d5e6f"
BOT = "U3f9c2a7e81b64d05a9e7c1d2b4f6a8c0"
USER = "U4af4980629c1b7e2d5f8a0c3e6b9d2f1"
URL = f"/webhooks/line/{ACCOUNT}"
TEXT_TOKEN = "fdc776a0854f704d3b32e197393bd542"  # message__text.json's replyToken
PHOTO = b"\xff\xd8\xff\xe0" + b"jpeg-bytes" * 50
VOICE = b"\x00\x00\x00\x20ftypM4A " + b"\x00m4a" * 200
IMAGE_IDS = {
    "message__image.json": ["509034613081082804"],
    "message__image_set_1.json": ["529882693084981085"],
    "batch__image_set.json": ["529882693084981085", "520581952987616758", "523357244429920683"],
}
AUDIO_ID = "529363665890682536"

HELLO = {"name": "hello", "default": [{"reply": "Hello from the bistro!"}]}
HELLO_TEXT = {"type": "text", "text": "Hello from the bistro!"}


def fixture(name: str) -> bytes:
    return read_fixture("line", name)


def fresh(raw: bytes) -> bytes:
    """The body as if LINE sent it just now: every event's ``timestamp`` is now (its reply token is
    usable); nothing else changes."""
    now_ms = str(int(time.time() * 1000)).encode()
    return re.sub(rb'"timestamp": \d+', b'"timestamp": ' + now_ms, raw)


def sign(raw: bytes, secret: str = SECRET) -> str:
    return base64.b64encode(hmac.new(secret.encode(), raw, hashlib.sha256).digest()).decode()


def line(db, tmp_path, chat=HELLO, transcription=None, **settings):
    return live_channel(
        db,
        tmp_path,
        FakeLine(),
        channel="line",
        account_id=ACCOUNT,
        config={"destination": BOT},
        secrets={"channel_secret": SECRET, "channel_access_token": TOKEN},
        chat=chat,
        transcription=transcription,
        # The double serves external images on loopback: allowed, as a deployer allows a host of its
        # own network; tests/hostile/test_outbound_guard.py shows the refusals.
        **{"outbound_allow": ["127.0.0.1"], **settings},
    )


async def post(live: Live, raw: bytes, signature: str | None = "sign"):
    headers = {"Content-Type": "application/json"}
    if signature is not None:
        headers["X-Line-Signature"] = sign(raw) if signature == "sign" else signature
    return await live.http.post(URL, content=raw, headers=headers)


def outbound(live: Live) -> list[tuple[str, str | None, Any]]:
    """What was sent to the customer: (reply|push, retry key, body), failed calls included."""
    return [
        (c.endpoint, c.headers.get("x-line-retry-key"), c.body)
        for c in live.platform.calls
        if c.endpoint in ("reply", "push")
    ]


def key(receipt: Receipt, seq: int) -> str:
    """The retry key the renderer derives for part ``seq`` of a delivery."""
    target = DeliveryTarget("line", ACCOUNT, receipt.conversation_id, USER, receipt.message_id or 0)
    return retry_key(target, seq)


def image(url: str) -> dict[str, str]:
    return {"type": "image", "originalContentUrl": url, "previewImageUrl": url}


def now_context(token: str) -> dict[str, Any]:
    return {"reply_token": token, "event_timestamp": int(time.time() * 1000)}


async def start_conversation(live: Live, db) -> None:
    """A first customer message (stale, so answered by push) and its reply, then a clean record."""
    await post(live, fixture("message__text.json"))
    await live.idle()
    live.platform.calls.clear()
    live.platform.delivered.clear()


# -- the webhook


async def test_a_text_message_is_answered_with_its_reply_token(db, tmp_path):
    async with line(db, tmp_path) as live:
        response = await post(live, fresh(fixture("message__text.json")))
        assert (response.status_code, response.json()) == (200, {"ok": True, "stored": 1})
        await live.idle()

        assert outbound(live) == [("reply", None, {"replyToken": TEXT_TOKEN, "messages": [HELLO_TEXT]})]
        loading = [c for c in live.platform.calls if c.path == "/v2/bot/chat/loading/start"]
        assert [c.body for c in loading[:1]] == [{"chatId": USER, "loadingSeconds": 20}]
        assert all(c.headers["authorization"] == f"Bearer {TOKEN}" for c in live.platform.calls)
        (receipt,) = await receipts(db)
        assert (receipt.status, receipt.sent_text, receipt.sent_image) == ("sent", 1, 0)
        async with db.read() as session:
            (part,) = await session.scalars(select(DeliveryPart))
        assert (part.kind, part.platform_message_ids) == ("batch", ["600000000000000001"])


def _serve_media(live: Live, name: str, raw: bytes) -> bytes:
    """Put the fixture's media on the double; an external URL is pointed at the double too."""
    for message_id in IMAGE_IDS.get(name, []):
        live.platform.media[message_id] = (PHOTO, "image/jpeg")
    live.platform.media[AUDIO_ID] = (VOICE, "audio/x-m4a")
    live.platform.media["/cdn/original.jpg"] = (PHOTO, "image/jpeg")
    return raw.replace(
        b"https://cdn.example.com/line/share/7f3a9c2e/original.jpg",
        b"%s/cdn/original.jpg" % (live.platform.base_url.encode()),
    )


STORED = {
    "message__text.json": [("text", "Hi! Do you have a table for two tonight at 7?")],
    "message__redelivery.json": [("text", "Hi! Do you have a table for two tonight at 7?")],
    "message__text_emoji.json": [("text", "Thank you so much (love)")],
    "message__unicode.json": [("text", "予約できますか\uff1f\nCafé ☕ for 👨\u200d👩\u200d👧 , ราคาเท่าไหร่ ok?")],
    "message__location.json": [
        (
            "text",
            "[location: Tokyo Garden Terrace Kioicho, 1-2 Kioicho, Chiyoda City, Tokyo 102-0094, Japan"
            " (35.67966, 139.73669)]",
        )
    ],
    "message__sticker.json": [("sticker", "[sticker: cony]")],
    "message__sticker_message_text.json": [("sticker", "[sticker: See you at 7!]")],
    "message__video.json": [("video", "[video]")],
    "message__file.json": [("file", "[file: booking_request_June.pdf]")],
    "message__image.json": [("image", "[image]")],
    "message__image_set_1.json": [("image", "[image]")],
    "message__image_external.json": [("image", "[image]")],
    "message__audio.json": [("audio", "[voice note] a table for two at seven")],
    "batch__image_set.json": [("image", "[image]")] * 3,
}
TRANSCRIPT = {
    "name": "transcriber",
    "default": [
        {
            "tool": "transcript",
            "args": {
                "text": "a table for two at seven",
                "quality": "ok",
                "unclear_spans": [],
                "detected_language": "en",
            },
        }
    ],
}


@pytest.mark.parametrize("name", sorted(STORED))
async def test_every_supported_message_is_stored_prepared_and_answered(db, tmp_path, name):
    async with line(db, tmp_path, transcription=TRANSCRIPT) as live:
        raw = _serve_media(live, name, fresh(fixture(name)))
        response = await post(live, raw)
        assert (response.status_code, response.json()) == (200, {"ok": True, "stored": len(STORED[name])})
        await live.idle()

        rows = await live.messages()
        assert [(r.content_type, r.content) for r in rows] == STORED[name]
        assert all(r.status == "ready" for r in rows)
        for row in rows:
            if row.content_type in ("image", "audio"):
                stored = PHOTO if row.content_type == "image" else VOICE
                assert (tmp_path / "media" / row.meta["media_key"]).read_bytes() == stored
        assert [body["messages"] for _, _, body in outbound(live)] == [[HELLO_TEXT]]


@pytest.mark.parametrize(
    "name",
    [
        "follow__user.json",
        "unfollow__user.json",
        "postback__button.json",
        "unsend__user.json",
        "message__standby.json",
        "message__group.json",
        "message__other_destination.json",
        "message__unknown_type.json",
        "event__unknown_type.json",
    ],
)
async def test_events_we_do_not_answer_get_200_and_nothing_happens(db, tmp_path, name):
    async with line(db, tmp_path) as live:
        response = await post(live, fresh(fixture(name)))
        await live.idle()

        assert (response.status_code, response.json()) == (200, {"ok": True, "ignored": 1})
        assert await count(db, Message) == 0
        assert live.platform.calls == []


async def test_the_verify_ping_with_no_events_gets_200(db, tmp_path):
    async with line(db, tmp_path) as live:
        response = await post(live, fixture("verification__empty_events.json"))

        assert (response.status_code, response.json()) == (200, {"ok": True})
        assert await count(db, Message) == 0
        assert live.platform.calls == []


@pytest.mark.parametrize(
    "signature",
    [
        None,
        "",
        "not-base64!",
        sign(fixture("message__text.json"), "another-channels-secret"),
        sign(fixture("message__text.json") + b" "),  # signed, but for other bytes
    ],
    ids=["missing", "empty", "garbage", "other-secret", "other-body"],
)
async def test_a_forged_or_missing_signature_is_refused_and_nothing_is_stored(db, tmp_path, signature):
    async with line(db, tmp_path) as live:
        response = await post(live, fixture("message__text.json"), signature=signature)
        await live.idle()

        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
        assert await count(db, Message) == 0
        assert live.platform.calls == []


async def test_an_unknown_account_is_404_and_another_channels_account_too(db, tmp_path):
    async with line(db, tmp_path) as live:
        raw = fixture("message__text.json")
        headers = {"X-Line-Signature": sign(raw)}
        unknown = await live.http.post("/webhooks/line/no-such-acct", content=raw, headers=headers)
        webchat = await live.http.post("/webhooks/line/demo-webchat", content=raw, headers=headers)

        assert (unknown.status_code, webchat.status_code) == (404, 404)
        assert await count(db, Message) == 0


async def test_a_malformed_body_is_a_4xx_never_a_5xx(db, tmp_path):
    async with line(db, tmp_path) as live:
        statuses = [
            (await post(live, fixture(name))).status_code
            for name in ("malformed__not_json.txt", "malformed__no_events.json", "malformed__events_not_list.json")
        ]

        assert statuses == [400, 422, 422]
        assert await count(db, Message) == 0


async def test_a_redelivered_event_stores_nothing_and_sends_nothing_new(db, tmp_path):
    async with line(db, tmp_path) as live:
        await post(live, fresh(fixture("message__text.json")))
        await live.idle()
        again = await post(live, fresh(fixture("message__redelivery.json")))
        await live.idle()

        assert (again.status_code, again.json()) == (200, {"ok": True, "duplicate": 1})
        assert await count(db, Message, Message.role == "user") == 1
        assert [endpoint for endpoint, _, _ in outbound(live)] == ["reply"]


async def test_an_image_set_of_three_is_three_rows_and_one_turn(db, tmp_path):
    async with line(db, tmp_path) as live:
        raw = _serve_media(live, "batch__image_set.json", fresh(fixture("batch__image_set.json")))
        response = await post(live, raw)
        await live.idle()

        assert response.json() == {"ok": True, "stored": 3}
        rows = await live.messages()
        assert [(r.status, r.meta["image_set"]["index"]) for r in rows] == [("ready", 1), ("ready", 2), ("ready", 3)]
        assert await count(db, TurnTrace) == 1
        # One answer, with the newest message's reply token.
        assert outbound(live) == [
            ("reply", None, {"replyToken": "779e359822f90714b7f938c301e24ce8", "messages": [HELLO_TEXT]})
        ]


# -- replies: reply token, push, batches of five


async def test_a_stale_reply_token_is_never_tried_the_reply_is_pushed(db, tmp_path):
    async with line(db, tmp_path) as live:
        await post(live, fixture("message__text.json"))  # its timestamp is from 2024
        await live.idle()

        (receipt,) = await receipts(db)
        assert outbound(live) == [("push", key(receipt, 0), {"to": USER, "messages": [HELLO_TEXT]})]
        assert receipt.status == "sent"


async def test_a_refused_reply_token_falls_back_to_push_and_the_customer_gets_the_reply_once(db, tmp_path):
    async with line(db, tmp_path) as live:
        live.platform.refused_tokens.add(TEXT_TOKEN)
        await post(live, fresh(fixture("message__text.json")))
        await live.idle()

        (receipt,) = await receipts(db)
        assert outbound(live) == [
            ("reply", None, {"replyToken": TEXT_TOKEN, "messages": [HELLO_TEXT]}),
            ("push", key(receipt, 0), {"to": USER, "messages": [HELLO_TEXT]}),
        ]
        assert live.platform.delivered == [{"how": "push", "to": USER, "messages": [HELLO_TEXT]}]
        assert (receipt.status, receipt.errors) == ("sent", [])


async def test_an_album_of_three_images_is_one_reply_with_the_caption_after_them(db, tmp_path):
    async with line(db, tmp_path) as live:
        await start_conversation(live, db)
        urls = [f"https://bistro.example/p/{i}.jpg" for i in (1, 2, 3)]

        status = await live.deliver(
            USER, [ImageGroupBlock(urls=urls, caption="Tonight's specials")], now_context("tok-3")
        )

        assert status == "sent"
        messages = [*map(image, urls), {"type": "text", "text": "Tonight's specials"}]
        assert outbound(live) == [("reply", None, {"replyToken": "tok-3", "messages": messages})]
        receipt = (await receipts(db))[-1]
        assert (receipt.sent_text, receipt.sent_image, receipt.parts_total) == (1, 3, 1)


async def test_seven_images_are_a_reply_of_five_then_a_push_of_the_rest_and_the_caption(db, tmp_path):
    async with line(db, tmp_path) as live:
        await start_conversation(live, db)
        urls = [f"https://bistro.example/p/{i}.jpg" for i in range(1, 8)]

        status = await live.deliver(USER, [ImageGroupBlock(urls=urls, caption="Our menu")], now_context("tok-7"))

        assert status == "sent"
        receipt = (await receipts(db))[-1]
        assert outbound(live) == [
            ("reply", None, {"replyToken": "tok-7", "messages": [image(u) for u in urls[:5]]}),
            (
                "push",
                key(receipt, 1),
                {"to": USER, "messages": [image(urls[5]), image(urls[6]), {"type": "text", "text": "Our menu"}]},
            ),
        ]
        assert (receipt.sent_text, receipt.sent_image, receipt.parts_total) == (1, 7, 2)


BAD_REQUEST = (
    400,
    {
        "message": "The request body has 1 error(s)",
        "details": [{"message": "invalid uri", "property": "messages[0].originalContentUrl"}],
    },
)


async def test_a_failing_image_call_ends_partial_and_a_replay_pushes_only_that_part_with_its_retry_key(db, tmp_path):
    async with line(db, tmp_path) as live:
        await start_conversation(live, db)
        urls = [f"https://bistro.example/p/{i}.jpg" for i in range(1, 8)]
        blocks = [TextBlock(text="Here is our menu:"), ImageGroupBlock(urls=urls)]
        live.platform.fail_when = lambda call: BAD_REQUEST if call.endpoint == "push" else None

        status = await live.deliver(USER, blocks, now_context("tok-fail"))

        assert status == "partial"
        receipt = (await receipts(db))[-1]
        assert (receipt.sent_text, receipt.sent_image) == (1, 4)
        assert receipt.errors == [
            {
                "seq": 1,
                "block": 1,
                "kind": "batch",
                "error": "ChannelAPIError: HTTP 400: The request body has 1 error(s) "
                "(messages[0].originalContentUrl: invalid uri)",
            }
        ]
        assert TOKEN not in str(receipt.errors)

        live.platform.fail_when = None
        assert await live.runtime.deliverer.replay(receipt.id) == "sent"
        pushed = {"to": USER, "messages": [image(u) for u in urls[4:]]}
        assert outbound(live) == [
            (
                "reply",
                None,
                {
                    "replyToken": "tok-fail",
                    "messages": [{"type": "text", "text": "Here is our menu:"}, *map(image, urls[:4])],
                },
            ),
            ("push", key(receipt, 1), pushed),  # refused
            ("push", key(receipt, 1), pushed),  # the replay: the same call, the same retry key
        ]
        assert [d["how"] for d in live.platform.delivered] == ["reply", "push"]


async def test_a_replay_of_a_push_line_had_already_taken_is_not_shown_twice(db, tmp_path):
    async with line(db, tmp_path) as live:
        await start_conversation(live, db)

        def taken_but_answer_lost(call):
            if call.endpoint != "push":
                return None
            live.platform.accepted_retry_keys.add(call.headers["x-line-retry-key"])
            live.platform.delivered.append({"how": "push", **call.body})
            return 500, {"message": "Internal server error"}

        live.platform.fail_when = taken_but_answer_lost
        status = await live.deliver(USER, [TextBlock(text="Your table is booked.")])  # no reply token: push
        assert status == "failed"
        live.platform.fail_when = None

        receipt = (await receipts(db))[-1]
        assert await live.runtime.deliverer.replay(receipt.id) == "sent"
        assert [(e, k) for e, k, _ in outbound(live)] == [("push", key(receipt, 0)), ("push", key(receipt, 0))]
        assert len(live.platform.delivered) == 1  # LINE answered the replay 409: already shown


async def test_a_replay_never_uses_the_reply_token_it_pushes_the_first_part(db, tmp_path):
    async with line(db, tmp_path) as live:
        await start_conversation(live, db)
        live.platform.fail_when = lambda call: (
            (500, {"message": "Internal server error"}) if call.endpoint == "reply" else None
        )
        status = await live.deliver(USER, [TextBlock(text="See you at 7!")], now_context("tok-once"))
        assert status == "failed"
        live.platform.fail_when = None

        receipt = (await receipts(db))[-1]
        assert await live.runtime.deliverer.replay(receipt.id) == "sent"
        text = {"type": "text", "text": "See you at 7!"}
        assert outbound(live) == [
            ("reply", None, {"replyToken": "tok-once", "messages": [text]}),  # a 500: no blind push
            ("push", key(receipt, 0), {"to": USER, "messages": [text]}),
        ]


# -- customer media


async def test_a_photo_from_line_is_downloaded_with_the_token_rehosted_and_shown_to_the_model(db, tmp_path):
    from pydantic_ai import ModelResponse, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from frontdesk.platform.models.gateway import PydanticAIClient

    seen: list[object] = []

    async def vision(messages, info):
        seen.append(messages[-1].parts[-1].content)
        return ModelResponse(parts=[ToolCallPart("reply", {"blocks": [{"type": "text", "text": "Lovely dish!"}]})])

    chat = PydanticAIClient(FunctionModel(vision), "function:vision", timeout_s=10)
    async with line(db, tmp_path, chat=chat) as live:
        live.platform.media["509034613081082804"] = (PHOTO, "image/jpeg")
        await post(live, fresh(fixture("message__image.json")))
        await live.idle()

        (row,) = await live.messages()
        assert (row.status, row.meta["media_mime"]) == ("ready", "image/jpeg")
        (download,) = [c for c in live.platform.calls if c.method == "GET"]
        assert download.path == "/v2/bot/message/509034613081082804/content"
        assert download.headers["authorization"] == f"Bearer {TOKEN}"
        (content,) = seen
        assert content[1].data == PHOTO
        assert [body["messages"] for _, _, body in outbound(live)] == [[{"type": "text", "text": "Lovely dish!"}]]


async def test_an_external_image_is_fetched_from_its_url_without_our_token(db, tmp_path):
    async with line(db, tmp_path) as live:
        raw = _serve_media(live, "message__image_external.json", fresh(fixture("message__image_external.json")))
        await post(live, raw)
        await live.idle()

        (row,) = await live.messages()
        assert (tmp_path / "media" / row.meta["media_key"]).read_bytes() == PHOTO
        (download,) = [c for c in live.platform.calls if c.method == "GET"]
        assert download.path == "/cdn/original.jpg"
        assert "authorization" not in download.headers


async def test_an_external_image_over_plain_http_is_refused_and_resolved_honestly(db, tmp_path):
    async with line(db, tmp_path, job_backoff_s=0.05) as live:
        raw = fresh(fixture("message__image_external.json")).replace(
            b"https://cdn.example.com", b"http://cdn.example.com"
        )
        await post(live, raw)
        await live.idle()

        (row,) = await live.messages()
        assert row.content == "[image: could not be loaded]"
        assert "https" in row.meta["media_error"]
        assert [c for c in live.platform.calls if c.method == "GET"] == []


async def test_an_audio_message_waits_for_transcoding_then_is_transcribed_and_answered(db, tmp_path):
    chat = {"name": "voice", "rules": [{"match": "table for two", "responses": [{"reply": "Booked for 7pm!"}]}]}
    async with line(db, tmp_path, chat=chat, transcription=TRANSCRIPT) as live:
        live.platform.media[AUDIO_ID] = (VOICE, "audio/x-m4a")
        live.platform.transcoding[AUDIO_ID] = ["processing", "succeeded"]
        await post(live, fresh(fixture("message__audio.json")))
        await live.idle()

        (row,) = await live.messages()
        assert (row.status, row.content) == ("ready", "[voice note] a table for two at seven")
        assert row.meta["media_mime"] == "audio/x-m4a"
        gets = [c.path.rsplit(AUDIO_ID, 1)[1] for c in live.platform.calls if c.method == "GET"]
        assert gets == ["/content/transcoding", "/content/transcoding", "/content"]
        assert [body["messages"] for _, _, body in outbound(live)] == [[{"type": "text", "text": "Booked for 7pm!"}]]


async def test_audio_line_could_not_transcode_is_resolved_honestly_and_still_answered(db, tmp_path):
    # The readiness gate waits for the media job however slow the machine (it gives up at once on
    # LINE's "failed" and stores the placeholder, which lets the turn in): one turn, one reply.
    async with line(db, tmp_path, transcription=TRANSCRIPT, job_backoff_s=0.05, media_ready_timeout_s=60) as live:
        live.platform.transcoding[AUDIO_ID] = ["failed"]
        await post(live, fresh(fixture("message__audio.json")))
        await live.idle()

        (row,) = await live.messages()
        assert row.content == "[audio message: could not be loaded]"
        assert "could not transcode" in row.meta["media_error"]
        assert len([c for c in live.platform.calls if c.path.endswith("/transcoding")]) == 1  # not asked again
        assert len(outbound(live)) == 1
        assert await count(db, Receipt) == 1


def test_the_retry_key_is_a_uuid_that_depends_on_the_part_only():
    target = DeliveryTarget("line", ACCOUNT, "conv-1", USER, 42)
    again = DeliveryTarget("line", ACCOUNT, "conv-1", USER, 42, {}, {"reply_token": "x"})

    assert retry_key(target, 0) == retry_key(again, 0) != retry_key(target, 1)
    assert str(uuid.UUID(retry_key(target, 0))) == retry_key(target, 0)
