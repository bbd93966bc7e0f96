"""Every platform webhook against hostile input, in-process, on one app per backend.

Each example is one POST: a real payload or a truncated, mutated, deeply nested or random one;
signed correctly over the exact fuzzed bytes (most of them, so they reach the parsers), unsigned,
signed with another secret, signed over other bytes, or carrying a garbage header; sent to the
right account, an unknown one, another channel's, or an id the route refuses. The handshake GETs
of the Meta products get random query strings. ``hostile_kit.HostileApp.exchange`` holds each
answer to the rules every sender is owed (no 5xx, the JSON error shape, nothing stored by a 4xx);
here the status must also be the one the authentication and the account call for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

import pytest
from hostile_harness import HostileApp, hostile_fixture
from hostile_kit import OTHER_SECRET, SECRET, fixture_bodies, fuzz, hostile_bodies, line_signature, meta_signature
from hypothesis import given
from hypothesis import strategies as st

EXAMPLES = 1_000  # per webhook; the handshakes get a fifth of it


@dataclass(frozen=True)
class Hook:
    channel: str
    account_id: str
    samples: list[bytes]
    header: str
    sign: Callable[[str, bytes], str]  # (secret, exact body) -> the header's value

    @property
    def path(self) -> str:
        return f"/webhooks/{self.channel}/{self.account_id}"


HOOKS = [
    # Telegram's "signature" is the shared secret itself, whatever the body.
    Hook("telegram", "hostile-telegram", fixture_bodies("telegram"), "X-Telegram-Bot-Api-Secret-Token", lambda s, _: s),
    Hook(
        "messenger",
        "hostile-messenger",
        fixture_bodies("messenger", unless="instagram"),
        "X-Hub-Signature-256",
        meta_signature,
    ),
    Hook(
        "instagram",
        "hostile-instagram",
        fixture_bodies("messenger", prefix="instagram"),
        "X-Hub-Signature-256",
        meta_signature,
    ),
    Hook("whatsapp", "hostile-whatsapp", fixture_bodies("whatsapp"), "X-Hub-Signature-256", meta_signature),
    Hook("line", "hostile-line", fixture_bodies("line"), "X-Line-Signature", line_signature),
]
HANDSHAKES = [h for h in HOOKS if h.channel in ("messenger", "instagram", "whatsapp")]

header_values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=80)
# How the request authenticates: mostly correctly, so the parsers see the hostile bodies.
AUTH = ["signed"] * 6 + ["none", "other_secret", "other_body", "garbage"]
# Where it goes: its own account mostly; else an unknown id, another channel's account, or an
# id the path pattern refuses (percent-encoded random text).
TARGETS = ["own"] * 8 + ["unknown", "other_channel", "malformed"]
malformed_ids = st.one_of(st.text(min_size=41, max_size=60), st.text(max_size=20).filter(lambda s: not s.isalnum()))


hostile = hostile_fixture("hostile-webhooks")


def _path(hook: Hook, target: str, malformed: str) -> str:
    if target == "unknown":
        return f"/webhooks/{hook.channel}/no-such-account"
    if target == "other_channel":
        other = HOOKS[(HOOKS.index(hook) + 1) % len(HOOKS)]
        return f"/webhooks/{hook.channel}/{other.account_id}"
    if target == "malformed":
        return f"/webhooks/{hook.channel}/{quote(malformed, safe='') or '%20'}"
    return hook.path


def _headers(hook: Hook, auth: str, body: bytes, garbage: str, content_type: str | None) -> dict[str, str | bytes]:
    headers: dict[str, str | bytes] = {"Content-Type": content_type} if content_type else {}
    if auth == "signed":
        headers[hook.header] = hook.sign(SECRET, body)
    elif auth == "other_secret":
        headers[hook.header] = hook.sign(OTHER_SECRET, body)
    elif auth == "other_body":
        headers[hook.header] = hook.sign(SECRET, body + b" ")
    elif auth == "garbage":
        headers[hook.header] = garbage.encode("latin-1")
    return headers


@pytest.mark.parametrize("hook", HOOKS, ids=lambda h: h.channel)
def test_a_webhook_answers_hostile_posts_with_a_4xx_or_a_200_and_stores_nothing_it_refused(
    hostile: HostileApp, hook: Hook
) -> None:
    statuses: Counter[int] = Counter()

    @fuzz(EXAMPLES)
    @given(
        body=hostile_bodies(hook.samples),
        auth=st.sampled_from(AUTH),
        target=st.sampled_from(TARGETS),
        malformed=malformed_ids,
        garbage=header_values,
        content_type=st.sampled_from(["application/json", None, "text/plain", "application/json; charset=utf-16"]),
    )
    def post(body: bytes, auth: str, target: str, malformed: str, garbage: str, content_type: str | None) -> None:
        headers = _headers(hook, auth, body, garbage, content_type)
        path = _path(hook, target, malformed)
        label = f"POST /webhooks/{hook.channel}/{{account_id}}"
        response = hostile.exchange(label, "POST", path, content=body, headers=headers)
        statuses[response.status_code] += 1
        if target == "malformed":
            assert response.status_code in (404, 422), response.text
        elif target != "own":
            assert response.status_code == 404, response.text
        elif auth != "signed" and not (auth == "other_body" and hook.channel == "telegram"):
            assert response.status_code == 401, response.text
        else:
            assert response.status_code in (200, 400, 422), response.text
        if response.status_code == 200:
            assert response.json()["ok"] is True

    post()
    # The fuzzing reached past the door: some bodies were stored or ignored, some refused as such.
    assert all(statuses[s] > 0 for s in (200, 401, 404)), statuses
    assert statuses[400] + statuses[422] > 0, statuses


@pytest.mark.parametrize("hook", HANDSHAKES, ids=lambda h: h.channel)
def test_a_meta_handshake_echoes_the_challenge_only_to_the_right_verify_token(hostile: HostileApp, hook: Hook) -> None:
    @fuzz(EXAMPLES // 5)
    @given(
        mode=st.sampled_from(["subscribe", "unsubscribe", "", None]) | st.text(max_size=12),
        token=st.sampled_from([SECRET, SECRET.upper(), "", None]) | st.text(max_size=30),
        challenge=st.sampled_from(["1158201444", "", None, "9" * 201]) | st.text(max_size=210),
        extra=st.dictionaries(st.text(max_size=10), st.text(max_size=20), max_size=3),
    )
    def handshake(mode: str | None, token: str | None, challenge: str | None, extra: dict[str, str]) -> None:
        params = {**extra, "hub.mode": mode, "hub.verify_token": token, "hub.challenge": challenge}
        params = {k: v for k, v in params.items() if v is not None}
        response = hostile.exchange(f"GET /webhooks/{hook.channel}/{{account_id}}", "GET", hook.path, params=params)
        valid = mode == "subscribe" and token == SECRET and challenge is not None and 0 < len(challenge) <= 200
        if valid:
            assert (response.status_code, response.text) == (200, challenge)
        else:
            assert response.status_code in (400, 403, 422), response.text

    handshake()
