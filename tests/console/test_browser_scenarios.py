""" "Save as scenario" in a real headless Chromium: the owner opens an AI reply that gave advice
nobody asked for, writes what it should have done and the reply it should have sent, finds it on
the Scenarios page and downloads the file, which the installed ``frontdesk eval`` runs green.
Screenshots go to ``tests/console/screenshots/``."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

from console_kit import BAD_ADVICE, BAD_SCRIPT, OWNER, PASSWORD, SHOTS, build_console, served

from browser_kit import BROWSER_ARGS, CHROMIUM, needs_chromium

pytestmark = needs_chromium
NOTE = "Never talk a customer out of what they asked for: offer to save the request."


async def test_an_owner_saves_a_bad_reply_as_a_scenario_and_downloads_a_file_that_runs(db, tmp_path):
    from playwright.async_api import async_playwright, expect

    console = await build_console(db, BAD_SCRIPT)
    conversation_id = await console.customer_says("demo-webchat", "b1", "hi, I'm Ana, my number is 0903 123 456")
    await console.drain()
    await console.customer_says("demo-webchat", "b1", "how much are business cards?")
    await console.drain()
    SHOTS.mkdir(exist_ok=True)
    async with served(console) as base, async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=BROWSER_ARGS)
        page = await browser.new_page(viewport={"width": 1440, "height": 900}, accept_downloads=True)
        await page.goto(f"{base}/console")
        await page.fill("input[name=email]", OWNER)
        await page.fill("input[name=password]", PASSWORD)
        await page.click("button[type=submit]")
        await page.goto(f"{base}/console/conversations/{conversation_id}")

        bad = page.locator("article.msg.assistant", has_text=BAD_ADVICE)
        await bad.locator(".save-scenario a").click()
        reply = page.locator("#scenario-form textarea[name=reply]")
        sent = await reply.input_value()
        assert sent.endswith(BAD_ADVICE)
        await page.locator("#scenario-form textarea[name=note]").fill(NOTE)
        await reply.fill(sent.replace(BAD_ADVICE, "Shall I save a request so the team can prepare a proof?"))
        await page.screenshot(path=str(SHOTS / "34-save-as-scenario.png"), full_page=True)
        await page.locator("#scenario-form button[type=submit]").click()

        saved = page.locator("article.scenario").first
        await expect(saved).to_contain_text(NOTE)
        await expect(saved.locator(".must-not-say")).to_contain_text("order stickers instead")
        await expect(saved.locator(".must-say")).to_contain_text("Shall I save a request")
        await page.screenshot(path=str(SHOTS / "35-scenarios.png"), full_page=True)
        async with page.expect_download() as download_info:
            await saved.locator("a.download").click()
        download = await download_info.value
        file = tmp_path / download.suggested_filename
        await download.save_as(file)
        await browser.close()

    # The downloaded file, run as an owner would: the installed `frontdesk eval`.
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    env.update(FRONTDESK_CONFIG="/nonexistent/frontdesk.toml", COLUMNS="250")
    frontdesk = shutil.which("frontdesk", path=str(Path(sys.executable).parent))
    assert frontdesk is not None
    played = await asyncio.create_subprocess_exec(
        frontdesk, "eval", str(file), env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output = (await asyncio.wait_for(played.communicate(), 300))[0].decode()
    assert played.returncode == 0, output
    assert "1 passed, 0 failed" in output
