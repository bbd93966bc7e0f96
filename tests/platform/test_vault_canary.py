"""Sealed channel secrets end to end: webhooks authenticate against them, and a canary secret
never shows up in an HTTP response, a page, a log line, a trace row, the CLI's output or, as
plaintext, anywhere in the database."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import logging
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from typer.testing import CliRunner

# The loopback harness and the platform doubles live with the channel tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "channels"))

from fake_telegram import TOKEN, FakeTelegram
from fake_whatsapp import PHONE_NUMBER_ID, FakeWhatsApp
from live import live_channel
from snapshot import read_fixture

from frontdesk.cli_vault import vault_app
from frontdesk.platform.store.schema import Base, ChannelAccount

KEY = base64.b64encode(bytes(range(7, 39))).decode()
MARK = "c4n4ry"  # every canary carries it; nothing else in the suite does
TG_SECRET = f"tg-hook-{MARK}-51e0"
WA_APP_SECRET = f"wa-app-{MARK}-9b17"
WA_VERIFY = f"wa-verify-{MARK}-77aa"
WA_ACCESS = f"EAAwa-access-{MARK}-0c3d"
CLI_SECRET = f"cli-{MARK}-4411"
HELLO = {"name": "hello", "default": [{"reply": "Hello from the shop!"}]}


def telegram(db, tmp_path):
    return live_channel(
        db,
        tmp_path,
        FakeTelegram(),
        channel="telegram",
        account_id="tg-vault-0001",
        config={"bot_id": "7351862094"},
        secrets={"bot_token": TOKEN, "webhook_secret": TG_SECRET},
        chat=HELLO,
        vault_key=KEY,
    )


def whatsapp(db, tmp_path):
    return live_channel(
        db,
        tmp_path,
        FakeWhatsApp(),
        channel="whatsapp",
        account_id="wa-vault-0001",
        config={"phone_number_id": PHONE_NUMBER_ID},
        secrets={"app_secret": WA_APP_SECRET, "verify_token": WA_VERIFY, "access_token": WA_ACCESS},
        chat=HELLO,
        vault_key=KEY,
    )


def meta_signed(raw: bytes, secret: str) -> dict[str, str]:
    digest = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    return {"Content-Type": "application/json", "X-Hub-Signature-256": f"sha256={digest}"}


async def plaintext_columns(db) -> dict[str, dict]:
    async with db.read() as session:
        return {a.id: a.secrets for a in await session.scalars(select(ChannelAccount))}


# -- webhooks authenticate against sealed secrets --------------------------------------------------


async def test_a_telegram_webhook_checks_its_secret_from_the_vault(db, tmp_path):
    async with telegram(db, tmp_path) as live:
        vault = live.runtime.channel_deps.accounts.vault
        assert vault.can_seal
        assert await vault.names("demo", "channel/tg-vault-0001/") == [
            "channel/tg-vault-0001/bot_token",
            "channel/tg-vault-0001/webhook_secret",
        ]
        assert (await plaintext_columns(db))["tg-vault-0001"] == {}

        raw = read_fixture("telegram", "message__text.json")
        url = "/webhooks/telegram/tg-vault-0001"
        header = "X-Telegram-Bot-Api-Secret-Token"
        forged = await live.http.post(url, content=raw, headers={header: "not-the-secret"})
        ok = await live.http.post(url, content=raw, headers={header: TG_SECRET})
        await live.idle()

        assert forged.status_code == 401
        assert (ok.status_code, ok.json()) == (200, {"ok": True, "stored": 1})
        sent = [c for c in live.platform.calls if c.endpoint == "sendMessage"]
        assert [c.path.startswith(f"/bot{TOKEN}/") for c in sent] == [True]  # the renderer read the sealed token


async def test_a_whatsapp_webhook_checks_its_signature_with_the_sealed_app_secret(db, tmp_path):
    async with whatsapp(db, tmp_path) as live:
        raw = read_fixture("whatsapp", "message__text.json")
        url = "/webhooks/whatsapp/wa-vault-0001"
        forged = await live.http.post(url, content=raw, headers=meta_signed(raw, "another-apps-secret"))
        ok = await live.http.post(url, content=raw, headers=meta_signed(raw, WA_APP_SECRET))
        await live.idle()

        assert (forged.status_code, ok.status_code) == (401, 200)
        sent = [c.headers["authorization"] for c in live.platform.calls if c.path.endswith("/messages")]
        assert sent  # a read receipt and the reply, each with the sealed access token
        assert set(sent) == {f"Bearer {WA_ACCESS}"}


# -- the canary scan -------------------------------------------------------------------------------


@contextlib.contextmanager
def every_log_line(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Every logger at DEBUG into caplog, including the ones that do not propagate to the root
    (uvicorn's access log). Call it after the servers start: uvicorn resets its loggers."""
    caplog.set_level(logging.DEBUG)
    loggers = [logging.getLogger(n) for n in list(logging.root.manager.loggerDict)]
    saved = [(lg, lg.level, lg.disabled) for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
        lg.disabled = False
        if not lg.propagate:
            lg.addHandler(caplog.handler)
    try:
        yield
    finally:
        for lg, level, disabled in saved:
            lg.setLevel(level)
            lg.disabled = disabled
            if caplog.handler in lg.handlers:
                lg.removeHandler(caplog.handler)


def log_text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(f"{r.name} {r.getMessage()} {r.__dict__!r}" for r in caplog.records)


async def everything_stored(db) -> str:
    """Every row of every table (turn traces, receipts, webhook data, credentials...) as text."""
    dumps = []
    async with db.read() as session:
        for table in Base.metadata.sorted_tables:
            rows = (await session.execute(table.select())).all()
            dumps.append(f"{table.name}: {rows!r}")
    return "\n".join(dumps)


def handshake(base_url: str, token: str) -> tuple[int, str]:
    """Meta's verification GET, sent with urllib: the test's own httpx client would log the URL
    (the token is in the query string) and that line is the sender's, not ours."""
    query = urllib.parse.urlencode({"hub.mode": "subscribe", "hub.verify_token": token, "hub.challenge": "4242"})
    try:
        with urllib.request.urlopen(f"{base_url}/webhooks/whatsapp/wa-vault-0001?{query}", timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def run_cli(app, args: list[str], database_url: str, stdin: str | None = None) -> str:
    env = {
        "FRONTDESK_DATABASE_URL": database_url,
        "FRONTDESK_VAULT_KEY": KEY,
        "FRONTDESK_PUBLIC_URL": "https://x.example",
    }
    result = CliRunner().invoke(app, args, env=env, input=stdin)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output + (result.stderr if result.stderr_bytes is not None else "")


async def test_a_canary_secret_appears_in_no_response_page_log_trace_or_cli_output(db, tmp_path, database_url, caplog):
    seen: list[str] = []  # every response body and header our app sent

    def keep(response) -> None:
        seen.append(f"{response.status_code} {dict(response.headers)!r} {response.text}")

    async with telegram(db, tmp_path) as live:
        with every_log_line(caplog):
            raw = read_fixture("telegram", "message__text.json")
            url = "/webhooks/telegram/tg-vault-0001"
            for secret in (TG_SECRET, "wrong", None):
                headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret else {}
                keep(await live.http.post(url, content=raw, headers=headers))
            keep(await live.http.post("/webhooks/telegram/tg-vault-0001", content=b"{not json", headers={
                "X-Telegram-Bot-Api-Secret-Token": TG_SECRET}))  # fmt: skip
            await live.idle()
            for path in ("/healthz", "/openapi.json", "/docs", "/webchat/demo-webchat", "/webhooks/telegram/nope"):
                keep(await live.http.get(path))
            assert live.platform.sent("sendChatAction")  # a reply went out with the sealed token

    async with whatsapp(db, tmp_path) as live:
        with every_log_line(caplog):
            base_url = str(live.http.base_url).rstrip("/")
            for token in (WA_VERIFY, "not-it"):
                status, body = await asyncio.to_thread(handshake, base_url, token)
                seen.append(f"{status} {body}")
            raw = read_fixture("whatsapp", "message__text.json")
            for secret in (WA_APP_SECRET, "forged"):
                keep(
                    await live.http.post(
                        "/webhooks/whatsapp/wa-vault-0001", content=raw, headers=meta_signed(raw, secret)
                    )
                )
            await live.idle()
            assert any(c.path.endswith("/messages") for c in live.platform.calls)  # sent with the sealed token

    from frontdesk.cli import app as frontdesk_app

    with every_log_line(caplog):
        cli_output = [
            await asyncio.to_thread(
                run_cli,
                frontdesk_app,
                [
                    "accounts",
                    "add",
                    "telegram",
                    "--id",
                    "tg-cli-00001",
                    "--tenant",
                    "demo",
                    "--secret",
                    f"webhook_secret={CLI_SECRET}",
                ],
                database_url,
            ),
            await asyncio.to_thread(
                run_cli, vault_app, ["set", "demo", "api/token", "--stdin"], database_url, CLI_SECRET + "\n"
            ),
            await asyncio.to_thread(run_cli, vault_app, ["names", "demo"], database_url),
            await asyncio.to_thread(run_cli, vault_app, ["rotate"], database_url),
        ]
    assert "api/token" in cli_output[2]
    assert "channel/tg-cli-00001/webhook_secret" in cli_output[2]  # the CLI sealed it
    assert "channel/tg-vault-0001/webhook_secret" in cli_output[2]

    stored = await everything_stored(db)
    assert "turn_traces: [(" in stored  # turns ran and left traces to scan
    everywhere = {
        "responses": "\n".join(seen),
        "logs": log_text(caplog),
        "cli": "\n".join(cli_output),
        "database": stored,
    }
    leaks = {
        where: [line[:300] for line in content.splitlines() if MARK in line] for where, content in everywhere.items()
    }
    assert leaks == {key: [] for key in everywhere}
    # The scan did see the traffic: platform calls, the access log of the handshake, SQL rows.
    assert "sendMessage" in everywhere["logs"]
    assert "hub.verify_token=***" in everywhere["logs"]
    assert "sqlalchemy.engine.Engine" in everywhere["logs"]


async def test_the_suite_wide_watch_sees_a_canary_in_a_log_line_or_a_response():
    from httpx2 import ASGITransport, AsyncClient

    from conftest import canary_sightings

    before = len(canary_sightings)
    logging.getLogger("frontdesk.test").warning("leaking %s", CLI_SECRET)
    app = FastAPI(title="frontdesk")

    @app.get("/leak")
    async def leak() -> dict[str, str]:
        return {"token": CLI_SECRET}

    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://t") as client:
        await client.get("/leak")

    found = canary_sightings[before:]
    del canary_sightings[before:]  # the sightings were this test's own doing
    assert [f.split(":")[0] for f in found] == ["log line of frontdesk.test", "response to GET /leak"]


async def test_the_suite_wide_watch_sees_a_canary_written_into_a_trace_row(db):
    from conftest import canary_sightings
    from frontdesk.platform.store.schema import TurnTrace
    from harness import make_runtime, message

    runtime, accounts = await make_runtime(db, HELLO)
    stored = await runtime.ingestor.ingest(message(accounts.webchat_id, "hi"))
    before = len(canary_sightings)
    async with db.transaction() as session:
        session.add(
            TurnTrace(
                conversation_id=stored.conversation_id,
                worker="test",
                started_at=runtime.clock.now(),
                outcome="fallback",
                detail=f"model error: bad key {CLI_SECRET}",
            )
        )
    found = canary_sightings[before:]
    del canary_sightings[before:]  # the sighting was this test's own doing
    assert found == ["an insert of turn_traces row"]
