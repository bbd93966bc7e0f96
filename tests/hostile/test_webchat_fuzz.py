"""The web chat API against hostile input, with an oracle: every POST's status is predicted.

The widget's API is public by nature (the account id is in the page), so its routes take the
most hostile traffic. A POST is one of: a message built field by field (valid or not, ids drawn
from a small pool so duplicates and conflicts happen, texts up to and past the limit, written
with or without JSON escapes), random JSON, random bytes, deep nesting, or a mutated fixture;
sent to the right account, an unknown one, another channel's, or an id the route refuses. The
oracle knows what each must get: 202 new, 200 the same message again, 409 the same id with
another text, 413 too big, 400/422 malformed or invalid, 404/422 for the account. The stream is
driven at the ASGI level (the in-process transport would wait for an endless body forever).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from urllib.parse import quote

from hostile_harness import HostileApp, hostile_fixture
from hostile_kit import fixture_bodies, fuzz, hostile_bodies, json_values
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.ingestion.channels.webchat.adapter import body_limit

MAX_TEXT = 400  # small enough that texts at and past the limit are cheap to generate
OWN = "demo-webchat"
TOKEN = re.compile(r"[A-Za-z0-9._:-]{1,128}")
ACCOUNTS = {
    "own": OWN,
    "unknown": "no-such-webchat",
    "other_channel": "hostile-telegram",
    "malformed": quote("bad id/\x00é", safe=""),
    "too_long": "a" * 41,
}
TARGETS = ["own"] * 7 + ["unknown", "other_channel", "malformed", "too_long"]


hostile = hostile_fixture("hostile-webchat", webchat_max_text_chars=MAX_TEXT)


# A small pool (so repeats and conflicts happen), any valid token, or anything at all.
tokens = st.one_of(
    st.sampled_from(["s1", "s2", "web.chat:9", "1", "2", "x" * 128]),
    st.from_regex(TOKEN, fullmatch=True),
    st.text(max_size=12),
    st.integers(),
)
long_texts = st.builds(
    lambda unit, n: unit * n,
    st.sampled_from(["x", "é", "😀", "\u3000", " a", "\x00"]),
    st.integers(MAX_TEXT - 20, MAX_TEXT + 20),
)
texts = st.sampled_from(["hello", " hello ", "   ", "", "a\x00b", "\u202eevil"]) | st.text(max_size=30) | long_texts
messages = st.fixed_dictionaries(
    {"session": tokens, "id": tokens, "text": texts | json_values},
    optional={"extra": json_values},
).flatmap(lambda d: st.sampled_from([d, {k: v for k, v in d.items() if k != "text"}]))
structured = st.tuples(messages, st.booleans()).map(lambda t: json.dumps(t[0], ensure_ascii=t[1]).encode())
raw_bodies = structured | structured | hostile_bodies(fixture_bodies("webchat"))


def valid_text(raw: bytes) -> str | None:
    """The text a valid message stores (trimmed), or None when the body is not a valid message."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or set(doc) != {"session", "id", "text"}:
        return None
    session, id_, text = doc["session"], doc["id"], doc["text"]
    if not all(isinstance(v, str) for v in (session, id_, text)) or "\x00" in text:
        return None
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):  # a lone surrogate escape: not text at all
        return None
    if not (TOKEN.fullmatch(session) and TOKEN.fullmatch(id_)) or not text.strip() or len(text) > MAX_TEXT:
        return None  # the limit counts the text as sent
    return str(text.strip())


def test_a_posted_message_gets_exactly_the_status_the_oracle_predicts(hostile: HostileApp) -> None:
    seen: dict[tuple[str, str], str] = {}  # (session, id) -> the text stored under it
    statuses: Counter[int] = Counter()
    limit = body_limit(MAX_TEXT)

    @fuzz(2_000)
    @given(body=raw_bodies, target=st.sampled_from(TARGETS))
    def post(body: bytes, target: str) -> None:
        path = f"/v1/webchat/{ACCOUNTS[target]}/messages"
        response = hostile.exchange(
            "POST /v1/webchat/{channel_account_id}/messages",
            "POST",
            path,
            content=body,
            headers={"Content-Type": "application/json"},
        )
        status = response.status_code
        statuses[status] += 1
        text = valid_text(body)
        if target in ("malformed", "too_long"):
            assert status in (404, 422), response.text  # an encoded "/" in the id leaves no route
        elif text is None:
            assert status == 413 if len(body) > limit else status in (400, 422), (len(body), response.text)
        elif target != "own":
            assert status == 404, response.text  # the body is read first, then the account
        else:
            assert len(body) <= limit, "a valid message must fit the body limit, however it is escaped"
            doc = json.loads(body)
            key = (doc["session"], doc["id"])
            expected = 202 if key not in seen else 200 if seen[key] == text else 409
            assert status == expected, (key, seen.get(key), text, response.text)
            seen.setdefault(key, text)
            if status != 409:
                assert response.json()["duplicate"] is (status == 200)

    post()
    # Every branch of the oracle was taken, so its predictions were put to the test.
    assert all(statuses[s] > 0 for s in (200, 202, 400, 404, 409, 413, 422)), statuses


def test_the_transcript_and_the_page_refuse_bad_ids_and_sessions(hostile: HostileApp) -> None:
    @fuzz(300)
    @given(
        target=st.sampled_from(TARGETS),
        session=st.none() | st.sampled_from(["s1", "nobody"]) | st.text(max_size=140),
        page=st.booleans(),
    )
    def get(target: str, session: str | None, page: bool) -> None:
        account = ACCOUNTS[target]
        if page:
            response = hostile.exchange("GET /webchat/{channel_account_id}", "GET", f"/webchat/{account}")
        else:
            params = {} if session is None else {"session": session}
            response = hostile.exchange(
                "GET /v1/webchat/{channel_account_id}/messages", "GET", f"/v1/webchat/{account}/messages", params=params
            )
        if target in ("malformed", "too_long"):
            assert response.status_code in (404, 422), response.text
        elif not page and not TOKEN.fullmatch(session or ""):
            assert response.status_code == 422, response.text
        elif target != "own":
            assert response.status_code == 404, response.text
        else:
            assert response.status_code == 200, response.text
            assert page or isinstance(response.json()["messages"], list)

    get()


def test_the_stream_refuses_bad_ids_and_survives_any_last_event_id(hostile: HostileApp) -> None:
    # A conversation to resume in, so cursors reach the transcript query.
    hostile.exchange(
        "POST /v1/webchat/{channel_account_id}/messages",
        "POST",
        f"/v1/webchat/{OWN}/messages",
        json={"session": "s1", "id": "stream-1", "text": "hello"},
    )
    resumed: Counter[bool] = Counter()  # whether a case resumed that conversation at some cursor

    @fuzz(100)
    @given(
        target=st.sampled_from(TARGETS),
        session=st.sampled_from(["s1", "s1", "s1", "nobody"]) | st.text(max_size=20),
        last_event_id=st.none()
        | st.from_regex(r"[0-9]{1,18}:[0-9]{1,9}", fullmatch=True)
        | st.sampled_from(["999999999999999999:999999999", "0:0", "-1:0", "1:-1"])
        | st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30),
    )
    def stream(target: str, session: str, last_event_id: str | None) -> None:
        resumed[target == "own" and session == "s1" and last_event_id is not None] += 1
        headers = {} if last_event_id is None else {"Last-Event-ID": last_event_id}
        path = f"/v1/webchat/{ACCOUNTS[target]}/stream"
        response = hostile.exchange(
            "GET /v1/webchat/{channel_account_id}/stream",
            "GET",
            path,
            stream=True,
            params={"session": session},
            headers=headers,
        )
        status = response.status_code
        if target in ("malformed", "too_long"):
            assert status in (404, 422), response.text
        elif not TOKEN.fullmatch(session):
            assert status == 422, response.text
        elif target != "own":
            assert status == 404, response.text
        else:
            assert (status, response.content[:7]) == (200, b"retry: "), response.content

    stream()
    assert resumed[True] > 5, resumed
