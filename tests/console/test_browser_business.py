"""Onboarding in a real headless Chromium (Debian's /usr/bin/chromium, never a browser download):
an owner signs in, opens the business-cards item of the demo catalog, changes the 250-card price
from 45 to 52 and saves; then a customer asks the web chat page "how much are business cards?"
and the reply shown is the new price. Screenshots of the business pages go to
``tests/console/screenshots/``."""

from __future__ import annotations

import time

from console_kit import OWNER, PASSWORD, PRICE_SCRIPT, SHOTS, build_console, served

from browser_kit import BROWSER_ARGS, CHROMIUM, needs_chromium
from frontdesk.business import BusinessStore
from frontdesk.platform.clock import SystemClock

pytestmark = needs_chromium


async def test_an_owner_changes_a_price_and_the_web_chat_quotes_the_new_one(db):
    from playwright.async_api import async_playwright, expect

    started = time.time() - 1
    console = await build_console(db, PRICE_SCRIPT)
    SHOTS.mkdir(exist_ok=True)
    console.runtime.runner.start()
    try:
        async with served(console) as base, async_playwright() as p:
            browser = await p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=BROWSER_ARGS)
            page = await browser.new_page(viewport={"width": 412, "height": 915})  # a phone

            async def shot(name: str) -> None:
                await page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

            await page.goto(f"{base}/console")
            await page.fill("input[name=email]", OWNER)
            await page.fill("input[name=password]", PASSWORD)
            await page.click("button[type=submit]")
            await expect(page.locator("h1")).to_have_text("Conversations")

            await page.click("a[href='/console/business']")
            await expect(page.locator("input[name=name]")).to_have_value("Demo Print Shop")
            await shot("20-business")

            # the catalog, then the business-cards item
            await page.click("a[href='/console/catalog']")
            await expect(page.locator("section[data-service='business-cards']")).to_contain_text("$45 / 250 cards")
            await shot("21-catalog")
            await page.click("section[data-service='business-cards'] h2 a")
            await expect(page.locator("#item-id")).to_have_text("business-cards")
            quantity, amount = (
                page.locator("input[name='tiers.0.quantity']"),
                page.locator("input[name='tiers.0.amount']"),
            )
            await expect(quantity).to_have_value("250")
            await expect(amount).to_have_value("45")
            await amount.fill("52")
            await page.click("#save-item")
            await expect(page.locator("#notice")).to_have_text("Saved.")
            await expect(amount).to_have_value("52")
            await shot("22-item-saved")

            # a customer asks the web chat page
            chat = await browser.new_page(viewport={"width": 412, "height": 915})
            await chat.goto(f"{base}/webchat/demo-webchat")
            await chat.locator("#text").fill("how much are business cards?")
            await chat.locator("#text").press("Enter")
            answer = chat.locator(".msg-assistant .bubble")
            await expect(answer).to_contain_text("$52 / 250 cards", timeout=15_000)
            await expect(answer).not_to_contain_text("$45")
            await chat.screenshot(path=str(SHOTS / "23-webchat-new-price.png"), full_page=True)
            await browser.close()
    finally:
        await console.runtime.runner.stop()

    cards = (await BusinessStore(db, SystemClock()).read("demo")).item("business-cards")
    assert cards is not None
    assert cards.price_texts("en", "en")[0] == "$52 / 250 cards"
    for name in ("20-business", "21-catalog", "22-item-saved", "23-webchat-new-price"):
        assert (SHOTS / f"{name}.png").stat().st_mtime >= started
