"""Messenger and Instagram end to end: real fixtures, signed like Meta signs them, posted to our
webhook over loopback HTTP; the exact Send API calls our replies make recorded by the Graph double."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from fake_meta_messenger import APP_SECRET, PAGE_TOKEN, VERIFY_TOKEN, FakeMetaMessenger, graph_error, sign
from live import Live, live_channel
from snapshot import fixtures, read_fixture
from sqlalchemy import select

from frontdesk.errors import ChannelAPIError, ConfigError
from frontdesk.ingestion.accounts import AccountView, Credentials
from frontdesk.ingestion.channels.messenger.renderer import MessengerMediaFetcher, plan, sender_id
from frontdesk.ingestion.events import MediaRef
from frontdesk.output.blocks import ImageGroupBlock, TextBlock
from frontdesk.platform.store.schema import DeliveryPart, Job, Message
from harness import count, receipts

FIXTURES = fixtures("messenger")
PAGE_ID = "104857392016485"
PSID = "7234019865123456"
IG_ID = "17841405726653026"
IGSID = "8127364590213846"
FB_ACCOUNT = "fb-inkwell-01"
IG_ACCOUNT = "ig-inkwell-01"
SECRETS = {"app_secret": APP_SECRET, "verify_token": VERIFY_TOKEN, "page_access_token": PAGE_TOKEN}
PHOTO = b"\xff\xd8\xff\xe0" + b"jpeg-bytes" * 50
AUDIO = b"\x00\x00\x00\x18ftypmp42" + b"audio" * 100
HELLO = {"name": "hello", "default": [{"reply": "Hello from the shop!"}]}

# fixture -> (channel, user rows it stores)
STORED: dict[str, tuple[str, int]] = {
    "batch__two_entries.json": ("messenger", 3),
    "message__audio.json": ("messenger", 1),
    "message__fallback_link.json": ("messenger", 1),
    "message__file.json": ("messenger", 1),
    "message__image.json": ("messenger", 1),
    "message__quick_reply.json": ("messenger", 1),
    "message__reply_to.json": ("messenger", 1),
    "message__sticker.json": ("messenger", 1),
    "message__sticker_legacy.json": ("messenger", 1),
    "message__sticker_legacy_and_new.json": ("messenger", 1),
    "message__template_with_text.json": ("messenger", 1),
    "message__text.json": ("messenger", 1),
    "message__text_and_image.json": ("messenger", 1),
    "message__three_images.json": ("messenger", 3),
    "message__unicode.json": ("messenger", 1),
    "message__video.json": ("messenger", 1),
    "instagram_message__image.json": ("instagram", 1),
    "instagram_message__like_heart.json": ("instagram", 1),
    "instagram_message__story_mention.json": ("instagram", 1),
    "instagram_message__story_reply.json": ("instagram", 1),
    "instagram_message__text.json": ("instagram", 1),
}
IGNORED: dict[str, str] = {
    "delivery__watermark.json": "messenger",
    "message__deleted.json": "messenger",
    "message__other_page.json": "messenger",
    "message_echo__text.json": "messenger",
    "postback__get_started.json": "messenger",
    "reaction__love.json": "messenger",
    "read__watermark.json": "messenger",
    "standby__text.json": "messenger",
    "instagram_changes__comments.json": "instagram",
    "instagram_echo__text.json": "instagram",
    "instagram_message__unsupported.json": "instagram",
    "instagram_seen__read.json": "instagram",
}
MALFORMED = {"malformed__not_json.txt": 400, "malformed__no_entry.json": 422, "malformed__wrong_object.json": 422}


def fixture(name: str) -> bytes:
    return read_fixture("messenger", name)


def meta(db, tmp_path, channel: str = "messenger", chat=HELLO, **settings):
    account, config = (
        (FB_ACCOUNT, {"page_id": PAGE_ID}) if channel == "messenger" else (IG_ACCOUNT, {"instagram_id": IG_ID})
    )
    return live_channel(
        db,
        tmp_path,
        FakeMetaMessenger(),
        channel=channel,
        account_id=account,
        config=config,
        secrets=SECRETS,
        chat=chat,
        # The double serves the attachments on loopback: allowed, as a deployer allows a host of its
        # own network; tests/hostile/test_outbound_guard.py shows the refusals.
        **{"outbound_allow": ["127.0.0.1"], **settings},
    )


async def post(live: Live, raw: bytes, *, signature: str | None = "valid", url: str | None = None):
    headers = {"Content-Type": "application/json"}
    if signature is not None:
        headers["X-Hub-Signature-256"] = sign(raw) if signature == "valid" else signature
    return await live.http.post(url or f"/webhooks/{live.channel}/{live.account_id}", content=raw, headers=headers)


def on_the_double(live: Live, name: str) -> bytes:
    """The fixture with its image and audio CDN URLs moved onto the Graph double (the account's
    ``api_base_url``, the only non-CDN base we fetch from), each serving bytes."""
    body = json.loads(fixture(name))
    for entry in body.get("entry", []):
        for event in entry.get("messaging", []) + entry.get("standby", []):
            for attachment in (event.get("message") or {}).get("attachments", []):
                payload = attachment.get("payload") or {}
                if attachment["type"] not in ("image", "audio") or "url" not in payload:
                    continue
                url = urlsplit(payload["url"])
                path = f"/cdn/{url.hostname}{url.path}"
                live.platform.media[unquote(path)] = (
                    (PHOTO, "image/jpeg") if attachment["type"] == "image" else (AUDIO, "audio/mp4")
                )
                payload["url"] = f"{live.platform.base_url}{path}?{url.query}"
    return json.dumps(body).encode()


def outbound(live: Live) -> list[tuple[str, Any]]:
    """What the customer was sent: Send API calls other than typing indicators."""
    return [
        (c.path, c.body)
        for c in live.platform.calls
        if c.method == "POST" and not (isinstance(c.body, dict) and "sender_action" in c.body)
    ]


def text_call(recipient: str, text: str, sender: str = PAGE_ID) -> tuple[str, dict[str, Any]]:
    body = {"recipient": {"id": recipient}, "messaging_type": "RESPONSE", "message": {"text": text}}
    return (f"/v25.0/{sender}/messages", body)


def image_call(url: str) -> tuple[str, dict[str, Any]]:
    attachment = {"type": "image", "payload": {"url": url, "is_reusable": True}}
    body = {"recipient": {"id": PSID}, "messaging_type": "RESPONSE", "message": {"attachment": attachment}}
    return (f"/v25.0/{PAGE_ID}/messages", body)


# -- inbound: every fixture


@pytest.mark.parametrize("channel", ["messenger", "instagram"])
async def test_every_fixture_is_stored_or_ignored_as_its_kind_says(db, tmp_path, channel):
    """All of a channel's fixtures through one live app: the ignored ones first (nothing stored,
    nothing queued, nothing sent), then the ones that store rows."""
    ignored = [name for name, of in sorted(IGNORED.items()) if of == channel]
    stored = [name for name, (of, _) in sorted(STORED.items()) if of == channel]
    async with meta(db, tmp_path, channel) as live:
        seen: dict[str, tuple[int, Any, int]] = {}
        for name in ignored + stored:
            before = await count(db, Message, Message.role == "user")
            response = await post(live, on_the_double(live, name))
            seen[name] = (
                response.status_code,
                response.json(),
                await count(db, Message, Message.role == "user") - before,
            )
            if name == ignored[-1]:
                assert (await count(db, Job), live.platform.calls) == (0, [])
        await live.idle()

        expected = {name: (200, {"ok": True, "ignored": 1}, 0) for name in ignored}
        for name in stored:
            rows = STORED[name][1]
            expected[name] = (200, {"ok": True, "stored": rows, **({"ignored": 2} if "batch" in name else {})}, rows)
        assert seen == expected
        rows = await live.messages()
        assert {row.status for row in rows} == {"ready"}  # every download and transcript done...
        assert [row.meta["media_error"] for row in rows if "media_error" in row.meta] == []  # ...and none failed


async def test_a_batch_stores_every_message_and_ignores_the_receipts(db, tmp_path):
    async with meta(db, tmp_path) as live:
        response = await post(live, on_the_double(live, "batch__two_entries.json"))
        await live.idle()

        assert response.json() == {"ok": True, "stored": 3, "ignored": 2}
        rows = await live.messages()
        assert [(r.content_type, r.status) for r in rows] == [("text", "ready"), ("image", "ready"), ("file", "ready")]
        assert len({r.conversation_id for r in rows}) == 2  # two customers, two conversations


@pytest.mark.parametrize(("name", "status"), sorted(MALFORMED.items()))
async def test_a_signed_but_malformed_body_is_a_4xx_never_a_5xx(db, tmp_path, name, status):
    async with meta(db, tmp_path) as live:
        response = await post(live, fixture(name))

        assert response.status_code == status
        assert await count(db, Message) == 0


def test_every_fixture_in_the_folder_is_posted_by_a_test():
    assert sorted(p.name for p in FIXTURES.iterdir()) == sorted([*STORED, *IGNORED, *MALFORMED])


# -- authentication


def hub(token: str = VERIFY_TOKEN, mode: str | None = "subscribe") -> dict[str, str]:
    params = {"hub.verify_token": token, "hub.challenge": "1158201444"}
    return params if mode is None else {"hub.mode": mode, **params}


async def test_the_verification_handshake_answers_the_challenge_only_for_our_token(db, tmp_path):
    async with meta(db, tmp_path) as live:
        url = f"/webhooks/messenger/{FB_ACCOUNT}"
        ok = await live.http.get(url, params=hub())
        wrong = await live.http.get(url, params=hub("guess"))
        no_mode = await live.http.get(url, params=hub(mode=None))
        unknown = await live.http.get("/webhooks/messenger/no-such-acct", params=hub())
        other_product = await live.http.get(f"/webhooks/instagram/{FB_ACCOUNT}", params=hub())

        assert (ok.status_code, ok.text, ok.headers["content-type"].split(";")[0]) == (200, "1158201444", "text/plain")
        assert (wrong.status_code, no_mode.status_code) == (403, 422)
        assert (unknown.status_code, other_product.status_code) == (404, 404)


@pytest.mark.parametrize(
    ("header", "body_change"),
    [
        ("sha256=" + "0" * 64, None),  # forged
        (None, None),  # missing
        (sign(fixture("message__text.json"), "another-apps-secret"), None),  # another app's secret
        (sign(fixture("message__text.json")).replace("sha256=", "sha1="), None),  # not the sha256 header form
        (sign(fixture("message__text.json")), b"blue sneakers in size 43"),  # valid for other bytes
    ],
    ids=["forged", "missing", "other-secret", "wrong-prefix", "tampered-body"],
)
async def test_a_forged_or_missing_signature_is_refused_and_nothing_is_stored(db, tmp_path, header, body_change):
    async with meta(db, tmp_path) as live:
        raw = fixture("message__text.json")
        if body_change is not None:
            raw = raw.replace(b"blue sneakers in size 42", body_change)
        response = await post(live, raw, signature=header)

        assert (response.status_code, response.json()["error"]["code"]) == (401, "unauthorized")
        assert (await count(db, Message), await count(db, Job)) == (0, 0)
        assert live.platform.calls == []


async def test_an_unknown_account_or_another_channels_account_is_404(db, tmp_path):
    async with meta(db, tmp_path) as live:
        raw = fixture("message__text.json")
        unknown = await post(live, raw, url="/webhooks/messenger/no-such-acct")
        webchat = await post(live, raw, url="/webhooks/messenger/demo-webchat")
        as_instagram = await post(live, raw, url=f"/webhooks/instagram/{FB_ACCOUNT}")

        assert (unknown.status_code, webchat.status_code, as_instagram.status_code) == (404, 404, 404)
        assert await count(db, Message) == 0


# -- replies


async def test_a_text_message_is_answered_through_the_send_api(db, tmp_path):
    async with meta(db, tmp_path) as live:
        response = await post(live, fixture("message__text.json"))
        assert (response.status_code, response.json()) == (200, {"ok": True, "stored": 1})
        await live.idle()

        assert outbound(live) == [text_call(PSID, "Hello from the shop!")]
        typing = {"recipient": {"id": PSID}, "sender_action": "typing_on"}
        assert (f"/v25.0/{PAGE_ID}/messages", typing) in [(c.path, c.body) for c in live.platform.calls]
        assert all(c.headers["authorization"] == f"Bearer {PAGE_TOKEN}" for c in live.platform.calls)
        assert not any(PAGE_TOKEN in c.path for c in live.platform.calls)
        (receipt,) = await receipts(db)
        assert (receipt.status, receipt.sent_text, receipt.sent_image) == ("sent", 1, 0)
        async with db.read() as session:
            assert list(await session.scalars(select(DeliveryPart.platform_message_id))) == ["m_1"]


async def test_a_redelivered_body_stores_nothing_and_sends_nothing_new(db, tmp_path):
    async with meta(db, tmp_path) as live:
        await post(live, fixture("message__text.json"))
        await live.idle()
        again = await post(live, fixture("message__text.json"))
        await live.idle()

        assert again.json() == {"ok": True, "duplicate": 1}
        assert await count(db, Message, Message.role == "user") == 1
        assert outbound(live) == [text_call(PSID, "Hello from the shop!")]


async def test_an_album_of_three_images_is_three_image_messages_in_order_then_the_caption(db, tmp_path):
    async with meta(db, tmp_path) as live:
        await post(live, fixture("message__text.json"))
        await live.idle()
        live.platform.calls.clear()
        urls = [f"https://shop.example/p/{i}.png" for i in (1, 2, 3)]

        status = await live.deliver(PSID, [ImageGroupBlock(urls=urls, caption="Our flyers")])

        assert status == "sent"
        assert outbound(live) == [*map(image_call, urls), text_call(PSID, "Our flyers")]
        receipt = (await receipts(db))[-1]
        assert (receipt.sent_text, receipt.sent_image, receipt.parts_total) == (1, 3, 4)


async def test_a_failing_image_send_ends_partial_with_metas_error_and_the_rest_sent(db, tmp_path):
    async with meta(db, tmp_path) as live:
        await post(live, fixture("message__text.json"))
        await live.idle()
        live.platform.calls.clear()
        urls = [f"https://shop.example/p/{i}.png" for i in (1, 2, 3)]
        live.platform.fail_when = lambda call: (
            (400, graph_error(100, "(#100) Failed to fetch the image from the URL", 2018008))
            if urls[1] in json.dumps(call.body)
            else None
        )

        status = await live.deliver(PSID, [TextBlock(text="Here they are:"), ImageGroupBlock(urls=urls)])

        assert status == "partial"
        assert outbound(live) == [text_call(PSID, "Here they are:"), *map(image_call, urls)]  # all tried, in order
        receipt = (await receipts(db))[-1]
        assert (receipt.status, receipt.sent_text, receipt.sent_image) == ("partial", 1, 2)
        assert receipt.errors == [
            {
                "seq": 2,
                "block": 1,
                "kind": "image",
                "error": "ChannelAPIError: HTTP 400: 100 (#100) Failed to fetch the image from the URL",
            }
        ]
        assert PAGE_TOKEN not in str(receipt.errors)


def test_a_long_text_is_split_at_2000_characters_and_a_caption_follows_its_images():
    long_text = TextBlock.model_construct(text="We print flyers, posters and cards every day. " * 60)
    album = ImageGroupBlock(urls=["https://shop.example/p/1.png"], caption="Our flyers")

    parts = plan(PSID, [long_text, album])

    texts = [p.request["body"]["message"]["text"] for p in parts if p.kind == "text"]
    assert [len(t) <= 2000 for t in texts] == [True, True, True]
    assert [(p.block_index, p.kind, p.texts, p.images) for p in parts] == [
        (0, "text", 1, 0),
        (0, "text", 1, 0),
        (1, "image", 0, 1),
        (1, "text", 1, 0),
    ]


@pytest.mark.parametrize(
    ("config", "sender"),
    [
        ({"page_id": PAGE_ID}, PAGE_ID),
        ({"instagram_id": IG_ID}, IG_ID),
        ({"instagram_id": IG_ID, "page_id": PAGE_ID}, PAGE_ID),  # an IG account linked to a Page sends as it
        ({}, "me"),
    ],
)
def test_replies_are_sent_as_the_page_else_the_instagram_account_else_me(config, sender):
    assert sender_id(AccountView("acct-0001", "demo", "instagram", config, Credentials({}))) == sender


def test_an_id_that_could_change_the_api_path_is_a_config_error():
    with pytest.raises(ConfigError):
        sender_id(AccountView("acct-0001", "demo", "messenger", {"page_id": "../oauth"}, Credentials({})))


# -- customer media


async def test_an_inbound_image_is_downloaded_without_the_token_and_rehosted(db, tmp_path):
    async with meta(db, tmp_path) as live:
        response = await post(live, on_the_double(live, "message__image.json"))
        (row,) = await live.messages()
        assert (response.json(), row.status, row.content) == ({"ok": True, "stored": 1}, "pending", "[image: loading]")
        await live.idle()

        (row,) = await live.messages()
        assert (row.status, row.content, row.meta["media_mime"]) == ("ready", "[image]", "image/jpeg")
        assert (tmp_path / "media" / row.meta["media_key"]).read_bytes() == PHOTO
        (download,) = [c for c in live.platform.calls if c.method == "GET"]
        assert download.path.startswith("/cdn/scontent.xx.fbcdn.net/")
        assert "authorization" not in download.headers  # the Page token never goes to a CDN
        assert outbound(live) == [text_call(PSID, "Hello from the shop!")]


async def test_media_outside_metas_cdn_is_never_fetched(db, tmp_path):
    async with meta(db, tmp_path) as live:
        body = json.loads(fixture("message__image.json"))
        attachment = body["entry"][0]["messaging"][0]["message"]["attachments"][0]
        attachment["payload"]["url"] = "https://169.254.169.254/latest/meta-data/iam"
        response = await post(live, json.dumps(body).encode())
        await live.idle()

        (row,) = await live.messages()
        assert (response.json(), row.status, row.content) == (
            {"ok": True, "stored": 1},
            "ready",
            "[image: not available]",
        )
        fetcher = MessengerMediaFetcher(live.runtime.channel_deps)
        account = await live.runtime.channel_deps.accounts.get(FB_ACCOUNT, ("messenger",))
        for ref in (
            "https://169.254.169.254/x.jpg",
            "http://scontent.xx.fbcdn.net/x.jpg",
            "https://evil.example/fbcdn.net/x",
        ):
            with pytest.raises(ChannelAPIError, match="refused"):
                await fetcher.fetch(account, MediaRef(kind="image", ref=ref))
        assert [c for c in live.platform.calls if c.method == "GET"] == []


# -- Instagram


async def test_instagram_uses_the_same_flow_under_its_own_url_and_replies_as_the_ig_account(db, tmp_path):
    async with meta(db, tmp_path, "instagram") as live:
        response = await post(live, on_the_double(live, "instagram_message__image.json"))
        text = await post(live, fixture("instagram_message__text.json"))
        echo = await post(live, fixture("instagram_echo__text.json"))
        page_body = await post(live, fixture("message__text.json"))  # object "page" on the IG route
        await live.idle()

        assert [r.json() for r in (response, text, echo)] == [
            {"ok": True, "stored": 1},
            {"ok": True, "stored": 1},
            {"ok": True, "ignored": 1},
        ]
        assert page_body.status_code == 422
        image, _ = await live.messages()
        assert (image.status, (tmp_path / "media" / image.meta["media_key"]).read_bytes()) == ("ready", PHOTO)
        # Addressed to the IGSID through the Instagram account's id (one reply per turn the timing made).
        sent = outbound(live)
        assert len(sent) >= 1
        assert sent == [text_call(IGSID, "Hello from the shop!", sender=IG_ID)] * len(sent)
        assert {"recipient": {"id": IGSID}, "sender_action": "typing_on"} in [c.body for c in live.platform.calls]
