"""Two shops on one running app, for the tenant-isolation matrix (``test_tenant_isolation.py``).

Each shop is a tenant with every channel the suite can configure (Telegram, Messenger, Instagram,
WhatsApp, LINE, web chat), its own platform ids and its own credentials, sealed in the vault under
its tenant. Each has an owner, a customer on every channel who got one reply (so conversations,
messages, receipts and delivery parts exist), an open task, a notification webhook with a
subscription, and a re-hosted image. Every text and secret of a shop carries its word ("alpha",
"bravo"), so a response that shows the other shop's data is found by looking for that word.

The app is served on loopback (SSE needs real HTTP) with its job runner going. One double per
platform serves both shops: it answers either shop's token and records which one each call used.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

# The platform doubles and the loopback server live with the channel tests, the console's
# sign-in helpers with the console tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "channels"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "console"))

import httpx2
from console_kit import csrf_of, sign_in
from fake_line import TOKEN as LINE_TOKEN
from fake_line import FakeLine
from fake_meta_messenger import PAGE_TOKEN, FakeMetaMessenger
from fake_telegram import TOKEN as TELEGRAM_TOKEN
from fake_telegram import FakeTelegram
from fake_whatsapp import FakeWhatsApp
from loopback import Call, FakePlatform, client, running, serve
from snapshot import read_fixture
from sqlalchemy import select

from frontdesk.app import create_app
from frontdesk.business import Actor, BusinessStore, ItemFields
from frontdesk.cli_accounts import upsert_account
from frontdesk.cli_operators import add_operator
from frontdesk.humans.notifications.subscriptions import add_webhook, subscribe
from frontdesk.humans.tasks import open_task
from frontdesk.ingestion.channels import CHANNELS as REGISTRY
from frontdesk.platform.ids import TenantId
from frontdesk.platform.models.gateway import ModelGateway
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import DeliveryPart, Receipt, Tenant
from frontdesk.platform.store.schema_console import Operator
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from harness import FAST, reply, script_client, wait_idle

CHANNELS = ("telegram", "messenger", "instagram", "whatsapp", "line", "webchat")
WEBHOOK_CHANNELS = CHANNELS[:-1]
META = ("messenger", "instagram", "whatsapp")  # Meta's handshake and X-Hub-Signature-256
PREFIX = {"telegram": "tg", "messenger": "fb", "instagram": "ig", "whatsapp": "wa", "line": "line", "webchat": "web"}
ECHO = {"name": "echo", "default": [reply("echo: {user_text}")]}
PASSWORD = "correct horse battery"
VAULT_KEY = base64.b64encode(bytes(range(101, 133))).decode()
IMAGE = b"\x89PNG\r\n\x1a\n" + b"the same picture in both shops" * 20


@dataclass(frozen=True)
class Shop:
    """One tenant's identity on every channel; ``n`` keeps its platform ids apart from the other's."""

    letter: str
    word: str
    n: int

    @property
    def tenant(self) -> str:
        return f"shop-{self.letter}"

    @property
    def name(self) -> str:
        return f"{self.word.title()} Prints"

    @property
    def owner(self) -> str:
        return f"owner@{self.word}.test"

    def account(self, channel: str) -> str:
        return f"{PREFIX[channel]}-{self.letter}-0001"

    def own_id(self, channel: str) -> str:
        """The id the platform addresses this shop by (page, Instagram account, number, bot)."""
        return {
            "telegram": str(7_000_000 + self.n),
            "messenger": f"10485739201648{self.n}",
            "instagram": f"1784140572665302{self.n}",
            "whatsapp": f"10654035224292{self.n}",
            "line": f"U{self.n:032x}",
        }[channel]

    def config(self, channel: str) -> dict[str, str]:
        key = {"telegram": "bot_id", "messenger": "page_id", "instagram": "instagram_id"}.get(channel)
        key = key or {"whatsapp": "phone_number_id", "line": "destination"}.get(channel)
        return {key: self.own_id(channel)} if key else {}

    def secrets(self, channel: str) -> dict[str, str]:
        w = self.word
        return {
            "telegram": {"bot_token": f"{self.own_id('telegram')}:{w}-bot-token", "webhook_secret": f"{w}-tg-hook"},
            "messenger": {
                "app_secret": f"{w}-messenger-app-secret",
                "verify_token": f"{w}-messenger-verify",
                "page_access_token": f"EAA-{w}-page-token",
            },
            "instagram": {
                "app_secret": f"{w}-instagram-app-secret",
                "verify_token": f"{w}-instagram-verify",
                "page_access_token": f"EAA-{w}-instagram-token",
            },
            "whatsapp": {
                "app_secret": f"{w}-whatsapp-app-secret",
                "verify_token": f"{w}-whatsapp-verify",
                "access_token": f"EAA-{w}-whatsapp-token",
            },
            "line": {"channel_secret": f"{w}-line-channel-secret", "channel_access_token": f"{w}-line-access-token"},
            "webchat": {},
        }[channel]

    def outbound_token(self, channel: str) -> str:
        """The credential our replies on ``channel`` must carry."""
        name = {"telegram": "bot_token", "line": "channel_access_token", "whatsapp": "access_token"}
        return self.secrets(channel)[name.get(channel, "page_access_token")]

    def customer(self, channel: str) -> str:
        """The external id of this shop's customer on ``channel`` (a web chat session for web chat)."""
        return {
            "telegram": str(6_112_093_840 + self.n),
            "messenger": f"723401986512345{self.n}",
            "instagram": f"812736459021384{self.n}",
            "whatsapp": f"1650555123{self.n}",
            "line": f"U{'c' * 31}{self.n}",
            "webchat": f"session-{self.n}-7f3a9c",
        }[channel]

    def key(self, channel: str, i: int = 0) -> str:
        """The platform's id of this shop customer's ``i``-th message (0: the one in the world)."""
        return {
            "telegram": str(583_920_400 + self.n + 10 * i),
            "messenger": f"m_{i}_{self.n}",
            "instagram": f"ig_{i}_{self.n}",
            "whatsapp": f"wamid.M{i}X{self.n}",
            "line": f"01HZ{i}X{self.n}",
            "webchat": f"m{i}",
        }[channel]

    def said(self, channel: str) -> str:
        return f"{self.word} {channel} customer: order {self.word.upper()}-{self.n}00, please keep it private"


ALPHA, BRAVO = Shop("a", "alpha", 1), Shop("b", "bravo", 2)


# -- vendor-format request bodies and their credentials


def _fixture(channel: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(read_fixture(channel, name))
    return data


def inbound(channel: str, to: Shop, sender: str, key: str, text: str) -> bytes:
    """A customer text message in the platform's own format (a real fixture with its ids
    replaced), addressed to ``to``'s page / number / bot, from ``sender``, with message id ``key``."""
    if channel == "telegram":
        data = _fixture("telegram", "message__text.json")
        data["update_id"] = int(key)
        message = data["message"]
        message.pop("entities")
        message.update(message_id=int(key) % 100_000, text=text)
        message["from"]["id"] = message["chat"]["id"] = int(sender)
    elif channel in ("messenger", "instagram"):
        data = _fixture("messenger", "message__text.json" if channel == "messenger" else "instagram_message__text.json")
        entry = data["entry"][0]
        entry["id"] = to.own_id(channel)
        event = entry["messaging"][0]
        event["sender"]["id"], event["recipient"]["id"] = sender, to.own_id(channel)
        event["message"] = {"mid": key, "text": text}
    elif channel == "whatsapp":
        data = _fixture("whatsapp", "message__text.json")
        value = data["entry"][0]["changes"][0]["value"]
        value["metadata"]["phone_number_id"] = to.own_id(channel)
        value["contacts"][0]["wa_id"] = sender
        value["messages"][0].update({"from": sender, "id": key, "text": {"body": text}})
    elif channel == "line":
        data = _fixture("line", "message__text.json")
        data["destination"] = to.own_id(channel)
        event = data["events"][0]
        event["source"]["userId"] = sender
        event.update(webhookEventId=key, replyToken=hashlib.sha1(key.encode()).hexdigest()[:32])
        event["message"].update(id=str(int(hashlib.sha1(key.encode()).hexdigest()[:12], 16)), text=text)
    else:
        raise ValueError(f"no webhook for {channel}")
    return json.dumps(data).encode()


def batch(*raws: bytes) -> bytes:
    """Meta's batching: the entries of several bodies (of one ``object``) in one POST."""
    bodies = [json.loads(raw) for raw in raws]
    return json.dumps({**bodies[0], "entry": [entry for body in bodies for entry in body["entry"]]}).encode()


def whatsapp_status(to: Shop, wamid: str, status: str = "read") -> bytes:
    """WhatsApp's callback that the message ``wamid`` we sent was ``status``."""
    data = _fixture("whatsapp", "status__delivered.json")
    value = data["entry"][0]["changes"][0]["value"]
    value["metadata"]["phone_number_id"] = to.own_id("whatsapp")
    value["statuses"][0].update(id=wamid, status=status)
    return json.dumps(data).encode()


def signed(channel: str, by: Shop, raw: bytes) -> dict[str, str]:
    """The headers the platform sends with ``raw`` for ``by``'s account."""
    secrets = by.secrets(channel)
    headers = {"Content-Type": "application/json"}
    if channel == "telegram":
        headers["X-Telegram-Bot-Api-Secret-Token"] = secrets["webhook_secret"]
    elif channel == "line":
        digest = hmac.new(secrets["channel_secret"].encode(), raw, hashlib.sha256).digest()
        headers["X-Line-Signature"] = base64.b64encode(digest).decode()
    else:
        digest = hmac.new(secrets["app_secret"].encode(), raw, hashlib.sha256).hexdigest()
        headers["X-Hub-Signature-256"] = f"sha256={digest}"
    return headers


def webhook_url(channel: str, account: str) -> str:
    return f"/webhooks/{channel}/{account}"


# -- platform doubles that serve both shops


def _tokens(channel: str) -> dict[str, str]:
    """Each shop's outbound token on ``channel`` -> the one token the stock double accepts."""
    stock = {"telegram": TELEGRAM_TOKEN, "line": LINE_TOKEN}.get(channel, PAGE_TOKEN)
    return {shop.outbound_token(channel): stock for shop in (ALPHA, BRAVO)}


@dataclass
class TelegramDouble(FakeTelegram):
    """Answers either shop's bot token as the stock double answers its own (likewise below)."""

    def respond(self, call: Call) -> Any:
        for token, stock in _tokens("telegram").items():
            if call.path.startswith(f"/bot{token}/"):
                call = replace(call, path=call.path.replace(token, stock, 1))
        return super().respond(call)


@dataclass
class MetaDouble(FakeMetaMessenger):
    def respond(self, call: Call) -> Any:
        tokens = {**_tokens("messenger"), **_tokens("instagram")}
        given = call.headers.get("authorization", "").removeprefix("Bearer ")
        if given in tokens:
            call = replace(call, headers={**call.headers, "authorization": f"Bearer {tokens[given]}"})
        return super().respond(call)


@dataclass
class LineDouble(FakeLine):
    def refuse(self, call: Call) -> tuple[int, Any] | None:
        tokens = _tokens("line")
        given = call.headers.get("authorization", "").removeprefix("Bearer ")
        if given in tokens:
            call = replace(call, headers={**call.headers, "authorization": f"Bearer {tokens[given]}"})
        return super().refuse(call)


@dataclass
class Doubles:
    telegram: TelegramDouble = field(default_factory=TelegramDouble)
    meta: MetaDouble = field(default_factory=MetaDouble)  # Messenger and Instagram
    whatsapp: FakeWhatsApp = field(default_factory=FakeWhatsApp)
    line: LineDouble = field(default_factory=LineDouble)

    def of(self, channel: str) -> FakePlatform:
        return {"telegram": self.telegram, "whatsapp": self.whatsapp, "line": self.line}.get(channel, self.meta)

    def tokens_used(self, channel: str, text: str) -> list[str]:
        """The credential on every call that sent ``text`` to a customer on ``channel``."""
        calls = [c for c in self.of(channel).calls if c.method == "POST" and text in json.dumps(c.body)]
        if channel == "telegram":
            return [c.path.split("/")[1].removeprefix("bot") for c in calls]
        return [c.headers.get("authorization", "").removeprefix("Bearer ") for c in calls]


# -- the world


@dataclass
class World:
    runtime: Runtime
    http: httpx2.AsyncClient
    base_url: str
    doubles: Doubles
    ids: dict[str, str] = field(default_factory=dict)  # named rows of both shops (see ``two_shops``)

    @property
    def db(self) -> Database:
        return self.runtime.db

    async def conversation(self, shop: Shop, channel: str, customer: str | None = None) -> str | None:
        return await self.runtime.ingestor.find_conversation(shop.account(channel), customer or shop.customer(channel))

    async def customer_writes(self, channel: str, shop: Shop, *, sender: str, key: str, text: str) -> httpx2.Response:
        """A genuine request to ``shop``'s account: signed with its credentials, addressed to it."""
        if channel == "webchat":
            body = {"session": sender, "id": key, "text": text}
            return await self.http.post(f"/v1/webchat/{shop.account(channel)}/messages", json=body)
        raw = inbound(channel, shop, sender, key, text)
        return await self.http.post(
            webhook_url(channel, shop.account(channel)), content=raw, headers=signed(channel, shop, raw)
        )

    @asynccontextmanager
    async def console(self, shop: Shop) -> AsyncIterator[tuple[httpx2.AsyncClient, str]]:
        """A browser signed in to the console as ``shop``'s owner, and its CSRF token."""
        async with client(self.base_url) as browser:
            answer = await sign_in(browser, shop.owner, PASSWORD)
            assert answer.status_code == 303, answer.text
            yield browser, await csrf_of(browser)


async def _open_shop(runtime: Runtime, shop: Shop, doubles: Doubles) -> None:
    now = runtime.clock.now()
    async with runtime.db.transaction() as session:
        session.add(Tenant(id=shop.tenant, name=shop.name, pack="catalog", policy={}, created_at=now))
    for channel in CHANNELS:
        api = {"api_base_url": doubles.of(channel).base_url} if channel != "webchat" else {}
        await upsert_account(
            runtime.db,
            account_id=shop.account(channel),
            tenant_id=shop.tenant,
            channel=channel,
            name=f"{shop.name} {channel}",
            config={**shop.config(channel), **api},
            secrets=shop.secrets(channel),
            now=now,
            vault=runtime.channel_deps.accounts.vault,
            own_id=REGISTRY[channel].own_id,
        )
    await add_operator(
        runtime.db,
        tenant_id=shop.tenant,
        email=shop.owner,
        name=f"{shop.word.title()} Owner",
        role="owner",
        password=PASSWORD,
        language="en",
        now=now,
    )


async def _back_office(world: World, shop: Shop) -> None:
    """The rows an operator's work leaves: a task, a webhook and two subscriptions, media."""
    now = world.runtime.clock.now()
    ids = world.ids
    async with world.db.transaction() as session:
        conversation = ids[f"{shop.letter}.conversation.telegram"]
        task = await open_task(
            session,
            tenant_id=shop.tenant,
            conversation_id=conversation,
            kind="handoff",
            priority="high",
            title=f"{shop.word} task: call the customer back",
            details={},
            now=now,
        )
        hook = await add_webhook(
            session, tenant_id=shop.tenant, name=f"{shop.word} CRM", url="https://crm.example/hook", now=now
        )
        owner = await session.scalar(select(Operator.id).where(Operator.email == shop.owner))
        assert owner is not None
        by_operator = await subscribe(session, tenant_id=shop.tenant, kind="handoff", now=now, operator_id=owner)
        by_webhook = await subscribe(session, tenant_id=shop.tenant, kind="lead", now=now, webhook_id=hook.id)
    media = world.runtime.channel_deps.media
    store = BusinessStore(world.db, world.runtime.clock, media)
    special = ItemFields(id=f"{shop.word}-special", name={"en": f"{shop.word} special"}, price="on_request")
    await store.save_item(shop.tenant, special, Actor(), create=True)
    photo = await store.add_photo(shop.tenant, special.id, IMAGE + b"photo" + shop.word.encode(), {}, Actor())
    same = await media.put(TenantId(shop.tenant), IMAGE, "image/png")
    own = await media.put(TenantId(shop.tenant), IMAGE + shop.word.encode(), "image/png")
    ids.update(
        {
            f"{shop.letter}.task": task.id,
            f"{shop.letter}.webhook": hook.id,
            f"{shop.letter}.operator": owner,
            f"{shop.letter}.subscription": str(by_operator.id),
            f"{shop.letter}.subscription.webhook": str(by_webhook.id),
            f"{shop.letter}.media.same": same.key,
            f"{shop.letter}.media.own": own.key,
            f"{shop.letter}.photo": photo.file_name,
        }
    )


@asynccontextmanager
async def two_shops(db: Database, tmp_path: Path) -> AsyncIterator[World]:
    doubles = Doubles()
    async with AsyncExitStack() as stack:
        for double in (doubles.telegram, doubles.meta, doubles.whatsapp, doubles.line):
            await stack.enter_async_context(running(double))
        runtime = Runtime.build(
            Settings(**{**FAST, "media_dir": tmp_path / "media", "vault_key": VAULT_KEY}),
            gateway=ModelGateway.with_clients({"chat": script_client(ECHO)}),
            db=db,
        )
        stack.push_async_callback(runtime.close)
        for shop in (ALPHA, BRAVO):
            await _open_shop(runtime, shop, doubles)
        base_url = await stack.enter_async_context(serve(create_app(runtime)))
        http = await stack.enter_async_context(client(base_url))
        world = World(runtime, http, base_url, doubles)
        for shop in (ALPHA, BRAVO):
            for channel in CHANNELS:
                customer = shop.customer(channel)
                answer = await world.customer_writes(
                    channel, shop, sender=customer, key=shop.key(channel), text=shop.said(channel)
                )
                assert answer.status_code in (200, 202), answer.text
        await wait_idle(db)
        for shop in (ALPHA, BRAVO):
            for channel in CHANNELS:
                conversation = await world.conversation(shop, channel)
                assert conversation is not None, (shop.word, channel)
                world.ids[f"{shop.letter}.conversation.{channel}"] = conversation
            await _back_office(world, shop)
        async with db.read() as session:
            statuses = list(await session.scalars(select(Receipt.status)))
            wamid = await session.scalar(
                select(DeliveryPart.platform_message_id).where(
                    DeliveryPart.channel_account_id == BRAVO.account("whatsapp"),
                    DeliveryPart.platform_message_id.is_not(None),
                )
            )
        # Every customer got a reply through the doubles, sent with its own shop's credentials.
        assert statuses == ["sent"] * 2 * len(CHANNELS), statuses
        used = {
            (shop.word, channel): doubles.tokens_used(channel, f"echo: {shop.said(channel)}")
            for shop in (ALPHA, BRAVO)
            for channel in WEBHOOK_CHANNELS
        }
        assert used == {(s.word, c): [s.outbound_token(c)] for s in (ALPHA, BRAVO) for c in WEBHOOK_CHANNELS}
        assert wamid is not None
        world.ids["b.wamid"] = wamid
        yield world
