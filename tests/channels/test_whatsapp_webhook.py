"""WhatsApp end to end: real Cloud API fixtures posted, signed, to our webhook over loopback HTTP;
the exact Graph API calls our replies, read receipts and media downloads make recorded by the
platform double; status callbacks moving the receipts of what we sent."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest
from fake_whatsapp import ACCESS_TOKEN, PHONE_NUMBER_ID, FakeWhatsApp, wamid
from live import Live, live_channel
from snapshot import fixtures, read_fixture
from sqlalchemy import select

from frontdesk.ingestion.channels.whatsapp.renderer import WhatsAppRenderer, plan
from frontdesk.ingestion.preparation import PREPARE_MEDIA
from frontdesk.output.blocks import ImageGroupBlock, TextBlock
from frontdesk.output.rendering import DeliveryTarget
from frontdesk.platform.store.schema import Contact, Conversation, DeliveryPart, Job, Message, Receipt
from harness import count, receipts

FIXTURES = fixtures("whatsapp")
ACCOUNT = "wa-inkwell-01"
APP_SECRET = "3b9f1c7e2a5d4f608e1c3a5b7d9f0e2c"
VERIFY_TOKEN = "inkwell-verify-Qx71"
CUSTOMER = "16505551234"
URL = f"/webhooks/whatsapp/{ACCOUNT}"
MESSAGES = f"/v25.0/{PHONE_NUMBER_ID}/messages"
BEARER = f"Bearer {ACCESS_TOKEN}"
TEXT_WAMID = "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQUFERjg0NDEzNDdFODU3MUMxMAA="
PHOTO = b"\xff\xd8\xff\xe0" + b"jpeg-bytes" * 50
VOICE = b"OggS" + b"\x00voice" * 200
IMAGE_ID, VOICE_ID = "1003383421387256", "1220456789012345"

HELLO = {"name": "hello", "default": [{"reply": "Hello from the shop!"}]}


def fixture(name: str) -> bytes:
    return read_fixture("whatsapp", name)


def whatsapp(db, tmp_path, chat=HELLO, transcription=None, **settings):
    return live_channel(
        db,
        tmp_path,
        FakeWhatsApp(),
        channel="whatsapp",
        account_id=ACCOUNT,
        config={"phone_number_id": PHONE_NUMBER_ID},
        secrets={"app_secret": APP_SECRET, "verify_token": VERIFY_TOKEN, "access_token": ACCESS_TOKEN},
        chat=chat,
        transcription=transcription,
        # The double answers the media lookup with a URL on itself (loopback): allowed, as a deployer
        # allows a host of its own network; tests/hostile/test_outbound_guard.py shows the refusals.
        **{"outbound_allow": ["127.0.0.1"], **settings},
    )


def signed(raw: bytes, secret: str = APP_SECRET) -> dict[str, str]:
    signature = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    return {"Content-Type": "application/json", "X-Hub-Signature-256": f"sha256={signature}"}


async def post(live: Live, payload: str | bytes, headers: dict[str, str] | None = None):
    """A fixture (by name) or raw body, signed with the account's app secret unless ``headers`` say otherwise."""
    raw = fixture(payload) if isinstance(payload, str) else payload
    return await live.http.post(URL, content=raw, headers=signed(raw) if headers is None else headers)


def status_of(message_id: str, state: str) -> bytes:
    """The ``status__<state>.json`` fixture, about ``message_id`` (one of our sends) instead."""
    data = json.loads(fixture(f"status__{state}.json"))
    data["entry"][0]["changes"][0]["value"]["statuses"][0]["id"] = message_id
    return json.dumps(data).encode()


def text_message(to: str, text: str, **address: str) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        **(address or {"to": to}),
        "type": "text",
        "text": {"preview_url": False, "body": text},
    }


def image_message(to: str, url: str, caption: str | None = None) -> dict[str, Any]:
    image = {"link": url, **({"caption": caption} if caption else {})}
    return {"messaging_product": "whatsapp", "recipient_type": "individual", "to": to, "type": "image", "image": image}


def sent(live: Live) -> list[tuple[str, Any]]:
    """What customers were sent (path and body): not read receipts, media lookups or downloads."""
    assert isinstance(live.platform, FakeWhatsApp)
    return [(c.path, c.body) for c in live.platform.messages()]


async def stored(live: Live) -> list[tuple[str, str | None, str, str, str]]:
    async with live.runtime.db.read() as session:
        rows = await session.execute(
            select(Contact.external_id, Contact.display_name, Message.content_type, Message.content, Message.status)
            .join(Conversation, Conversation.id == Message.conversation_id)
            .join(Contact, Contact.id == Conversation.contact_id)
            .where(Message.role == "user")
            .order_by(Message.id)
        )
        return [tuple(row) for row in rows]


async def parts(live: Live, receipt_id: int) -> list[DeliveryPart]:
    async with live.runtime.db.read() as session:
        query = select(DeliveryPart).where(DeliveryPart.receipt_id == receipt_id).order_by(DeliveryPart.seq)
        return list(await session.scalars(query))


async def conversation_started(live: Live) -> None:
    """A customer wrote (so a conversation exists) and was answered; the double forgets those calls."""
    await post(live, "message__text.json")
    await live.idle()
    live.platform.calls.clear()


# -- inbound: what each fixture stores, and what it must not


SHEENA = (CUSTOMER, "Sheena Nelson")
STORED = {
    "message__text.json": [(*SHEENA, "text", "Do you print business cards on recycled paper?", "ready")],
    "message__unicode.json": [
        (
            "84912345678",
            "Nguyễn Thị Hương 🌸",
            "text",
            "Xin chào! Tôi muốn in 500 danh thiếp 🎉🖨️ — giá bao nhiêu ạ? 👨\u200d👩\u200d👧",
            "ready",
        )
    ],
    "message__no_wa_id.json": [
        ("US.13491208655302741918", "Jordan Lee", "text", "Hi, is the shop open on Sunday?", "ready")
    ],
    "message__reply_context.json": [(*SHEENA, "text", "Yes, the second option please", "ready")],
    "message__button_reply.json": [(*SHEENA, "text", "Yes, confirm", "ready")],
    "message__list_reply.json": [(*SHEENA, "text", "Matte 350 gsm", "ready")],
    "message__template_button.json": [(*SHEENA, "text", "Change pickup time", "ready")],
    "message__location.json": [
        (
            *SHEENA,
            "text",
            "[location: Philz Coffee, 1 Hacker Way, Menlo Park, CA 94025 (37.483307, -122.148981)]",
            "ready",
        )
    ],
    "message__contacts.json": [(*SHEENA, "text", "[contact card: Barbara J. Johnson]", "ready")],
    "message__sticker.json": [(*SHEENA, "sticker", "[sticker]", "ready")],
    "message__video.json": [(*SHEENA, "video", "[video] This is the banner size we need", "ready")],
    "message__document.json": [(*SHEENA, "file", "[file: quote-request.pdf] Our order details", "ready")],
    "message__image_caption.json": [
        (*SHEENA, "image", "[image: loading] Can you print this logo on 200 mugs?", "pending")
    ],
    "message__document_image.json": [(*SHEENA, "image", "[image: loading] Poster draft, A2", "pending")],
    "message__voice.json": [(*SHEENA, "voice", "[voice note: being transcribed]", "pending")],
    "message__audio_file.json": [(*SHEENA, "audio", "[audio message: being transcribed]", "pending")],
    "batch__three_images.json": [
        (*SHEENA, "image", "[image: loading] Front, back and the envelope", "pending"),
        (*SHEENA, "image", "[image: loading]", "pending"),
        (*SHEENA, "image", "[image: loading]", "pending"),
    ],
}
IGNORED = {
    "message__other_phone_number.json": {"ignored": 1},
    "message__group.json": {"ignored": 1},
    "message__reaction.json": {"ignored": 1},
    "message__unsupported.json": {"ignored": 1},
    "change__account_update.json": {"ignored": 1},
    "change__platform_error.json": {"ignored": 1},
    # Statuses about messages this account never sent: counted, nothing changes.
    "status__sent.json": {"status_unknown": 1},
    "status__delivered.json": {"status_unknown": 1},
    "status__read.json": {"status_unknown": 1},
    "status__played.json": {"status_unknown": 1},
    "status__failed.json": {"status_unknown": 1},
}
MALFORMED = {
    "malformed__not_json.txt": (400, "payload_malformed"),
    "malformed__no_entry.json": (422, "payload_invalid"),
    "malformed__wrong_object.json": (422, "payload_invalid"),
}


def test_every_fixture_has_an_expected_outcome():
    assert {p.name for p in FIXTURES.iterdir()} == set(STORED) | set(IGNORED) | set(MALFORMED)


@pytest.mark.parametrize("name", sorted(STORED))
async def test_a_supported_message_is_stored_and_the_request_does_nothing_slow(db, tmp_path, name):
    # No workers: what is in the store when the 200 comes back is exactly what the request did.
    async with whatsapp(db, tmp_path, workers=0) as live:
        response = await post(live, name)

        assert (response.status_code, response.json()) == (200, {"ok": True, "stored": len(STORED[name])})
        assert await stored(live) == STORED[name]
        assert live.platform.calls == []  # no download, no read receipt, no reply inside the request
        pending = sum(row[-1] == "pending" for row in STORED[name])
        assert await count(db, Job, Job.kind == PREPARE_MEDIA) == pending


@pytest.mark.parametrize("name", sorted(IGNORED))
async def test_ignored_changes_and_unknown_statuses_get_200_and_nothing_happens(db, tmp_path, name):
    async with whatsapp(db, tmp_path) as live:
        response = await post(live, name)
        await live.idle()

        assert (response.status_code, response.json()) == (200, {"ok": True, **IGNORED[name]})
        assert await count(db, Message) == 0
        assert live.platform.calls == []


@pytest.mark.parametrize(("name", "expected"), sorted(MALFORMED.items()))
async def test_a_malformed_body_is_a_4xx_and_the_signature_is_checked_first(db, tmp_path, name, expected):
    async with whatsapp(db, tmp_path) as live:
        response = await post(live, name)
        unsigned = await post(live, name, headers={"Content-Type": "application/json"})

        assert (response.status_code, response.json()["error"]["code"]) == expected
        assert unsigned.status_code == 401
        assert await count(db, Message) == 0


async def test_a_body_over_the_limit_is_413_before_it_is_checked_or_parsed(db, tmp_path):
    async with whatsapp(db, tmp_path) as live:
        huge = b'{"object": "whatsapp_business_account", "entry": []}' + b" " * 1_000_000

        response = await post(live, huge)

        assert (response.status_code, response.json()["error"]["code"]) == (413, "payload_too_large")


# -- authentication


@pytest.mark.parametrize(
    ("params", "status", "body"),
    [
        ({"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1158201444"}, 200, "1158201444"),
        ({"hub.mode": "subscribe", "hub.verify_token": "not-it", "hub.challenge": "1158201444"}, 403, None),
        ({"hub.mode": "subscribe", "hub.challenge": "1158201444"}, 403, None),
        ({"hub.mode": "unsubscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1158201444"}, 422, None),
    ],
)
async def test_the_verification_handshake_echoes_the_challenge_only_for_our_token(db, tmp_path, params, status, body):
    async with whatsapp(db, tmp_path) as live:
        response = await live.http.get(URL, params=params)

        assert response.status_code == status
        if body is not None:
            assert (response.text, response.headers["content-type"].split(";")[0]) == (body, "text/plain")


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"X-Hub-Signature-256": "sha256=" + "0" * 64}, id="forged"),
        pytest.param({}, id="missing"),
        pytest.param(signed(fixture("message__text.json"), "another-apps-secret"), id="other-secret"),
        pytest.param(signed(fixture("message__unicode.json")), id="another-body"),
        pytest.param(
            {"X-Hub-Signature-256": signed(fixture("message__text.json"))["X-Hub-Signature-256"][7:]}, id="bare"
        ),
    ],
)
async def test_a_forged_missing_or_foreign_signature_is_401_and_nothing_is_stored(db, tmp_path, headers):
    async with whatsapp(db, tmp_path) as live:
        response = await post(live, "message__text.json", headers={"Content-Type": "application/json", **headers})
        await live.idle()

        assert (response.status_code, response.json()["error"]["code"]) == (401, "unauthorized")
        assert await count(db, Message) == 0
        assert live.platform.calls == []


async def test_an_unknown_account_or_another_channels_account_is_404(db, tmp_path):
    raw = fixture("message__text.json")
    async with whatsapp(db, tmp_path) as live:
        unknown = await live.http.post("/webhooks/whatsapp/no-such-acct", content=raw, headers=signed(raw))
        webchat = await live.http.post("/webhooks/whatsapp/demo-webchat", content=raw, headers=signed(raw))
        handshake = await live.http.get(
            "/webhooks/whatsapp/no-such-acct",
            params={"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1"},
        )

        assert (unknown.status_code, webchat.status_code, handshake.status_code) == (404, 404, 404)
        assert await count(db, Message) == 0


async def test_a_redelivered_message_stores_nothing_and_sends_nothing_new(db, tmp_path):
    async with whatsapp(db, tmp_path) as live:
        await post(live, "message__text.json")
        await live.idle()
        again = await post(live, "message__text.json")
        await live.idle()

        assert again.json() == {"ok": True, "duplicate": 1}
        assert await count(db, Message, Message.role == "user") == 1
        assert len(sent(live)) == 1


# -- replies


async def test_a_text_message_is_marked_read_with_typing_then_answered(db, tmp_path):
    async with whatsapp(db, tmp_path) as live:
        response = await post(live, "message__text.json")
        assert (response.status_code, response.json()) == (200, {"ok": True, "stored": 1})
        await live.idle()

        assert sent(live) == [(MESSAGES, text_message(CUSTOMER, "Hello from the shop!"))]
        read = [c for c in live.platform.calls if c not in live.platform.messages()]
        assert read, "the customer's message was never marked read"
        # The typing call races the reply on the wire, so it is checked on its own, not by position.
        assert {(c.method, c.path, json.dumps(c.body, sort_keys=True)) for c in read} == {
            (
                "POST",
                MESSAGES,
                json.dumps(
                    {
                        "messaging_product": "whatsapp",
                        "status": "read",
                        "message_id": TEXT_WAMID,
                        "typing_indicator": {"type": "text"},
                    },
                    sort_keys=True,
                ),
            )
        }
        assert {c.headers["authorization"] for c in live.platform.calls} == {BEARER}
        (receipt,) = await receipts(db)
        assert (receipt.status, receipt.sent_text, receipt.sent_image) == ("sent", 1, 0)
        (part,) = await parts(live, receipt.id)
        assert (part.platform_message_id, part.platform_message_ids) == (wamid(1), [wamid(1)])


async def test_a_customer_known_only_by_a_business_scoped_id_is_answered_by_recipient(db, tmp_path):
    async with whatsapp(db, tmp_path) as live:
        await post(live, "message__no_wa_id.json")
        await live.idle()

        bsuid = "US.13491208655302741918"
        assert sent(live) == [(MESSAGES, text_message(bsuid, "Hello from the shop!", recipient=bsuid))]


async def test_a_batch_of_three_images_is_three_pending_rows_and_one_answer(db, tmp_path):
    async with whatsapp(db, tmp_path) as live:
        for media_id in ("1111222233334444", "1111222233335555", "1111222233336666"):
            live.platform.media[media_id] = (PHOTO + media_id.encode(), "image/jpeg")
        response = await post(live, "batch__three_images.json")
        assert response.json() == {"ok": True, "stored": 3}
        await live.idle()

        assert [(row[2], row[3], row[4]) for row in await stored(live)] == [
            ("image", "[image] Front, back and the envelope", "ready"),
            ("image", "[image]", "ready"),
            ("image", "[image]", "ready"),
        ]
        assert sent(live) == [(MESSAGES, text_message(CUSTOMER, "Hello from the shop!"))]
        assert await count(db, Receipt) == 1


async def test_an_album_of_three_images_is_three_image_messages_in_order_with_the_caption_first(db, tmp_path):
    async with whatsapp(db, tmp_path) as live:
        await conversation_started(live)
        urls = [f"https://shop.example/p/{i}.png" for i in (1, 2, 3)]

        status = await live.deliver(CUSTOMER, [ImageGroupBlock(urls=urls, caption="Our flyers")])

        assert status == "sent"
        assert sent(live) == [
            (MESSAGES, image_message(CUSTOMER, urls[0], "Our flyers")),
            (MESSAGES, image_message(CUSTOMER, urls[1])),
            (MESSAGES, image_message(CUSTOMER, urls[2])),
        ]
        receipt = (await receipts(db))[-1]
        assert (receipt.sent_text, receipt.sent_image, receipt.parts_total) == (0, 3, 3)
        assert [p.platform_message_id for p in await parts(live, receipt.id)] == [wamid(n) for n in (2, 3, 4)]


def test_a_caption_over_1024_characters_is_sent_first_as_text_and_long_text_is_split_at_4096():
    caption = "Every flyer is printed on 350 gsm card. " * 30  # 1200 characters
    sentence = "We print flyers, posters and cards every day. "
    album = ImageGroupBlock.model_construct(type="image_group", urls=["https://shop.example/a.png"], caption=caption)
    long_text = TextBlock.model_construct(type="text", text=(sentence * 100).strip())  # 4699 characters

    planned = plan(CUSTOMER, [album, long_text])

    assert [(p.block_index, p.kind, p.texts, p.images) for p in planned] == [
        (0, "text", 1, 0),
        (0, "image", 0, 1),
        (1, "text", 1, 0),
        (1, "text", 1, 0),
    ]
    assert planned[0].request["body"] == text_message(CUSTOMER, caption.strip())
    assert planned[1].request["body"] == image_message(CUSTOMER, "https://shop.example/a.png")
    pieces = [p.request["body"]["text"]["body"] for p in planned[2:]]
    assert all(len(piece) <= 4096 for piece in pieces)
    assert pieces[0].endswith("every day.")
    assert " ".join(pieces) == long_text.text


async def test_a_failing_image_send_ends_partial_with_metas_error(db, tmp_path):
    async with whatsapp(db, tmp_path) as live:
        await conversation_started(live)
        live.platform.fail_when = lambda call: (
            (
                400,
                {
                    "error": {
                        "message": "(#131056) (Business Account, Consumer Account) pair rate limit hit",
                        "type": "OAuthException",
                        "code": 131056,
                        "fbtrace_id": "AazFAb3Mf1Dk2pQW8vE3n1Z",
                    }
                },
            )
            if (call.body or {}).get("type") == "image"
            else None
        )

        status = await live.deliver(
            CUSTOMER, [TextBlock(text="Here is one:"), ImageGroupBlock(urls=["https://shop.example/p/1.png"])]
        )

        assert status == "partial"
        receipt = (await receipts(db))[-1]
        assert (receipt.status, receipt.sent_text, receipt.sent_image) == ("partial", 1, 0)
        assert receipt.errors == [
            {
                "seq": 1,
                "block": 1,
                "kind": "image",
                "error": "ChannelAPIError: HTTP 400: 131056 (#131056) (Business Account, Consumer Account) "
                "pair rate limit hit",
            }
        ]
        assert ACCESS_TOKEN not in str(receipt.errors)


async def test_typing_without_a_customer_message_to_mark_read_calls_nothing(db, tmp_path):
    async with whatsapp(db, tmp_path) as live:
        target = DeliveryTarget("whatsapp", ACCOUNT, "conv-x", CUSTOMER, 0, reply_context={})

        await WhatsAppRenderer(live.runtime.channel_deps).typing(target)

        assert live.platform.calls == []


# -- status callbacks for what we sent


async def test_a_failed_status_for_one_of_our_images_turns_the_receipt_partial(db, tmp_path):
    async with whatsapp(db, tmp_path) as live:
        await conversation_started(live)
        status = await live.deliver(
            CUSTOMER, [TextBlock(text="Here is our flyer:"), ImageGroupBlock(urls=["https://shop.example/p/1.png"])]
        )
        receipt = (await receipts(db))[-1]
        text_part, image_part = await parts(live, receipt.id)
        assert (status, image_part.platform_message_id) == ("sent", wamid(3))

        response = await post(live, status_of(image_part.platform_message_id, "failed"))

        assert response.json() == {"ok": True, "status": 1}
        receipt = (await receipts(db))[-1]
        assert (receipt.status, receipt.sent_text, receipt.sent_image) == ("partial", 1, 0)
        assert receipt.errors == [
            {
                "seq": 1,
                "block": 1,
                "kind": "image",
                "error": "131047 Re-engagement message: Message failed to send because more than 24 hours have "
                "passed since the customer last replied to this number.",
            }
        ]
        text_part, image_part = await parts(live, receipt.id)
        assert (text_part.status, image_part.status, image_part.platform_status) == ("sent", "failed", "failed")


async def test_a_failed_status_for_a_one_message_reply_turns_it_failed(db, tmp_path):
    async with whatsapp(db, tmp_path) as live:
        await post(live, "message__text.json")
        await live.idle()
        (receipt,) = await receipts(db)

        await post(live, status_of(wamid(1), "failed"))

        (receipt,) = await receipts(db)
        assert (receipt.status, receipt.sent_text) == ("failed", 0)


async def test_delivered_and_read_only_ever_move_a_part_forward(db, tmp_path):
    async with whatsapp(db, tmp_path) as live:
        await post(live, "message__text.json")
        await live.idle()
        (receipt,) = await receipts(db)
        seen = []
        for state in ("sent", "read", "delivered", "sent"):  # Meta's callbacks can arrive out of order
            response = await post(live, status_of(wamid(1), state))
            assert response.json() == {"ok": True, "status": 1}
            (part,) = await parts(live, receipt.id)
            seen.append(part.platform_status)

        assert seen == ["sent", "read", "read", "read"]
        (receipt,) = await receipts(db)
        assert receipt.status == "sent"


# -- customer media


async def assert_token_kept_secret(live: Live, *responses: Any) -> None:
    async with live.runtime.db.read() as session:
        rows: list[object] = [(m.content, m.meta) for m in await session.scalars(select(Message))]
        rows += [(r.errors, r.status) for r in await session.scalars(select(Receipt))]
        rows += [(p.request, p.error) for p in await session.scalars(select(DeliveryPart))]
        rows += [(j.payload, j.last_error) for j in await session.scalars(select(Job))]
    assert [str(t)[:80] for t in [*rows, *(r.text for r in responses)] if ACCESS_TOKEN in str(t)] == []


async def test_a_photo_is_fetched_by_id_with_the_bearer_token_and_rehosted(db, tmp_path):
    async with whatsapp(db, tmp_path) as live:
        live.platform.media[IMAGE_ID] = (PHOTO, "image/jpeg")
        response = await post(live, "message__image_caption.json")
        await live.idle()

        (row,) = await live.messages()
        assert (row.status, row.content) == ("ready", "[image] Can you print this logo on 200 mugs?")
        assert (tmp_path / "media" / row.meta["media_key"]).read_bytes() == PHOTO
        assert row.meta["media_mime"] == "image/jpeg"
        lookup, download = (c for c in live.platform.calls if c.method == "GET")
        assert (lookup.path, download.path) == (f"/v25.0/{IMAGE_ID}", f"/whatsapp_business/attachments/{IMAGE_ID}")
        assert (lookup.headers["authorization"], download.headers["authorization"]) == (BEARER, BEARER)
        assert sent(live) == [(MESSAGES, text_message(CUSTOMER, "Hello from the shop!"))]
        await assert_token_kept_secret(live, response)


def transcript(quality: str, text: str = "", delay_ms: int = 0) -> dict:
    args = {"text": text, "quality": quality, "unclear_spans": [], "detected_language": "en"}
    return {"name": "transcriber", "default": [{"tool": "transcript", "args": args, "delay_ms": delay_ms}]}


VOICE_CHAT = {"name": "voice", "rules": [{"match": "flyers", "responses": [{"reply": "Yes, we print flyers!"}]}]}


async def test_a_voice_note_is_transcribed_and_the_reply_waits_for_the_transcript(db, tmp_path):
    slow = transcript("ok", "do you print flyers", delay_ms=700)
    # The gate's media timeout is far above the transcript's delay, so a loaded machine cannot
    # make the turn give up on it; the transcript pulls the turn forward, so nothing waits 30 s.
    async with whatsapp(db, tmp_path, chat=VOICE_CHAT, transcription=slow, media_ready_timeout_s=30) as live:
        # The download says nothing useful about the type; the media lookup does.
        live.platform.media[VOICE_ID] = (VOICE, "application/octet-stream")
        live.platform.reported_mime[VOICE_ID] = "audio/ogg; codecs=opus"
        response = await post(live, "message__voice.json")
        (row,) = await live.messages()
        assert (row.status, row.content) == ("pending", "[voice note: being transcribed]")
        await live.idle()

        (row,) = await live.messages()
        assert (row.status, row.content) == ("ready", "[voice note] do you print flyers")
        assert row.meta["transcript"]["quality"] == "ok"
        assert row.meta["media_mime"] == "audio/ogg"
        assert (tmp_path / "media" / row.meta["media_key"]).read_bytes() == VOICE
        gets = [(c.path, c.headers["authorization"]) for c in live.platform.calls if c.method == "GET"]
        assert gets == [(f"/v25.0/{VOICE_ID}", BEARER), (f"/whatsapp_business/attachments/{VOICE_ID}", BEARER)]
        # The reply answers the transcript: the turn did not run on the placeholder.
        assert sent(live) == [(MESSAGES, text_message(CUSTOMER, "Yes, we print flyers!"))]
        await assert_token_kept_secret(live, response)


async def test_a_download_url_that_is_not_https_never_gets_the_token(db, tmp_path):
    async with whatsapp(db, tmp_path, job_backoff_s=0.05) as live:
        live.platform.media[IMAGE_ID] = (PHOTO, "image/jpeg")
        live.platform.download_base = "http://cdn.example.invalid"
        await post(live, "message__image_caption.json")
        await live.idle()

        (row,) = await live.messages()
        assert (row.status, row.content) == (
            "ready",
            "[image: could not be loaded] Can you print this logo on 200 mugs?",
        )
        assert "no https download URL" in row.meta["media_error"]
        assert {c.path for c in live.platform.calls if c.method == "GET"} == {f"/v25.0/{IMAGE_ID}"}
        assert len(sent(live)) == 1  # the customer still gets an answer
