"""Telegram end to end: a real fixture posted to our webhook over loopback HTTP, the exact Bot
API calls our reply makes recorded by the platform double."""

from __future__ import annotations

import json
import logging

import pytest
from fake_telegram import TOKEN
from live import Live, live_telegram
from snapshot import read_fixture
from sqlalchemy import select

from frontdesk.output.blocks import ImageGroupBlock, TextBlock
from frontdesk.platform.store.schema import Message, Receipt
from harness import count, receipts

ACCOUNT = "tg-inkwell-01"
SECRET = "s3cret-Token_value"
CHAT_ID = 6112093847
URL = f"/webhooks/telegram/{ACCOUNT}"
HEADER = "X-Telegram-Bot-Api-Secret-Token"
PHOTO = b"\xff\xd8\xff\xe0" + b"jpeg-bytes" * 50
VOICE = b"OggS" + b"\x00voice" * 200
VOICE_FILE_ID = "AwACAgIAAxkBAAIHN2jo4B9wU1xq0y4kL6QmJ8s2n5dTAAIyXQACHk9JS2Gq0Y8pW3r1NgQ"

HELLO = {"name": "hello", "default": [{"reply": "Hello from the shop!"}]}


def fixture(name: str) -> bytes:
    return read_fixture("telegram", name)


def telegram(db, tmp_path, chat=HELLO, transcription=None, **settings):
    return live_telegram(
        db, tmp_path, account_id=ACCOUNT, webhook_secret=SECRET, chat=chat, transcription=transcription, **settings
    )


async def post(live: Live, name: str, secret: str | None = SECRET):
    headers = {"Content-Type": "application/json"}
    if secret is not None:
        headers[HEADER] = secret
    return await live.http.post(URL, content=fixture(name), headers=headers)


def outbound(live: Live) -> list[tuple[str, object]]:
    """What the customer was sent: every call except typing indicators and file downloads."""
    return [(c.endpoint, c.body) for c in live.platform.sent("sendChatAction", "getFile") if c.method == "POST"]


async def test_a_text_message_is_answered_with_send_message(db, tmp_path):
    async with telegram(db, tmp_path) as live:
        response = await post(live, "message__text.json")
        assert (response.status_code, response.json()) == (200, {"ok": True, "stored": 1})
        await live.idle()

        assert outbound(live) == [("sendMessage", {"chat_id": CHAT_ID, "text": "Hello from the shop!"})]
        assert "sendChatAction" in live.platform.endpoints()  # typing while the turn ran
        assert all(c.path.startswith(f"/bot{TOKEN}/") for c in live.platform.calls)
        (receipt,) = await receipts(db)
        assert (receipt.status, receipt.sent_text, receipt.sent_image) == ("sent", 1, 0)


@pytest.mark.parametrize(("secret", "status"), [("wrong-secret", 401), (None, 401), ("", 401)])
async def test_a_forged_or_missing_secret_is_refused_and_nothing_is_stored(db, tmp_path, secret, status):
    async with telegram(db, tmp_path) as live:
        response = await post(live, "message__text.json", secret=secret)

        assert response.status_code == status
        assert response.json()["error"]["code"] == "unauthorized"
        assert await count(db, Message) == 0
        assert live.platform.calls == []


async def test_an_unknown_account_is_404_and_another_channels_account_too(db, tmp_path):
    async with telegram(db, tmp_path) as live:
        unknown = await live.http.post("/webhooks/telegram/no-such-acct", content=b"{}", headers={HEADER: SECRET})
        webchat = await live.http.post("/webhooks/telegram/demo-webchat", content=b"{}", headers={HEADER: SECRET})

        assert (unknown.status_code, webchat.status_code) == (404, 404)
        assert await count(db, Message) == 0


async def test_a_redelivered_update_stores_nothing_and_sends_nothing_new(db, tmp_path):
    async with telegram(db, tmp_path) as live:
        await post(live, "message__text.json")
        await live.idle()
        again = await post(live, "message__text.json")
        await live.idle()

        assert again.json() == {"ok": True, "duplicate": 1}
        assert await count(db, Message, Message.role == "user") == 1
        assert [endpoint for endpoint, _ in outbound(live)] == ["sendMessage"]


@pytest.mark.parametrize("name", ["message__from_bot.json", "message__group_chat.json", "callback_query__button.json"])
async def test_echoes_and_ignored_updates_get_200_and_nothing_happens(db, tmp_path, name):
    async with telegram(db, tmp_path) as live:
        response = await post(live, name)
        await live.idle()

        assert (response.status_code, response.json()) == (200, {"ok": True, "ignored": 1})
        assert await count(db, Message) == 0
        assert live.platform.calls == []


async def test_a_malformed_update_is_a_4xx_never_a_5xx(db, tmp_path):
    async with telegram(db, tmp_path) as live:
        not_json = await post(live, "malformed__not_json.txt")
        no_id = await post(live, "malformed__no_update_id.json")

        assert (not_json.status_code, no_id.status_code) == (400, 422)
        assert await count(db, Message) == 0


async def test_an_album_of_three_images_is_one_send_media_group_with_the_caption_first(db, tmp_path):
    async with telegram(db, tmp_path) as live:
        await post(live, "message__text.json")
        await live.idle()
        live.platform.calls.clear()
        urls = [f"https://shop.example/p/{i}.png" for i in (1, 2, 3)]

        status = await live.deliver(str(CHAT_ID), [ImageGroupBlock(urls=urls, caption="Our flyers")])

        assert status == "sent"
        assert outbound(live) == [
            (
                "sendMediaGroup",
                {
                    "chat_id": CHAT_ID,
                    "media": [
                        {"type": "photo", "media": urls[0], "caption": "Our flyers"},
                        {"type": "photo", "media": urls[1]},
                        {"type": "photo", "media": urls[2]},
                    ],
                },
            )
        ]
        receipt = (await receipts(db))[-1]
        assert (receipt.sent_text, receipt.sent_image, receipt.parts_total) == (0, 3, 1)


async def test_a_failing_image_send_ends_partial_with_the_platforms_error(db, tmp_path):
    async with telegram(db, tmp_path) as live:
        await post(live, "message__text.json")
        await live.idle()
        live.platform.fail_when = lambda call: (
            (400, {"ok": False, "error_code": 400, "description": "Bad Request: wrong type of the web page content"})
            if call.endpoint == "sendPhoto"
            else None
        )

        status = await live.deliver(
            str(CHAT_ID),
            [TextBlock(text="Here is one:"), ImageGroupBlock(urls=["https://shop.example/p/1.png"])],
        )

        assert status == "partial"
        receipt = (await receipts(db))[-1]
        assert (receipt.status, receipt.sent_text, receipt.sent_image) == ("partial", 1, 0)
        assert receipt.errors == [
            {
                "seq": 1,
                "block": 1,
                "kind": "image",
                "error": "ChannelAPIError: HTTP 400: Bad Request: wrong type of the web page content",
            }
        ]
        assert TOKEN not in str(receipt.errors)


async def test_a_long_text_is_split_at_4096_characters_on_a_sentence_boundary(db, tmp_path):
    async with telegram(db, tmp_path) as live:
        await post(live, "message__text.json")
        await live.idle()
        live.platform.calls.clear()
        sentence = "We print flyers, posters and cards every day. "
        block_text = (sentence * 43).strip()  # 1977 characters: fits one block
        await live.deliver(str(CHAT_ID), [TextBlock(text=block_text)] * 3)
        texts = [body["text"] for endpoint, body in outbound(live)]

        assert len(texts) == 3
        assert all(len(t) <= 4096 for t in texts)


async def test_a_photo_is_rehosted_and_shown_to_the_model(db, tmp_path):
    seen: list[object] = []

    async def vision(messages, info):
        from pydantic_ai import ModelResponse, ToolCallPart

        seen.append(messages[-1].parts[-1].content)
        return ModelResponse(parts=[ToolCallPart("reply", {"blocks": [{"type": "text", "text": "Nice design!"}]})])

    from pydantic_ai.models.function import FunctionModel

    from frontdesk.platform.models.gateway import PydanticAIClient

    chat = PydanticAIClient(FunctionModel(vision), "function:vision", timeout_s=10)
    async with telegram(db, tmp_path, chat=chat) as live:
        big = "AgACAgIAAxkBAAIHM2jo3xKvQ1pLQ2Ww6bF0m0a1c2d3AAJ4-jEbHk9JS4nV0o3Xq8yGAQADAgADeQADNgQ"
        live.platform.media[f"files/{big}"] = (PHOTO, "image/jpeg")
        response = await post(live, "message__photo_caption.json")
        (row,) = await live.messages()
        assert (response.json(), row.status, row.content_type) == ({"ok": True, "stored": 1}, "pending", "image")
        await live.idle()

        (row,) = await live.messages()
        assert row.status == "ready"
        assert (tmp_path / "media" / row.meta["media_key"]).read_bytes() == PHOTO
        (content,) = seen
        assert isinstance(content, list)
        assert content[1].data == PHOTO
        assert content[1].media_type == "image/jpeg"
        assert outbound(live) == [("sendMessage", {"chat_id": CHAT_ID, "text": "Nice design!"})]


def transcript(quality: str, text: str = "", spans: list[str] | None = None, delay_ms: int = 0) -> dict:
    args = {"text": text, "quality": quality, "unclear_spans": spans or [], "detected_language": "en"}
    return {"name": "transcriber", "default": [{"tool": "transcript", "args": args, "delay_ms": delay_ms}]}


VOICE_CHAT = {
    "name": "voice",
    "rules": [
        {"match": "partly unclear", "responses": [{"reply": "Sorry, did you say 500 or 5000 flyers?"}]},
        {"match": "flyers", "responses": [{"reply": "Yes, we print flyers!"}]},
    ],
}


async def test_a_voice_note_is_pending_first_and_the_reply_waits_for_its_transcript(db, tmp_path):
    slow = transcript("ok", "do you print flyers", delay_ms=700)
    # The gate's media timeout is far above the transcript's delay, so a loaded machine cannot
    # make the turn give up on it; the transcript pulls the turn forward, so nothing waits 30 s.
    async with telegram(db, tmp_path, chat=VOICE_CHAT, transcription=slow, media_ready_timeout_s=30) as live:
        live.platform.media[f"files/{VOICE_FILE_ID}"] = (VOICE, "application/octet-stream")
        await post(live, "message__voice.json")
        (row,) = await live.messages()
        assert (row.status, row.content) == ("pending", "[voice note: being transcribed]")
        await live.idle()

        (row,) = await live.messages()
        assert (row.status, row.content) == ("ready", "[voice note] do you print flyers")
        assert row.meta["transcript"]["quality"] == "ok"
        assert row.meta["media_mime"] == "audio/ogg"
        # The reply answers the transcript: the turn did not run on the placeholder.
        assert outbound(live) == [("sendMessage", {"chat_id": CHAT_ID, "text": "Yes, we print flyers!"})]


async def test_an_uncertain_voice_note_makes_the_agent_confirm_the_unclear_words(db, tmp_path):
    unsure = transcript("uncertain", "I need 500 flyers", spans=["500"])
    async with telegram(db, tmp_path, chat=VOICE_CHAT, transcription=unsure) as live:
        live.platform.media[f"files/{VOICE_FILE_ID}"] = (VOICE, "audio/ogg")
        await post(live, "message__voice.json")
        await live.idle()

        (row,) = await live.messages()
        assert "confirm these words" in row.content
        assert "«500»" in row.content
        assert outbound(live) == [
            ("sendMessage", {"chat_id": CHAT_ID, "text": "Sorry, did you say 500 or 5000 flyers?"})
        ]


async def test_a_voice_note_nobody_could_understand_gets_asked_to_be_typed(db, tmp_path):
    failed = transcript("failed")
    never = {"name": "never", "default": [{"error": "the chat model must not be called", "status": 500}]}
    async with telegram(db, tmp_path, chat=never, transcription=failed) as live:
        live.platform.media[f"files/{VOICE_FILE_ID}"] = (VOICE, "audio/ogg")
        await post(live, "message__voice.json")
        await live.idle()

        (row,) = await live.messages()
        assert row.content == "[voice note that could not be understood]"
        ((endpoint, body),) = outbound(live)
        assert endpoint == "sendMessage"
        assert "type it" in body["text"]


async def test_a_voice_note_that_cannot_be_downloaded_is_resolved_honestly(db, tmp_path):
    # The readiness gate waits out the media job however slow the machine: one turn, one reply.
    async with telegram(db, tmp_path, job_backoff_s=0.05, media_ready_timeout_s=60) as live:
        live.platform.fail_when = lambda call: (
            (400, {"ok": False, "description": "Bad Request: file is too big"}) if call.endpoint == "getFile" else None
        )
        await post(live, "message__voice.json")
        await live.idle()

        (row,) = await live.messages()
        assert (row.status, row.content) == ("ready", "[voice note: could not be loaded]")
        assert "file is too big" in row.meta["media_error"]
        # Telegram's 400 is its final word: given up at once, not asked three times.
        assert [c.endpoint for c in live.platform.calls if c.endpoint == "getFile"] == ["getFile"]
        assert [e for e, _ in outbound(live)] == ["sendMessage"]  # the customer still gets an answer
        assert await count(db, Receipt) == 1


async def test_an_album_from_the_customer_is_three_rows_and_one_reply(db, tmp_path):
    seen: list[object] = []

    async def vision(messages, info):
        from pydantic_ai import ModelResponse, ToolCallPart

        seen.append(messages[-1].parts[-1].content)
        return ModelResponse(parts=[ToolCallPart("reply", {"blocks": [{"type": "text", "text": "Got all three!"}]})])

    from pydantic_ai.models.function import FunctionModel

    from frontdesk.platform.models.gateway import PydanticAIClient

    chat = PydanticAIClient(FunctionModel(vision), "function:vision", timeout_s=10)
    async with telegram(db, tmp_path, chat=chat) as live:
        for n in (1, 2, 3):
            update = json.loads(fixture(f"message__album_{n}.json"))
            largest = max(update["message"]["photo"], key=lambda p: p["width"] * p["height"])
            live.platform.media[f"files/{largest['file_id']}"] = (PHOTO + bytes([n]), "image/jpeg")
            assert (await post(live, f"message__album_{n}.json")).json() == {"ok": True, "stored": 1}
        await live.idle()

        rows = await live.messages()
        assert [(r.content_type, r.status, r.meta["media_group_id"]) for r in rows] == [
            ("image", "ready", rows[0].meta["media_group_id"])
        ] * 3
        (content,) = seen  # one turn for the whole album, all three images shown to the model
        assert [part.data[-1] for part in content[1:]] == [1, 2, 3]
        assert outbound(live) == [("sendMessage", {"chat_id": CHAT_ID, "text": "Got all three!"})]


async def test_the_bot_token_never_reaches_a_log_line(db, tmp_path, caplog):
    caplog.set_level(logging.INFO)  # DEBUG driver logs print SQL parameters: see the note in docs/channels.md
    async with telegram(db, tmp_path) as live:
        await post(live, "message__text.json")
        await live.idle()

    assert "sendMessage" in caplog.text  # httpx did log the calls
    assert TOKEN not in caplog.text
    assert TOKEN.split(":")[1] not in caplog.text


async def test_the_same_sender_id_on_another_businesss_bot_never_reaches_this_businesss_thread(db, tmp_path):
    from frontdesk.cli_accounts import upsert_account
    from frontdesk.ingestion.channels import CHANNELS
    from frontdesk.platform.store.schema import Conversation, Tenant

    async with telegram(db, tmp_path) as live:
        async with db.transaction() as session:
            session.add(
                Tenant(id="rival", name="Rival Prints", pack="catalog", policy={}, created_at=live.runtime.clock.now())
            )
        await upsert_account(
            db,
            account_id="tg-rival-0001",
            tenant_id="rival",
            channel="telegram",
            name="Rival bot",
            config={"api_base_url": live.platform.base_url},
            secrets={"bot_token": TOKEN, "webhook_secret": "rival-secret"},
            now=live.runtime.clock.now(),
            vault=live.runtime.channel_deps.accounts.vault,
            own_id=CHANNELS["telegram"].own_id,
        )
        ours = await post(live, "message__text.json")
        # This business's secret on the rival's URL, and the rival's secret on ours: both refused.
        crossed = await live.http.post(
            "/webhooks/telegram/tg-rival-0001", content=fixture("message__voice.json"), headers={HEADER: SECRET}
        )
        crossed_back = await live.http.post(
            URL, content=fixture("message__voice.json"), headers={HEADER: "rival-secret"}
        )
        theirs = await live.http.post(
            "/webhooks/telegram/tg-rival-0001",
            content=fixture("message__sticker.json"),
            headers={HEADER: "rival-secret"},
        )
        await live.idle()

        assert (ours.status_code, crossed.status_code, crossed_back.status_code, theirs.status_code) == (
            200,
            401,
            401,
            200,
        )
        async with db.read() as session:
            threads = {c.tenant_id: c.id for c in await session.scalars(select(Conversation))}
        rows = await live.messages()
        assert {r.conversation_id for r in rows if r.channel_account_id == ACCOUNT} == {threads["demo"]}
        assert {r.conversation_id for r in rows if r.channel_account_id == "tg-rival-0001"} == {threads["rival"]}
