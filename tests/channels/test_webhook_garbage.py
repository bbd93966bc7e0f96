"""No webhook answers garbage with a 5xx.

Hypothesis throws bytes, random JSON, truncated real fixtures and real fixtures with a field
replaced by random JSON at every platform webhook, most of them *correctly signed* so they get
past authentication into the parsers. Every answer must be a 2xx or a 4xx with our JSON error
body; a 5xx would make the platform retry forever (or hide a lost message). Each test prints how
many payloads it tried and the status codes they got (``pytest -s`` shows it).

The server is our real app on a loopback port in a thread (its own event loop and SQLite file),
so Hypothesis can drive it with a plain synchronous client.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
import uvicorn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from snapshot import fixtures

from frontdesk.app import create_app
from frontdesk.cli_accounts import upsert_account
from frontdesk.demo import seed_demo
from frontdesk.ingestion.channels import CHANNELS
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.migrate import upgrade
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings

EXAMPLES = 150
SECRET = "garbage-test-secret"


def _meta(raw: bytes) -> dict[str, str]:
    return {"X-Hub-Signature-256": "sha256=" + hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()}


def _line(raw: bytes) -> dict[str, str]:
    return {"X-Line-Signature": base64.b64encode(hmac.new(SECRET.encode(), raw, hashlib.sha256).digest()).decode()}


@dataclass(frozen=True)
class Webhook:
    channel: str
    account_id: str
    fixtures: str  # the folder whose real payloads are truncated and mutated
    sign: Callable[[bytes], dict[str, str]]
    secrets: dict[str, str]
    fixture_prefix: str = ""

    @property
    def path(self) -> str:
        return f"/webhooks/{self.channel}/{self.account_id}"

    def samples(self) -> list[bytes]:
        files = sorted(fixtures(self.fixtures).iterdir(), key=lambda f: f.name)
        return [f.read_bytes() for f in files if f.name.startswith(self.fixture_prefix) and f.name.endswith(".json")]


WEBHOOKS = [
    Webhook(
        "telegram",
        "garbage-telegram",
        "telegram",
        lambda raw: {"X-Telegram-Bot-Api-Secret-Token": SECRET},
        {"webhook_secret": SECRET, "bot_token": "1:x"},
    ),
    Webhook("messenger", "garbage-messenger", "messenger", _meta, {"app_secret": SECRET, "page_access_token": "x"}),
    Webhook(
        "instagram",
        "garbage-instagram",
        "messenger",
        _meta,
        {"app_secret": SECRET, "page_access_token": "x"},
        "instagram",
    ),
    Webhook("whatsapp", "garbage-whatsapp", "whatsapp", _meta, {"app_secret": SECRET, "access_token": "x"}),
    Webhook("line", "garbage-line", "line", _line, {"channel_secret": SECRET, "channel_access_token": "x"}),
]

# The ids the fixtures are addressed to, so mutated bodies get past the account's own-id check.
OWN_IDS = {
    "garbage-messenger": {"page_id": "104857392016485"},
    "garbage-instagram": {"instagram_id": "17841405726653026"},
    "garbage-whatsapp": {"phone_number_id": "106540352242922"},
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)


def _replace_somewhere(document: Any, replacement: Any, path: list[int]) -> Any:
    """``document`` with one nested value (chosen by ``path`` indexes) swapped for ``replacement``."""
    if not path or not isinstance(document, dict | list) or not document:
        return replacement
    keys = list(document) if isinstance(document, dict) else list(range(len(document)))
    key = keys[path[0] % len(keys)]
    copy = dict(document) if isinstance(document, dict) else list(document)
    copy[key] = _replace_somewhere(document[key], replacement, path[1:])
    return copy


def bodies(samples: list[bytes]) -> st.SearchStrategy[bytes]:
    real = st.sampled_from(samples)
    truncated = st.tuples(real, st.floats(0, 1)).map(lambda t: t[0][: int(len(t[0]) * t[1])])
    mutated = st.tuples(real, json_values, st.lists(st.integers(0, 50), max_size=6)).map(
        lambda t: json.dumps(_replace_somewhere(json.loads(t[0]), t[1], t[2])).encode()
    )
    return truncated | mutated | json_values.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=200) | real


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("garbage")
    database_url = f"sqlite+aiosqlite:///{folder / 'garbage.db'}"

    async def prepare() -> None:
        db = Database.from_url(database_url)
        await upgrade(db)
        clock = SystemClock()
        await seed_demo(db, clock)
        for hook in WEBHOOKS:
            await upsert_account(
                db,
                account_id=hook.account_id,
                tenant_id="demo",
                channel=hook.channel,
                name=hook.channel,
                config={"api_base_url": "http://127.0.0.1:9", **OWN_IDS.get(hook.account_id, {})},
                secrets=hook.secrets,
                now=clock.now(),
                own_id=CHANNELS[hook.channel].own_id,
            )
        await db.dispose()

    asyncio.run(prepare())
    settings_ = Settings(database_url=database_url, media_dir=folder / "media", workers=0)
    app = create_app(Runtime.build(settings_), run_workers=False)
    uv = _QuietServer(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="on"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not uv.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{uv.servers[0].sockets[0].getsockname()[1]}"
    uv.should_exit = True
    thread.join(10)


@pytest.mark.parametrize("hook", WEBHOOKS, ids=lambda h: h.channel)
def test_garbage_never_gets_a_server_error(server: str, hook: Webhook) -> None:
    statuses: Counter[int] = Counter()
    samples = hook.samples()
    assert samples, f"no fixtures for {hook.channel}"

    with httpx2.Client(base_url=server, timeout=10) as http:

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(body=bodies(samples), signed=st.integers(0, 9))
        def post(body: bytes, signed: int) -> None:
            headers = {"Content-Type": "application/json", **(hook.sign(body) if signed else {})}
            response = http.post(hook.path, content=body, headers=headers)
            statuses[response.status_code] += 1
            assert response.status_code < 500, response.text
            if response.status_code >= 400:
                assert "error" in response.json()

        post()

    tried = sum(statuses.values())
    print(f"\n{hook.channel}: {tried} garbage payloads tried, statuses {dict(sorted(statuses.items()))}")
    assert tried >= EXAMPLES
    assert statuses[401] > 0  # the unsigned share was refused at the door


@pytest.mark.parametrize("hook", WEBHOOKS, ids=lambda h: h.channel)
def test_signed_json_that_is_not_an_object_is_a_400_like_a_body_that_is_not_json(server: str, hook: Webhook) -> None:
    answers = []
    with httpx2.Client(base_url=server, timeout=10) as http:
        for body in (b"[]", b'"x"', b"1", b"null"):
            headers = {"Content-Type": "application/json", **hook.sign(body)}
            response = http.post(hook.path, content=body, headers=headers)
            answers.append((response.status_code, response.json()["error"]["code"]))

    assert answers == [(400, "payload_malformed")] * 4


@pytest.mark.parametrize("hook", WEBHOOKS, ids=lambda h: h.channel)
@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_deeply_nested_json_signed_correctly_is_a_400_not_a_crash(server: str, hook: Webhook, depth: int) -> None:
    # Under the 1 MB body limit, a body can nest 100,000 levels deep: a recursive parser would
    # hit Python's recursion limit (a 500) or worse. Alone, and inside a real payload.
    nested = "[" * depth + "]" * depth
    real = hook.samples()[0].decode()
    inside = real[: real.index("{") + 1] + f'"x": {nested}, ' + real[real.index("{") + 1 :]
    with httpx2.Client(base_url=server, timeout=30) as http:
        for body in (nested.encode(), inside.encode()):
            response = http.post(
                hook.path, content=body, headers={"Content-Type": "application/json", **hook.sign(body)}
            )
            assert response.status_code == 400, response.text[:300]
            assert response.json()["error"]["code"] == "payload_malformed"
