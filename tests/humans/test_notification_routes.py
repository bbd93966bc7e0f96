"""The three routes against loopback doubles: an SMTP server, the Telegram Bot API, a webhook
receiver that checks the signature."""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import time

import httpx2
import pytest
from test_notification_kit import (
    BOT_TOKEN,
    LOOPBACK,
    WEBHOOK_SECRET,
    FakeBotApi,
    SmtpSink,
    WebhookReceiver,
    bot_api,
    guarded,
    receiving,
    smtp_sink,
)

from frontdesk.errors import ConfigError, PayloadError
from frontdesk.humans.notifications import Delivery, DeliveryError, MappingSecrets, RouteUnavailable, sign, verify
from frontdesk.humans.notifications.smtp import EmailRoute, SmtpServer
from frontdesk.humans.notifications.telegram import BOT_TOKEN_SECRET, TelegramRoute
from frontdesk.humans.notifications.templates import render
from frontdesk.humans.notifications.webhook import WebhookRoute, check_webhook_url

TENANT = "t_shop"
SECRETS = MappingSecrets({(TENANT, BOT_TOKEN_SECRET): BOT_TOKEN, (TENANT, "hook_secret"): WEBHOOK_SECRET})
DOCUMENT = {"id": 7, "kind": "handoff", "tenant_id": TENANT, "text": "Quiere hablar con una persona"}


def delivery(address: str, *, language: str = "vi", secret_name: str | None = None) -> Delivery:
    message = render(
        "handoff",
        {"conversation_id": "conv_1"},
        "Khách muốn in lại danh thiếp",
        language=language,
        business="Print & Copy",
        link="https://desk.test/c/conv_1",
    )
    return Delivery(41, TENANT, address, message, DOCUMENT, secret_name)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- e-mail


def email_route(port: int) -> EmailRoute:
    return EmailRoute(SmtpServer("127.0.0.1", port, False, None, None), "desk@shop.test", timeout_s=5)


async def test_email_reaches_the_smtp_server_in_the_operators_language():
    async with smtp_sink(SmtpSink()) as sink:
        await email_route(sink.port).send(delivery("ana@shop.test"))

    (mail,) = sink.messages
    assert {k: mail[k] for k in ("From", "To", "Subject", "Content-Language", "Auto-Submitted")} == {
        "From": "desk@shop.test",
        "To": "ana@shop.test",
        "Subject": "Print & Copy: khách hàng muốn gặp nhân viên",
        "Content-Language": "vi",
        "Auto-Submitted": "auto-generated",
    }
    assert mail.get_content().splitlines()[:3] == [
        "Khách muốn in lại danh thiếp",
        "",
        "Cuộc hội thoại: https://desk.test/c/conv_1",
    ]


async def test_an_address_the_smtp_server_refuses_is_a_permanent_failure():
    async with smtp_sink(SmtpSink(refuse={"gone@shop.test"})) as sink:
        with pytest.raises(DeliveryError) as refused:
            await email_route(sink.port).send(delivery("gone@shop.test"))

    assert (str(refused.value), refused.value.permanent) == ("SMTP 550: 5.1.1 no such mailbox", True)


async def test_an_smtp_server_that_does_not_answer_is_a_failure_worth_retrying():
    with pytest.raises(DeliveryError) as down:
        await email_route(closed_port()).send(delivery("ana@shop.test"))

    assert (str(down.value).startswith("SMTP: ConnectionRefusedError"), down.value.permanent) == (True, False)


def test_smtp_url_keeps_tls_and_never_echoes_the_password():
    assert SmtpServer.parse("smtp://desk%40shop.test:s3cret@mail.shop.test") == SmtpServer(
        "mail.shop.test", 587, False, "desk@shop.test", "s3cret"
    )
    assert SmtpServer.parse("smtps://u:p@mail.shop.test").port == 465
    with pytest.raises(ConfigError) as bad:
        SmtpServer.parse("http://u:s3cret@mail.shop.test")
    assert "s3cret" not in str(bad.value)


def non_loopback_address() -> str | None:
    """This machine's address on a real interface (connecting a UDP socket sends nothing)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            address = str(s.getsockname()[0])
    except OSError:
        return None
    return None if address.startswith("127.") else address


async def test_a_remote_smtp_server_without_starttls_is_sent_nothing_in_the_clear():
    host = non_loopback_address()
    if host is None:
        # The refusal can only be shown to a server off loopback. A laptop without a network skips
        # it; CI (FRONTDESK_CI) has an interface, so there a missing one fails instead of hiding.
        if os.environ.get("FRONTDESK_CI"):
            pytest.fail("no non-loopback interface to listen on, and CI must run this test")
        pytest.skip("no non-loopback interface to listen on")
    async with smtp_sink(SmtpSink(), host) as sink:
        route = EmailRoute(SmtpServer(host, sink.port, False, "desk", "s3cret"), "desk@shop.test", timeout_s=5)
        with pytest.raises(DeliveryError) as refused:
            await route.send(delivery("ana@shop.test"))

    assert (str(refused.value), sink.messages) == ("the SMTP server offers no STARTTLS; not sending in the clear", [])


# -- Telegram


async def test_telegram_sends_the_message_to_the_operators_chat_with_the_tenants_bot_token():
    async with bot_api(FakeBotApi()) as api, httpx2.AsyncClient() as http:
        await TelegramRoute(http, SECRETS, timeout_s=5, api_base=api.base_url).send(delivery("5001"))

    (call,) = api.calls
    assert (call.path, call.body["chat_id"], call.body["link_preview_options"]) == (
        f"/bot{BOT_TOKEN}/sendMessage",
        "5001",
        {"is_disabled": True},
    )
    assert call.body["text"].startswith("Print & Copy: khách hàng muốn gặp nhân viên\n\nKhách muốn in lại danh thiếp")


async def test_telegram_refusals_are_permanent_and_never_carry_the_token():
    api = FakeBotApi(
        fail_when=lambda call: (403, {"ok": False, "description": "Forbidden: bot was blocked by the user"})
    )
    async with bot_api(api), httpx2.AsyncClient() as http:
        with pytest.raises(DeliveryError) as blocked:
            await TelegramRoute(http, SECRETS, timeout_s=5, api_base=api.base_url).send(delivery("5001"))
        unreachable = TelegramRoute(http, SECRETS, timeout_s=5, api_base=f"http://127.0.0.1:{closed_port()}")
        with pytest.raises(DeliveryError) as down:
            await unreachable.send(delivery("5001"))

    assert (str(blocked.value), blocked.value.permanent) == (
        "Telegram HTTP 403: Forbidden: bot was blocked by the user",
        True,
    )
    assert (str(down.value), down.value.permanent, down.value.__cause__) == ("Telegram: ConnectError", False, None)


async def test_telegram_without_a_bot_token_or_a_linked_chat_is_skipped():
    async with httpx2.AsyncClient() as http:
        route = TelegramRoute(http, MappingSecrets({}), timeout_s=5)
        with pytest.raises(RouteUnavailable, match="no Telegram bot token"):
            await route.send(delivery("5001"))
        with pytest.raises(RouteUnavailable, match="no Telegram chat linked"):
            await route.send(delivery(""))


# -- webhooks


async def test_the_webhook_body_is_signed_and_the_receiver_verifies_it():
    async with receiving(WebhookReceiver()) as receiver, guarded() as http:
        await WebhookRoute(http, SECRETS, timeout_s=5).send(delivery(receiver.url, secret_name="hook_secret"))

    ((headers, body),) = receiver.received
    assert (body, headers["frontdesk-event"], headers["frontdesk-delivery"], receiver.forged) == (
        DOCUMENT,
        "handoff",
        "41",
        0,
    )


def test_the_signature_is_hmac_sha256_over_timestamp_dot_raw_body():
    body = b'{"kind":"handoff"}'
    expected = hmac.new(WEBHOOK_SECRET.encode(), b"1767000000." + body, hashlib.sha256).hexdigest()

    assert sign(WEBHOOK_SECRET, 1767000000, body) == f"t=1767000000,v1={expected}"
    assert verify(WEBHOOK_SECRET, f"t=1767000000,v1={expected}", body, now=1767000100)
    assert not verify(WEBHOOK_SECRET, f"t=1767000000,v1={expected}", body + b" ", now=1767000100)  # tampered
    assert not verify("another-secret", f"t=1767000000,v1={expected}", body, now=1767000100)
    assert not verify(WEBHOOK_SECRET, f"t=1767000000,v1={expected}", body, now=1767000000 + 301)  # replayed
    assert not verify(WEBHOOK_SECRET, "garbage", body, now=time.time())


async def test_a_receiver_answering_4xx_is_a_permanent_failure_and_5xx_is_retried():
    async with guarded() as http:
        route = WebhookRoute(http, SECRETS, timeout_s=5)
        for status, permanent in ((410, True), (503, False)):
            async with receiving(WebhookReceiver(status=status)) as receiver:
                with pytest.raises(DeliveryError) as failed:
                    await route.send(delivery(receiver.url, secret_name="hook_secret"))
            assert (str(failed.value).startswith(f"webhook HTTP {status}"), failed.value.permanent) == (True, permanent)


async def test_a_webhook_without_its_signing_secret_is_skipped_not_sent_unsigned():
    async with receiving(WebhookReceiver()) as receiver, guarded() as http:
        with pytest.raises(RouteUnavailable, match="no signing secret"):
            await WebhookRoute(http, SECRETS, timeout_s=5).send(delivery(receiver.url, secret_name="missing"))

    assert receiver.received == []


@pytest.mark.parametrize(
    "url", ["http://crm.example.com/hook", "ftp://crm.example.com/", "not a url", "http://127.0.0.1:9000/hook"]
)
def test_webhook_urls_must_be_https_except_to_an_allowed_host(url):
    check_webhook_url("https://crm.example.com/hook")
    check_webhook_url("http://127.0.0.1:9000/hook", LOOPBACK)
    with pytest.raises(PayloadError):
        check_webhook_url(url)
