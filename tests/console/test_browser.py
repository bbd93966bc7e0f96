"""The done-when flow in a real headless Chromium (Debian's /usr/bin/chromium, never a browser
download): sign in, change a policy field, watch a web-chat conversation arrive live, turn the AI
off, reply as the operator, see the receipt, replay a failed send. Screenshots of each page are
saved under ``tests/console/screenshots/``."""

from __future__ import annotations

import time

import httpx2
from console_kit import OWNER, PASSWORD, SHOTS, build_console, served

from browser_kit import BROWSER_ARGS, CHROMIUM, needs_chromium
from frontdesk.platform.store.schema import Conversation
from harness import replies

pytestmark = needs_chromium
# How long a page may take to show what a background turn wrote: generous, as CI's two workers
# and Chromium share two cores (it passes as soon as the text is there).
LIVE_MS = 30_000


async def test_operator_flow_in_a_real_browser(db):
    from playwright.async_api import async_playwright, expect

    started = time.time() - 1
    console = await build_console(db)
    flaky_conversation = await console.customer_says("demo-flaky", "f1", "hello from a flaky channel")
    async with db.transaction() as session:
        stored = await session.get(Conversation, flaky_conversation)
        assert stored is not None
        stored.ai_enabled = False
    SHOTS.mkdir(exist_ok=True)
    console.runtime.runner.start()
    try:
        async with (
            served(console) as base,
            httpx2.AsyncClient(base_url=base, timeout=10) as customer,
            async_playwright() as p,
        ):
            browser = await p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=BROWSER_ARGS)
            page = await browser.new_page(viewport={"width": 412, "height": 915})  # a phone

            async def shot(name: str) -> None:
                await page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

            # sign in
            await page.goto(f"{base}/console")
            await shot("01-login")
            await page.fill("input[name=email]", OWNER)
            await page.fill("input[name=password]", PASSWORD)
            await page.click("button[type=submit]")
            await expect(page.locator("h1")).to_have_text("Conversations")

            # change a policy field: the prefix hash moves
            await page.click("a[href='/console/policy']")
            before = await page.text_content("#prefix-hash")
            await page.fill("textarea[name=tone]", "Warm and brief.")
            await page.click("#save-policy")
            await expect(page.locator("#prefix-hash")).not_to_have_text(before or "")
            await shot("02-policy")

            # a web-chat conversation arrives, and its next message shows up live in the thread
            url, visitor = "/v1/webchat/demo-webchat/messages", "live-customer-0001"  # a web chat session id
            posted = await customer.post(url, json={"session": visitor, "id": "m1", "text": "Do you print posters?"})
            assert posted.status_code == 202
            await page.goto(f"{base}/console/conversations")
            await expect(page.locator("#rows")).to_contain_text("Do you print posters?", timeout=LIVE_MS)
            await shot("03-conversations")
            await page.click("#rows a >> nth=0")
            await expect(page.locator("#messages")).to_contain_text("echo: Do you print posters?", timeout=LIVE_MS)
            await customer.post(url, json={"session": visitor, "id": "m2", "text": "A3, twenty copies"})
            await expect(page.locator("#messages")).to_contain_text("echo: A3, twenty copies", timeout=LIVE_MS)
            await page.locator("details.trace >> nth=0").click()
            await shot("04-thread-live-with-trace")

            # turn the AI off, reply as the operator, see the receipt
            await page.click("#ai-toggle")
            await expect(page.locator("#ai-state")).to_have_text("AI paused: a person has this thread")
            await page.click("#ai-toggle")
            await expect(page.locator("#ai-state")).to_have_text("AI answers this thread")
            await page.fill("textarea[name=text]", "Hi, this is Ana from the shop. Twenty A3 posters: sure!")
            await page.click("#send-reply")
            await expect(page.locator("#notice")).to_have_text("Reply sent. The AI is paused on this thread.")
            await expect(page.locator("#ai-state")).to_have_text("AI paused: a person has this thread")
            last = page.locator("article.operator >> nth=-1")
            await expect(last.locator(".receipt-status")).to_have_text("sent")
            await customer.post(url, json={"session": visitor, "id": "m3", "text": "great, thanks"})
            await expect(page.locator("#messages")).to_contain_text("great, thanks", timeout=LIVE_MS)
            await shot("05-operator-reply-sent")

            # a failed send, replayed
            await page.goto(f"{base}/console/conversations/{flaky_conversation}")
            await page.fill("textarea[name=text]", "Sorry for the wait!")
            await page.click("#send-reply")
            await expect(page.locator("#notice")).to_have_text("Reply not delivered: use replay.")
            await shot("06-send-failed")
            console.flaky.failing = False
            await page.click("button.replay")
            await expect(page.locator("#notice")).to_have_text("Replay sent.")
            await expect(page.locator("article.operator >> nth=-1").locator(".receipt-status")).to_have_text("sent")
            await shot("07-replayed")

            pages = (
                ("08-tasks", "tasks"),
                ("09-audit", "audit"),
                ("10-channels", "accounts"),
                ("11-deliveries", "deliveries"),
                ("12-rejections", "rejections"),
                ("13-reports", "reports"),
            )
            for name, path in pages:
                await page.goto(f"{base}/console/{path}")
                await shot(name)
            await expect(page.locator("body")).not_to_contain_text("s3cr3t-never-shown")
            await browser.close()
    finally:
        await console.runtime.runner.stop()

    live = await console.runtime.ingestor.find_conversation("demo-webchat", "live")
    texts = [m.content for m in await replies(db, live)]
    assert not any("great, thanks" in t for t in texts)  # the AI stayed silent after the operator
    for name in (
        "01-login",
        "02-policy",
        "03-conversations",
        "04-thread-live-with-trace",
        "05-operator-reply-sent",
        "06-send-failed",
        "07-replayed",
        *(name for name, _ in pages),
    ):
        assert (SHOTS / f"{name}.png").stat().st_mtime >= started
