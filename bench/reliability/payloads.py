"""Customer messages as the four platforms deliver them: the channel's own ``message__text.json``
fixture with its ids, sender and text replaced, signed with the account's secret the way the
platform signs it. No tests here; used by storm.py and crash.py.

Every message text carries a token (``tg.c007.m2``: platform, customer, message) so a reply's
echo ("got: <the batch's texts>") says exactly which customer messages it answered.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
import random
import re
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from fakes import LINE_TOKEN, META_PAGE_TOKEN, PHONE_NUMBER_ID, TELEGRAM_TOKEN, WHATSAPP_TOKEN

TOKEN_PATTERN = re.compile(r"\b(?:tg|fb|wa|ln)\.c\d{3,}\.m\d+\b")
TELEGRAM_BOT_ID = "7351862094"
PAGE_ID = "104857392016485"
LINE_BOT = "U3f9c2a7e81b64d05a9e7c1d2b4f6a8c0"


def fixture(channel: str) -> dict[str, Any]:
    raw = resources.files(f"frontdesk.ingestion.channels.{channel}").joinpath("fixtures", "message__text.json")
    data: dict[str, Any] = json.loads(raw.read_bytes())
    return data


@dataclass(frozen=True)
class Webhook:
    """One customer message as one platform POST (``copy_body(n)``: the n-th delivery of it)."""

    platform: str
    token: str  # the message's token, also its text's last word
    customer: str  # the contact's external id in frontdesk
    path: str
    body: bytes
    headers: dict[str, str]
    redelivery_body: bytes | None = None  # LINE marks a redelivery in the body (re-signed)
    redelivery_headers: dict[str, str] | None = None

    def delivery(self, n: int) -> tuple[bytes, dict[str, str]]:
        if n > 0 and self.redelivery_body is not None and self.redelivery_headers is not None:
            return self.redelivery_body, self.redelivery_headers
        return self.body, self.headers


@dataclass
class Platform:
    """One channel account of the demo tenant and the payloads its platform would send it."""

    name: str  # the platform fake's name: telegram, messenger, whatsapp, line
    short: str  # the token prefix
    account_id: str
    config: dict[str, str]
    secrets: dict[str, str]
    seq: int = 0
    reply_tokens: dict[str, str] = field(default_factory=dict)  # LINE: reply token -> customer

    @property
    def channel(self) -> str:
        return self.name

    def customer(self, i: int) -> str:
        """The external id frontdesk files customer ``i`` under (chat id, PSID, wa_id, user id)."""
        if self.name == "telegram":
            return str(6112000000 + i)
        if self.name == "messenger":
            return f"7234019865{i:06d}"
        if self.name == "whatsapp":
            return f"1650555{i:04d}"
        return "U" + hashlib.md5(f"{self.account_id}/{i}".encode()).hexdigest()

    def webhook(self, i: int, k: int, run: str) -> Webhook:
        """Message ``k`` of customer ``i``."""
        self.seq += 1
        token = f"{self.short}.c{i:03d}.m{k}"
        text = f"hello from customer {i}, message {k}: {token}"
        customer = self.customer(i)
        body = getattr(self, f"_{self.name}")(customer, text, run, i, k)
        raw = json.dumps(body).encode()
        path = f"/webhooks/{self.channel}/{self.account_id}"
        if self.name != "line":
            return Webhook(self.name, token, customer, path, raw, self.sign(raw))
        again = copy.deepcopy(body)
        again["events"][0]["deliveryContext"]["isRedelivery"] = True
        raw_again = json.dumps(again).encode()
        return Webhook(self.name, token, customer, path, raw, self.sign(raw), raw_again, self.sign(raw_again))

    def sign(self, raw: bytes) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.name == "telegram":
            headers["X-Telegram-Bot-Api-Secret-Token"] = self.secrets["webhook_secret"]
        elif self.name in ("messenger", "whatsapp"):
            hexdigest = hmac.new(self.secrets["app_secret"].encode(), raw, hashlib.sha256).hexdigest()
            headers["X-Hub-Signature-256"] = f"sha256={hexdigest}"
        else:
            digest = hmac.new(self.secrets["channel_secret"].encode(), raw, hashlib.sha256).digest()
            headers["X-Line-Signature"] = base64.b64encode(digest).decode()
        return headers

    # -- the platforms' formats (their fixture, with our ids and text)

    def _telegram(self, customer: str, text: str, run: str, i: int, k: int) -> dict[str, Any]:
        body = fixture("telegram")
        message = body["message"]
        body["update_id"] = 100_000_000 + self.seq
        message["message_id"] = 1000 + k
        message["from"]["id"] = message["chat"]["id"] = int(customer)
        message["from"]["username"] = message["chat"]["username"] = f"customer{i}_{run}"
        message["date"] = int(time.time())
        message["text"] = text
        message.pop("entities", None)
        return body

    def _messenger(self, customer: str, text: str, run: str, i: int, k: int) -> dict[str, Any]:
        body = fixture("messenger")
        now_ms = int(time.time() * 1000)
        body["entry"][0]["time"] = now_ms
        event = body["entry"][0]["messaging"][0]
        event["sender"]["id"] = customer
        event["timestamp"] = now_ms
        event["message"] = {"mid": f"m_{run}_{self.seq:07d}_{i}_{k}", "text": text}
        return body

    def _whatsapp(self, customer: str, text: str, run: str, i: int, k: int) -> dict[str, Any]:
        body = fixture("whatsapp")
        value = body["entry"][0]["changes"][0]["value"]
        value["contacts"][0]["wa_id"] = customer
        value["contacts"][0]["profile"]["name"] = f"Customer {i}"
        message = value["messages"][0]
        message["from"] = customer
        message["id"] = f"wamid.{run}{self.seq:07d}"
        message["timestamp"] = str(int(time.time()))
        message["text"]["body"] = text
        return body

    def _line(self, customer: str, text: str, run: str, i: int, k: int) -> dict[str, Any]:
        body = fixture("line")
        event = body["events"][0]
        reply_token = hashlib.sha256(f"{run}/{self.seq}".encode()).hexdigest()[:32]
        self.reply_tokens[reply_token] = customer
        event["replyToken"] = reply_token
        event["timestamp"] = int(time.time() * 1000)
        event["source"]["userId"] = customer
        event["webhookEventId"] = f"01J{run.upper()}{self.seq:010d}"[:26].ljust(26, "0")
        event["message"]["id"] = str(517_000_000_000_000_000 + self.seq)
        event["message"]["text"] = text
        return body


def platforms(rng: random.Random, api_bases: dict[str, str]) -> list[Platform]:
    """The four accounts, their webhook secrets drawn from ``rng``; outbound calls go to ``api_bases``."""

    def secret(n: int = 32) -> str:
        return "".join(rng.choice("0123456789abcdef") for _ in range(n))

    return [
        Platform(
            "telegram",
            "tg",
            "bench-tg-01",
            {"bot_id": TELEGRAM_BOT_ID, "api_base_url": api_bases["telegram"]},
            {"bot_token": TELEGRAM_TOKEN, "webhook_secret": secret()},
        ),
        Platform(
            "messenger",
            "fb",
            "bench-fb-01",
            {"page_id": PAGE_ID, "api_base_url": api_bases["messenger"]},
            {"app_secret": secret(), "verify_token": secret(16), "page_access_token": META_PAGE_TOKEN},
        ),
        Platform(
            "whatsapp",
            "wa",
            "bench-wa-01",
            {"phone_number_id": PHONE_NUMBER_ID, "api_base_url": api_bases["whatsapp"]},
            {"app_secret": secret(), "verify_token": secret(16), "access_token": WHATSAPP_TOKEN},
        ),
        Platform(
            "line",
            "ln",
            "bench-ln-01",
            {"destination": LINE_BOT, "api_base_url": api_bases["line"]},
            {"channel_secret": secret(), "channel_access_token": LINE_TOKEN},
        ),
    ]


def tokens_in(text: str) -> list[str]:
    return TOKEN_PATTERN.findall(text)
