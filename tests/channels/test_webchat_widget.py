"""The web chat on a business's own website: ``widget.js``, the account's ``allowed_origins`` (CORS)
over HTTP, and the widget in a real Chromium (Debian's /usr/bin/chromium, never a browser
download) on another origin than frontdesk's, next to the chat page it shares its script with."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from loopback import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from browser_kit import BROWSER_ARGS, CHROMIUM, needs_chromium
from frontdesk.app import create_app
from frontdesk.cli_accounts import allowed_origins_problem, upsert_account
from frontdesk.errors import ConfigError
from frontdesk.ingestion.channels.webchat.origins import ORIGIN_PATTERN, normalise_origin
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Contact, Conversation, Message
from frontdesk.runtime import Runtime
from harness import count, make_runtime, replies, reply, wait_idle

ECHO = {"name": "echo", "default": [reply("echo: {user_text}")]}
SHOP = "https://www.shop.example"  # the demo account's own site, in these tests
ELSEWHERE = "https://evil.example"
OTHER_ACCOUNT = "other-shop-webchat"  # a second web chat account, allowing another site
OTHER_SITE = "https://other-shop.example"
SESSION = "session-alpha-0001"  # 16 to 128 characters, as the API asks
MESSAGE = {"session": SESSION, "id": "m1", "text": "Do you print posters?"}


async def set_origins(db: Database, runtime: Runtime, account_id: str, origins: str) -> None:
    """Save ``allowed_origins`` as ``frontdesk accounts add webchat --config`` does (creating the
    account if it is new)."""
    await upsert_account(
        db,
        account_id=account_id,
        tenant_id="demo",
        channel="webchat",
        name=None,
        config={"allowed_origins": origins},
        secrets={},
        now=runtime.clock.now(),
        vault=runtime.channel_deps.accounts.vault,
        own_id=None,  # web chat has no platform identity to name
    )


@asynccontextmanager
async def frontdesk(db: Database, **settings: Any) -> AsyncIterator[tuple[Runtime, str]]:
    """frontdesk over real HTTP on a loopback port (streams need it), the demo account allowing
    ``SHOP`` and a second account allowing ``OTHER_SITE``. Yields the runtime and the base URL."""
    runtime, _accounts = await make_runtime(db, ECHO, quiet_window_s=0, **settings)
    await set_origins(db, runtime, "demo-webchat", SHOP)
    await set_origins(db, runtime, OTHER_ACCOUNT, OTHER_SITE)
    async with serve(create_app(runtime, run_workers=False)) as base:
        yield runtime, base


async def stored_rows(db: Database) -> tuple[int, int, int]:
    return (await count(db, Message), await count(db, Conversation), await count(db, Contact))


async def stream_head(client: httpx2.AsyncClient, path: str, headers: dict[str, str]) -> httpx2.Response:
    """The status and headers of a GET of the event stream (which never ends on its own)."""
    async with client.stream("GET", path, params={"session": SESSION}, headers=headers) as response:
        if response.status_code >= 400:
            await response.aread()
        return response


def endpoints(account: str) -> list[tuple[str, str]]:
    base = f"/v1/webchat/{account}"
    return [("POST", f"{base}/messages"), ("GET", f"{base}/messages"), ("GET", f"{base}/stream")]


async def call(client: httpx2.AsyncClient, method: str, path: str, origin: str | None) -> httpx2.Response:
    headers = {} if origin is None else {"Origin": origin}
    if path.endswith("/stream"):
        return await stream_head(client, path, headers)
    if method == "POST":
        return await client.post(path, json=MESSAGE, headers=headers)
    return await client.get(path, params={"session": SESSION}, headers=headers)


async def preflight(client: httpx2.AsyncClient, path: str, origin: str | None) -> httpx2.Response:
    headers = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    return await client.options(path, headers=headers if origin is None else {**headers, "Origin": origin})


# -- CORS over HTTP


async def test_an_allowed_origin_gets_cors_headers_on_every_endpoint_and_its_preflight(db):
    async with frontdesk(db) as (_, base), httpx2.AsyncClient(base_url=base, timeout=10) as client:
        answers = [await call(client, method, path, SHOP) for method, path in endpoints("demo-webchat")]
        ends = ("messages", "stream")
        preflights = [await preflight(client, f"/v1/webchat/demo-webchat/{end}", SHOP) for end in ends]

    assert [a.status_code for a in answers] == [202, 200, 200]
    for answer in answers:
        assert answer.headers["access-control-allow-origin"] == SHOP
        assert answer.headers["vary"] == "Origin"
        assert "access-control-allow-credentials" not in answer.headers  # no cookies involved
    assert [p.status_code for p in preflights] == [204, 204]
    expected = {
        "access-control-allow-origin": SHOP,
        "access-control-allow-methods": "GET, POST",
        "access-control-allow-headers": "Content-Type, Last-Event-ID",
        "access-control-max-age": "600",
        "vary": "Origin",
    }
    assert {k: preflights[0].headers.get(k) for k in expected} == expected
    assert preflights[1].headers["access-control-allow-methods"] == "GET"  # the stream only reads


async def test_a_foreign_origin_is_refused_with_403_and_nothing_is_stored(db):
    async with frontdesk(db) as (_, base), httpx2.AsyncClient(base_url=base, timeout=10) as client:
        before = await stored_rows(db)
        answers = [await call(client, method, path, ELSEWHERE) for method, path in endpoints("demo-webchat")]
        answers.append(await preflight(client, "/v1/webchat/demo-webchat/messages", ELSEWHERE))
        after = await stored_rows(db)

    assert [a.status_code for a in answers] == [403, 403, 403, 403]
    for answer in answers:
        error = answer.json()["error"]
        assert error["code"] == "forbidden"
        assert ELSEWHERE in error["message"]
        assert "not allowed for this web chat account" in error["message"]
        assert "allowed_origins" in error["message"]
        assert "access-control-allow-origin" not in answer.headers
    assert after == before


async def test_requests_without_an_origin_work_as_before(db):
    async with frontdesk(db) as (_, base), httpx2.AsyncClient(base_url=base, timeout=10) as client:
        answers = [await call(client, method, path, None) for method, path in endpoints("demo-webchat")]
        options = await preflight(client, "/v1/webchat/demo-webchat/messages", None)
        page = await client.get("/webchat/demo-webchat")

    assert [a.status_code for a in answers] == [202, 200, 200]
    assert all("access-control-allow-origin" not in a.headers for a in answers)
    assert (options.status_code, options.headers["allow"]) == (204, "GET, POST, OPTIONS")
    assert page.status_code == 200


@pytest.mark.parametrize("way", ["host", "public_url", "sec_fetch_site"])
async def test_frontdesk_own_origin_needs_no_configuration(db, way):
    # The chat page's POST carries an Origin: frontdesk's own, however the request reached it.
    public = "https://chat.example.test"
    async with frontdesk(db, public_url=public) as (_, base), httpx2.AsyncClient(base_url=base, timeout=10) as client:
        headers = {
            "host": {"Origin": base},
            "public_url": {"Origin": public},
            # A proxy that rewrote Host, no public_url match: the browser still says "same-origin".
            "sec_fetch_site": {"Origin": "https://behind-a-proxy.example", "Sec-Fetch-Site": "same-origin"},
        }[way]
        response = await client.post("/v1/webchat/demo-webchat/messages", json=MESSAGE, headers=headers)

    assert response.status_code == 202, response.text
    assert response.headers["access-control-allow-origin"] == headers["Origin"]


async def test_allowed_origins_belong_to_their_own_account(db):
    async with frontdesk(db) as (_, base), httpx2.AsyncClient(base_url=base, timeout=10) as client:

        async def post(account: str, origin: str) -> int:
            response = await client.post(f"/v1/webchat/{account}/messages", json=MESSAGE, headers={"Origin": origin})
            return response.status_code

        verdicts = {
            ("demo-webchat", SHOP): await post("demo-webchat", SHOP),
            ("demo-webchat", OTHER_SITE): await post("demo-webchat", OTHER_SITE),
            (OTHER_ACCOUNT, SHOP): await post(OTHER_ACCOUNT, SHOP),
            (OTHER_ACCOUNT, OTHER_SITE): await post(OTHER_ACCOUNT, OTHER_SITE),
        }

    assert verdicts == {
        ("demo-webchat", SHOP): 202,
        ("demo-webchat", OTHER_SITE): 403,
        (OTHER_ACCOUNT, SHOP): 403,
        (OTHER_ACCOUNT, OTHER_SITE): 202,
    }


async def test_an_unknown_account_is_404_before_any_origin_talk(db):
    async with frontdesk(db) as (_, base), httpx2.AsyncClient(base_url=base, timeout=10) as client:
        answers = [await call(client, method, path, ELSEWHERE) for method, path in endpoints("no-such-webchat")]
        answers.append(await preflight(client, "/v1/webchat/no-such-webchat/messages", ELSEWHERE))
        answers.append(await preflight(client, "/v1/webchat/demo-terminal/stream", SHOP))  # not a web chat account

    assert [a.status_code for a in answers] == [404, 404, 404, 404, 404]
    assert {a.json()["error"]["code"] for a in answers} == {"not_found"}
    assert all("access-control-allow-origin" not in a.headers for a in answers)


@pytest.mark.parametrize("account", ["bad%20id", "a" * 41])
async def test_a_preflight_to_a_malformed_account_id_is_422(db, account):
    async with frontdesk(db) as (_, base), httpx2.AsyncClient(base_url=base, timeout=10) as client:
        response = await preflight(client, f"/v1/webchat/{account}/messages", SHOP)

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "payload_invalid"


async def test_an_allowed_origin_can_read_why_a_message_was_refused(db):
    # The widget shows the server's reason (a blank text, a reused id); the browser lets it read
    # an error only if the error, too, carries the CORS header.
    async with frontdesk(db) as (_, base), httpx2.AsyncClient(base_url=base, timeout=10) as client:
        blank = {**MESSAGE, "text": "   "}
        response = await client.post("/v1/webchat/demo-webchat/messages", json=blank, headers={"Origin": SHOP})

    assert response.status_code == 422
    assert response.headers["access-control-allow-origin"] == SHOP
    assert "text" in response.json()["error"]["message"]


async def test_the_widget_script_is_public_cacheable_javascript(db):
    async with (
        frontdesk(db, webchat_max_text_chars=1234) as (_, base),
        httpx2.AsyncClient(base_url=base, timeout=10) as client,
    ):
        script = await client.get("/webchat/widget.js", headers={"Origin": ELSEWHERE})
        page = await client.get("/webchat/demo-webchat")

    assert script.status_code == 200
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert script.headers["cache-control"] == "public, max-age=3600"
    assert script.headers["access-control-allow-origin"] == "*"
    assert '{"maxTextChars": 1234, "modelLabel": "Model: injected"}' in script.text
    assert "{/*SERVER*/}" not in script.text
    assert script.text.count("innerHTML") == 1  # for the static markup, and nothing else
    assert "shell.innerHTML = MARKUP;" in script.text
    assert '<script src="widget.js" data-account="demo-webchat" data-page></script>' in page.text


# -- allowed_origins when the account is saved


async def test_allowed_origins_are_checked_when_the_account_is_saved(db):
    runtime, _ = await make_runtime(db, ECHO)
    with pytest.raises(ConfigError) as refused:
        await set_origins(db, runtime, "demo-webchat", "https://www.example.com, https://www.example.com/shop")
    await set_origins(db, runtime, "demo-webchat", "HTTPS://WWW.Example.com:443/, http://localhost:8080")

    message = str(refused.value)
    assert "'https://www.example.com/shop'" in message
    assert "scheme://host[:port]" in message
    assert "'https://www.example.com'," not in message  # only the entry that is wrong
    async with serve(create_app(runtime, run_workers=False)) as base, httpx2.AsyncClient(base_url=base) as client:
        # Written in capitals, with its default port and a slash, it still matches what browsers send.
        response = await client.post(
            "/v1/webchat/demo-webchat/messages", json=MESSAGE, headers={"Origin": "https://www.example.com"}
        )
    assert response.status_code == 202, response.text


@given(value=st.from_regex(ORIGIN_PATTERN, fullmatch=True) | st.text(max_size=40) | st.sampled_from(
    ["https://*.example.com", "null", "https://a.example/", "ftp://a.example", "https://a.example?x", "http://[::1]:8"]
))  # fmt: skip
def test_saving_and_serving_agree_on_what_an_origin_is(value: str) -> None:
    # cli_accounts may not import the channel, so it holds its own copy of the pattern.
    saved = allowed_origins_problem(value) is None
    served = all(normalise_origin(e) is not None for e in value.split(",") if e.strip())
    assert saved == served


def test_an_origin_is_written_as_browsers_send_it() -> None:
    assert normalise_origin("HTTPS://Shop.Example:443/") == "https://shop.example"
    assert normalise_origin("http://localhost:08080") == "http://localhost:8080"
    assert normalise_origin("http://[::1]:80") == "http://[::1]"
    not_origins = ("null", "https://a.example/x", "https://u@a.example", "a.example", "https://*.a.example")
    assert {normalise_origin(v) for v in not_origins} == {None}


# -- in a real browser

# A business's site with rules as rude as CSS gets: every color red, every font serif, the widget's
# own class names and tags hidden. None of it may reach the widget, and none of the widget's rules
# may reach the site's own elements of the same class names.
HOST_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Our own website</title>
<style>
  * {{ color: rgb(255, 0, 0) !important; font-family: serif !important; }}
  div, section, form, button, textarea, .launcher, .panel, .msg, .bubble, #messages {{ display: none !important; }}
  p.msg-user, p .bubble, span.launcher {{ display: inline !important; }}
</style></head>
<body>
  <h1>Welcome to our shop</h1>
  <p class="msg-user"><span class="bubble" id="own-bubble">our own bubble</span></p>
  <span class="launcher" id="own-launcher">our own launcher</span>
  <script src="{frontdesk}/webchat/widget.js" data-account="{account}" data-title="Demo Print Shop" async></script>
</body></html>
"""


@asynccontextmanager
async def business_site(frontdesk_base: str) -> AsyncIterator[str]:
    """The business's own site on another origin: ``http://localhost:<port>/<account>`` embeds the
    widget of that account, as the snippet in the docs does."""

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(HOST_PAGE.format(frontdesk=frontdesk_base, account=request.path_params["account"]))

    async with serve(Starlette(routes=[Route("/{account}", page)])) as base:
        yield base.replace("127.0.0.1", "localhost")  # another origin than frontdesk's 127.0.0.1


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=BROWSER_ARGS)
        try:
            yield await browser.new_page(viewport={"width": 1280, "height": 900})
        finally:
            await browser.close()


class StreamCutter:
    """Between the browser and frontdesk, as a proxy that times out long requests: ``cut()`` ends
    every open event stream cleanly and holds the browser's reconnection until ``reopen()``, so a
    reply stored meanwhile can reach the widget only through a resumed stream (Last-Event-ID)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.streams: set[asyncio.Future[None]] = set()
        self.gate = asyncio.Event()
        self.gate.set()
        self.resumed_from: list[str] = []  # the Last-Event-ID of each reconnection

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/stream"):
            await self.app(scope, receive, send)
            return
        await self.gate.wait()
        if (last := dict(scope["headers"]).get(b"last-event-id")) is not None:
            self.resumed_from.append(last.decode())
        stream = asyncio.ensure_future(self.app(scope, receive, send))
        self.streams.add(stream)
        try:
            await asyncio.wait({stream})
        finally:
            self.streams.discard(stream)
            stream.cancel()
        if stream.cancelled():  # cut: the end of the body, as the proxy's timeout would send it
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def cut(self) -> None:
        self.gate.clear()
        for stream in self.streams:
            stream.cancel()

    def reopen(self) -> None:
        self.gate.set()


async def computed(locator: Any, prop: str) -> str:
    return str(await locator.evaluate("(e, p) => getComputedStyle(e).getPropertyValue(p)", prop))


@needs_chromium
async def test_the_widget_on_the_business_site_chats_resumes_and_keeps_its_session_over_a_reload(db):
    from playwright.async_api import expect

    runtime, accounts = await make_runtime(db, ECHO, quiet_window_s=0)
    cutter = StreamCutter(create_app(runtime))
    async with serve(cutter) as base, business_site(base) as site, chromium() as page:
        await set_origins(db, runtime, accounts.webchat_id, site)
        await page.goto(f"{site}/{accounts.webchat_id}")
        widget = page.locator("[data-frontdesk-chat]")
        await expect(widget.locator("#launcher")).to_be_visible()
        await widget.locator("#launcher").click()
        await expect(widget.locator("h2")).to_have_text("Demo Print Shop")
        await expect(widget.locator("#model-label")).to_have_text("Model: injected")
        await widget.locator("#text").fill("Do you print posters?")
        await widget.locator("#text").press("Enter")
        reply_bubble = widget.locator(".msg-assistant .bubble")
        await expect(reply_bubble).to_have_text("echo: Do you print posters?", timeout=15_000)

        # The site's CSS did not get in, and the widget's did not get out.
        await expect(widget.locator(".msg-user .bubble")).to_be_visible()
        assert await computed(reply_bubble, "color") == "rgb(29, 35, 48)"  # the widget's text color
        assert await computed(reply_bubble, "background-color") == "rgb(238, 240, 244)"
        assert (await computed(reply_bubble, "font-family")).startswith("system-ui")
        assert await computed(page.locator("#own-bubble"), "color") == "rgb(255, 0, 0)"  # the site's rules work
        assert await computed(page.locator("#own-bubble"), "background-color") == "rgba(0, 0, 0, 0)"
        assert await computed(page.locator("#own-launcher"), "border-radius") == "0px"

        session = await page.evaluate(f"localStorage.getItem('frontdesk.session.{accounts.webchat_id}')")
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", session), session  # 128 random bits, base64url
        conversation = await runtime.ingestor.find_conversation(accounts.webchat_id, session)
        assert conversation is not None
        first_reply = (await replies(db, conversation))[0].id

        # The stream drops; the customer writes on, and the reply is stored before the browser
        # reconnects: it arrives because EventSource resumes after the last block it saw.
        cutter.cut()
        await widget.locator("#text").fill("A3, twenty copies")
        await widget.locator("#text").press("Enter")
        await expect(widget.locator(".msg-user .bubble")).to_have_count(2)
        await wait_idle(db)
        cutter.reopen()
        both = ["echo: Do you print posters?", "echo: A3, twenty copies"]
        await expect(widget.locator(".msg-assistant .bubble")).to_have_text(both, timeout=15_000)
        assert cutter.resumed_from == [f"{first_reply}:0"]

        # A reload: the same session, and the conversation comes back when the panel opens.
        await page.reload()
        await widget.locator("#launcher").click()
        await expect(widget.locator(".msg-user .bubble")).to_have_text(["Do you print posters?", "A3, twenty copies"])
        await expect(widget.locator(".msg-assistant .bubble")).to_have_text(both)
        assert await page.evaluate(f"localStorage.getItem('frontdesk.session.{accounts.webchat_id}')") == session
        await expect(widget.locator("#error")).to_have_text("")


@needs_chromium
async def test_the_widget_on_a_site_the_account_does_not_allow_says_so_and_stores_nothing(db):
    from playwright.async_api import expect

    runtime, accounts = await make_runtime(db, ECHO, quiet_window_s=0)
    await set_origins(db, runtime, accounts.webchat_id, SHOP)  # some other site than the one below
    async with serve(create_app(runtime)) as base, business_site(base) as site, chromium() as page:
        await page.goto(f"{site}/{accounts.webchat_id}")
        widget = page.locator("[data-frontdesk-chat]")
        await widget.locator("#launcher").click()
        error = widget.locator("#error")
        await expect(error).to_have_text(
            f"This chat can't connect from {site}. If this is your site, add {site}"
            " to the web chat account's allowed_origins."
        )
        await widget.locator("#text").fill("hello?")
        await widget.locator("#text").press("Enter")
        # The send gives up (after its retries): the text is back in the box, the reason shown.
        await expect(widget.locator("#text")).to_have_value("hello?", timeout=15_000)
        await expect(widget.locator(".msg")).to_have_count(0)
        await expect(error).to_contain_text("allowed_origins")

    assert await stored_rows(db) == (0, 0, 0)


@needs_chromium
async def test_the_chat_page_runs_on_the_same_script_and_misses_no_reply_while_its_stream_opens(db):
    from playwright.async_api import expect

    runtime, accounts = await make_runtime(db, ECHO, quiet_window_s=0)
    cutter = StreamCutter(create_app(runtime))
    async with serve(cutter) as base, chromium() as page:
        # The stream is slow to open: the customer writes, and the reply is stored, before it does.
        # The page reads the transcript only once the stream is open, so the reply is in one of them.
        cutter.cut()
        await page.goto(f"{base}/webchat/{accounts.webchat_id}")
        await page.fill("#text", "Do you print posters?")
        await page.press("#text", "Enter")
        await expect(page.locator(".msg-user .bubble")).to_have_text("Do you print posters?")
        await wait_idle(db)
        cutter.reopen()
        await expect(page.locator(".msg-assistant .bubble")).to_have_text("echo: Do you print posters?", timeout=15_000)
        session = await page.evaluate(f"localStorage.getItem('frontdesk.session.{accounts.webchat_id}')")
        await page.reload()
        await expect(page.locator(".msg-assistant .bubble")).to_have_text("echo: Do you print posters?")

    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", session), session
    assert await runtime.ingestor.find_conversation(accounts.webchat_id, session) is not None
