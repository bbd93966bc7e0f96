"""One test per defect the hostile-input fuzzing found, each the smallest request that showed it.

Every request goes through ``HostileApp.exchange``, so each also holds to the general rules (no
5xx, the error shape, nothing stored by a refusal) on both backends; most of these were 500s on
PostgreSQL only (NUL in text) or on both (a lone surrogate no database can encode).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hostile_harness import HostileApp, hostile_fixture
from hostile_kit import SECRET, line_signature, meta_signature

from frontdesk.humans.console.csrf import MAX_FORM_BYTES
from frontdesk.ingestion import accounts
from frontdesk.ingestion.channels.webchat.adapter import body_limit

MAX_TEXT = 400
WEBCHAT = "/v1/webchat/demo-webchat/messages"
HOOKS = {  # channel -> (path, fixture folder, how the platform signs a body)
    "telegram": (
        "/webhooks/telegram/hostile-telegram",
        "telegram",
        lambda raw: {"X-Telegram-Bot-Api-Secret-Token": SECRET},
    ),
    "messenger": (
        "/webhooks/messenger/hostile-messenger",
        "messenger",
        lambda raw: {"X-Hub-Signature-256": meta_signature(SECRET, raw)},
    ),
    "whatsapp": (
        "/webhooks/whatsapp/hostile-whatsapp",
        "whatsapp",
        lambda raw: {"X-Hub-Signature-256": meta_signature(SECRET, raw)},
    ),
    "line": ("/webhooks/line/hostile-line", "line", lambda raw: {"X-Line-Signature": line_signature(SECRET, raw)}),
}


hostile = hostile_fixture("hostile-regressions", webchat_max_text_chars=MAX_TEXT)


def _fixture(channel: str, name: str) -> dict[str, Any]:
    path = Path(__file__).parents[2] / "src" / "frontdesk" / "ingestion" / "channels" / channel / "fixtures" / name
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _with(document: Any, path: str, value: Any) -> Any:
    """``document`` with the value at the dotted ``path`` (list indexes as numbers) replaced."""
    copy = json.loads(json.dumps(document))
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node = copy
    for key in parents:
        node = node[key]
    node[last] = value
    return copy


def _post_signed(hostile: HostileApp, channel: str, body: Any) -> Any:
    path, _, sign = HOOKS[channel]
    raw = json.dumps(body).encode()  # a lone surrogate is written as the escape "\ud800"
    return hostile.exchange(f"POST /webhooks/{channel}/{{account_id}}", "POST", path, content=raw, headers=sign(raw))


@pytest.mark.parametrize(
    ("channel", "fixture", "field"),
    [
        ("whatsapp", "message__text.json", "entry.0.changes.0.value.messages.0.from"),
        ("whatsapp", "message__text.json", "entry.0.changes.0.value.messages.0.id"),
        ("whatsapp", "message__no_wa_id.json", "entry.0.changes.0.value.contacts.0.user_id"),
        ("whatsapp", "status__delivered.json", "entry.0.changes.0.value.statuses.0.id"),
        ("line", "message__text.json", "events.0.source.userId"),
        ("line", "message__text.json", "events.0.webhookEventId"),
    ],
)
def test_a_platform_id_with_a_nul_is_refused_not_a_postgresql_crash(
    hostile: HostileApp, channel: str, fixture: str, field: str
) -> None:
    # It was stored (SQLite) or a 500 (PostgreSQL refuses NUL in text): ids are now printable.
    response = _post_signed(hostile, channel, _with(_fixture(channel, fixture), field, "16505551234\x00"))

    assert response.status_code == 422, response.text
    assert field.split(".")[-1] in response.text


@pytest.mark.parametrize(
    ("channel", "fixture", "field"),
    [
        ("messenger", "message__text.json", "entry.0.messaging.0.message.text"),
        ("whatsapp", "message__text.json", "entry.0.changes.0.value.messages.0.text.body"),
        ("whatsapp", "message__document.json", "entry.0.changes.0.value.messages.0.document.filename"),
    ],
)
def test_a_lone_surrogate_in_a_meta_payload_is_a_400_not_a_crash(
    hostile: HostileApp, channel: str, fixture: str, field: str
) -> None:
    # json.loads let "\ud800" through and no database driver can encode it (a 500 on both backends).
    response = _post_signed(hostile, channel, _with(_fixture(channel, fixture), field, "hello \ud800"))

    assert (response.status_code, response.json()["error"]["code"]) == (400, "payload_malformed")


@pytest.mark.parametrize("field", ["message.chat.id", "message.from.id", "update_id", "message.message_id"])
def test_a_telegram_id_past_64_bits_is_a_422_not_a_crash(hostile: HostileApp, field: str) -> None:
    # A 251-digit chat id made a contact id longer than 200 characters: a 500 while building the event.
    response = _post_signed(hostile, "telegram", _with(_fixture("telegram", "message__text.json"), field, 10**250))

    assert response.status_code == 422, response.text


def test_a_telegram_integer_written_as_a_whole_float_is_read_as_that_integer(hostile: HostileApp) -> None:
    # JSON Schema (and so our OpenAPI document) counts 42.0 as an integer; the strict model refused it.
    update = _with(_fixture("telegram", "message__text.json"), "update_id", 583920499.0)

    assert _post_signed(hostile, "telegram", update).json() == {"ok": True, "stored": 1}


def test_a_media_link_with_a_non_ascii_signature_is_refused_not_a_crash(hostile: HostileApp) -> None:
    # hmac.compare_digest raises TypeError on a non-ASCII str: any link with sig=é was a 500.
    key = "demo/ab/" + "a" * 40 + ".jpg"
    response = hostile.exchange(
        "GET /media/m/{key:path}", "GET", f"/media/m/{key}", params={"exp": int(time.time()) + 600, "sig": "é"}
    )

    assert (response.status_code, response.json()["error"]["code"]) == (401, "unauthorized")


def test_a_valid_web_chat_message_fits_the_body_limit_however_it_is_escaped(hostile: HostileApp) -> None:
    # json.dumps escapes by default: an emoji is 12 bytes ("\ud83d\ude00"), three times the 4 the
    # limit allowed, so a valid message at the text limit was refused with 413.
    raw = json.dumps(
        {"session": "session-alpha-0001", "id": "emoji", "text": "😀" * MAX_TEXT}, ensure_ascii=True
    ).encode()
    response = hostile.exchange("POST /v1/webchat/{channel_account_id}/messages", "POST", WEBCHAT, content=raw)

    assert len(raw) > MAX_TEXT * 4 + 2048  # over the old limit
    assert response.status_code == 202, response.text


def test_the_web_chat_text_limit_counts_the_text_as_sent(hostile: HostileApp) -> None:
    # The OpenAPI document says maxLength; counting after trimming accepted what it called invalid.
    padded = {"session": "session-alpha-0001", "id": "padded", "text": "hi" + " " * MAX_TEXT}
    response = hostile.exchange("POST /v1/webchat/{channel_account_id}/messages", "POST", WEBCHAT, json=padded)

    assert response.status_code == 422, response.text
    assert str(MAX_TEXT) in response.json()["error"]["message"]


async def _chunks(size: int) -> AsyncIterator[bytes]:
    """A body sent in chunks with no Content-Length (Transfer-Encoding: chunked over the wire)."""
    for _ in range(size // 8192 + 1):
        yield b"a=" + b"x" * 8190


@pytest.mark.parametrize(
    ("template", "path", "limit"),
    [
        ("/v1/webchat/{channel_account_id}/messages", WEBCHAT, body_limit(MAX_TEXT)),
        ("/webhooks/line/{account_id}", "/webhooks/line/hostile-line", 1_000_000),
        # Read (for its CSRF field) before anyone is known.
        ("/console/login", "/console/login", MAX_FORM_BYTES),
    ],
)
@pytest.mark.parametrize("declared", [True, False], ids=["declared", "streamed"])
def test_an_oversized_body_is_a_413_declared_or_streamed(
    hostile: HostileApp, template: str, path: str, limit: int, declared: bool
) -> None:
    # The console read any form whole (a chunked one had no limit at all) and answered 422.
    headers = {"Content-Type": "application/x-www-form-urlencoded" if "console" in path else "application/json"}
    body: Any = b"a=" + b"x" * limit if declared else _chunks(limit)
    response = hostile.exchange(f"POST {template}", "POST", path, content=body, headers=headers)

    assert (response.status_code, response.json()["error"]["code"]) == (413, "payload_too_large")


@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_deeply_nested_json_to_the_web_chat_is_a_400_not_a_crash(hostile: HostileApp, depth: int) -> None:
    nested = "[" * depth + "]" * depth
    inside = '{"session": "session-alpha-0001", "id": "deep", "text": "hi", "x": ' + nested + "}"
    for raw in (nested, inside):
        response = hostile.exchange(
            "POST /v1/webchat/{channel_account_id}/messages", "POST", WEBCHAT, content=raw.encode()
        )
        # The nested body alone is over the body limit at 100,000 levels: refused before parsing.
        assert response.status_code in ((400, 413) if depth > 10_000 else (400,)), response.text


def test_made_up_account_ids_cannot_grow_the_account_cache(
    hostile: HostileApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Misses were cached forever: a stream of made-up ids grew the process without bound.
    monkeypatch.setattr(accounts, "CACHE_MAX_ENTRIES", 50)
    for n in range(200):
        response = hostile.exchange(
            "POST /webhooks/telegram/{account_id}", "POST", f"/webhooks/telegram/made-up-{n}", content=b"{}"
        )
        assert response.status_code == 404

    assert hostile.runtime.channel_deps.accounts.cached() <= 50
