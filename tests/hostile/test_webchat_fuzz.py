"""The web chat API against hostile input, with an oracle: every POST's status is predicted.

The widget's API is public by nature (the account id is in the page), so its routes take the
most hostile traffic. A POST is one of: a message built field by field (valid or not, ids drawn
from a small pool so duplicates and conflicts happen, texts up to and past the limit, written
with or without JSON escapes), random JSON, random bytes, deep nesting, or a mutated fixture;
sent to the right account, an unknown one, another channel's, or an id the route refuses. The
oracle knows what each must get: 202 new, 200 the same message again, 409 the same id with
another text, 413 too big, 400/422 malformed or invalid (a session id shorter than 16 characters
among them), 404/422 for the account, and 429 past a rate limit. The limits' clock stands still
unless the test moves it a whole minute on, so the oracle counts exactly what each limit has let
in. The stream is driven at the ASGI level (the in-process transport would wait for an endless
body forever).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import Counter
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from hostile_harness import HostileApp, hostile_fixture
from hostile_kit import fixture_bodies, fuzz, hostile_bodies, json_values
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.ingestion.channels.webchat.adapter import body_limit

MAX_TEXT = 400  # small enough that texts at and past the limit are cheap to generate
OWN = "demo-webchat"
TOKEN = re.compile(r"[A-Za-z0-9._:-]{1,128}")  # a message id
SESSION = re.compile(r"[A-Za-z0-9._:-]{16,128}")  # a session id: long enough not to be guessed
ACCOUNTS = {
    "own": OWN,
    "unknown": "no-such-webchat",
    "other_channel": "hostile-telegram",
    "malformed": quote("bad id/\x00é", safe=""),
    "too_long": "a" * 41,
}
TARGETS = ["own"] * 7 + ["unknown", "other_channel", "malformed", "too_long"]


# Messages a minute per session, per client address (every request here comes from one) and per
# account id in the path: low enough that the fuzz runs into each of them.
PER_SESSION, PER_ADDRESS, PER_ACCOUNT = 2, 8, 5

hostile = hostile_fixture(
    "hostile-webchat",
    webchat_max_text_chars=MAX_TEXT,
    webchat_messages_per_minute_session=PER_SESSION,
    webchat_messages_per_minute_ip=PER_ADDRESS,
    webchat_messages_per_minute_account=PER_ACCOUNT,
)


class StoppedClock:
    """The clock the rate limits read (``ChannelDeps.clock.monotonic``): still, unless moved. Whole
    seconds, so a minute on is exactly 60 s to the limits' arithmetic."""

    def __init__(self) -> None:
        self.now = float(math.ceil(time.monotonic()))

    def monotonic(self) -> float:
        return self.now

    def minute_on(self) -> None:
        self.now += 60


@pytest.fixture(scope="module")
def limits_clock(hostile: HostileApp) -> Iterator[StoppedClock]:
    """The module's app with its clock's ``monotonic`` stopped (only the rate limits and the
    vault's cache read it; ``now`` stays real)."""
    clock = StoppedClock()
    clock.minute_on()  # whatever the limits let in before is a minute old: every bucket is full
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hostile.runtime.channel_deps.clock, "monotonic", clock.monotonic)
        yield clock


class MinuteOfLimits:
    """What the limits let in within one minute of stopped time: at most ``PER_SESSION`` messages
    per session of an account, ``PER_ADDRESS`` from our one address and ``PER_ACCOUNT`` per account
    id, counting only the messages let in; a minute later, as many again."""

    def __init__(self) -> None:
        self.let_in: Counter[tuple[str, ...]] = Counter()

    def retry_after(self, account: str, session: str) -> int:
        """0 for a message the limits let in (and count), else the ``Retry-After`` of its 429: when
        the fullest limit it is over has room for one more (60 / its messages a minute)."""
        limits = {
            ("session", account, session): PER_SESSION,
            ("address",): PER_ADDRESS,
            ("account", account): PER_ACCOUNT,
        }
        over = [math.ceil(60 / limit) for key, limit in limits.items() if self.let_in[key] >= limit]
        if over:
            return max(over)
        self.let_in.update(limits.keys())
        return 0

    def minute_on(self) -> None:
        self.let_in.clear()


# A small pool (so repeats and conflicts happen), any valid token, or anything at all.
tokens = st.one_of(
    st.sampled_from(["s1", "s2", "web.chat:9", "1", "2", "x" * 128]),
    st.from_regex(TOKEN, fullmatch=True),
    st.text(max_size=12),
    st.integers(),
)
# Sessions: a small pool of valid ones (so repeats, conflicts and the per-session limit happen),
# ones just outside the rule (the old short ids, one character short or long, a space), any valid
# session, or any token (mostly too short).
SESSION_POOL = ["session-alpha-0001", "session-bravo-0002", "web.chat:9-abcdefg", "x" * 16, "x" * 128]
sessions = st.one_of(
    st.sampled_from(SESSION_POOL),
    st.sampled_from(["s1", "web.chat:9", "x" * 15, "x" * 129, "session alpha 001"]),
    st.from_regex(SESSION, fullmatch=True),
    tokens,
)
long_texts = st.builds(
    lambda unit, n: unit * n,
    st.sampled_from(["x", "é", "😀", "\u3000", " a", "\x00"]),
    st.integers(MAX_TEXT - 20, MAX_TEXT + 20),
)
texts = st.sampled_from(["hello", " hello ", "   ", "", "a\x00b", "\u202eevil"]) | st.text(max_size=30) | long_texts
messages = st.fixed_dictionaries(
    {"session": sessions, "id": tokens, "text": texts | json_values},
    optional={"extra": json_values},
).flatmap(lambda d: st.sampled_from([d, {k: v for k, v in d.items() if k != "text"}]))
structured = st.tuples(messages, st.booleans()).map(lambda t: json.dumps(t[0], ensure_ascii=t[1]).encode())
# Well-formed messages from the pools too, so idempotency and every rate limit get real traffic.
plausible = st.fixed_dictionaries(
    {
        "session": st.sampled_from(SESSION_POOL),
        "id": st.sampled_from(["m1", "m2", "web.chat:9"]),
        "text": st.sampled_from(["hello", " hello ", "Do you print posters?"]),
    }
).map(lambda d: json.dumps(d).encode())
raw_bodies = plausible | structured | structured | hostile_bodies(fixture_bodies("webchat"))


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
    if not (SESSION.fullmatch(session) and TOKEN.fullmatch(id_)) or not text.strip() or len(text) > MAX_TEXT:
        return None  # the limit counts the text as sent
    return str(text.strip())


def test_a_posted_message_gets_exactly_the_status_the_oracle_predicts(
    hostile: HostileApp, limits_clock: StoppedClock
) -> None:
    seen: dict[tuple[str, str], str] = {}  # (session, id) -> the text stored under it
    statuses: Counter[int] = Counter()
    retry_afters: Counter[int] = Counter()
    limit = body_limit(MAX_TEXT)
    minute = MinuteOfLimits()

    def check(body: bytes, target: str, a_minute_later: bool) -> None:
        if a_minute_later:
            limits_clock.minute_on()
            minute.minute_on()
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
        elif wait_s := minute.retry_after(ACCOUNTS[target], json.loads(body)["session"]):
            # the body is read, then the limits counted, before the account is looked up
            assert (status, response.headers.get("retry-after")) == (429, str(wait_s)), response.text
            assert response.json()["error"]["code"] == "rate_limited"
            retry_afters[wait_s] += 1
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

    @fuzz(2_000)
    @given(body=raw_bodies, target=st.sampled_from(TARGETS), a_minute_later=st.sampled_from([False] * 49 + [True]))
    def post(body: bytes, target: str, a_minute_later: bool) -> None:
        check(body, target, a_minute_later)

    post()
    # Hypothesis also draws string constants from the modules loaded, so the fuzz's cases change
    # with code elsewhere in the suite: each limit is made to refuse a message here, in a fresh
    # minute, whatever the fuzz drew. The account's 5 (the 6th to it: 12 s), one session's 2 (its
    # 3rd: 30 s), then our address's 8 (the 9th let in from it: 8 s).
    for n, (target, session) in enumerate(
        [("own", f"burst-session-{k:04d}") for k in range(6)]
        + [("unknown", "burst-session-same")] * 3
        + [("unknown", "burst-session-8888"), ("unknown", "burst-session-9999")]
    ):
        body = json.dumps({"session": session, "id": f"burst-{n}", "text": "hello"}).encode()
        check(body, target, a_minute_later=n == 0)
    # Every branch of the oracle was taken, so its predictions were put to the test, and each limit
    # was the one that refused some message (its Retry-After tells which).
    assert all(statuses[s] > 0 for s in (200, 202, 400, 404, 409, 413, 422, 429)), statuses
    limits = (PER_SESSION, PER_ADDRESS, PER_ACCOUNT)
    assert set(retry_afters) == {math.ceil(60 / n) for n in limits}, (retry_afters, statuses)


# Sessions to read or stream: valid ones, with a conversation or without (the pool of the POST
# test, a stranger's), and short ones a guesser would try: refused however well formed.
VALID_SESSIONS = ["session-alpha-0001", "nobody-at-all-0000", "x" * 16]
SHORT_SESSIONS = ["s1", "nobody", "x" * 15]


def test_the_transcript_and_the_page_refuse_bad_ids_and_sessions(hostile: HostileApp) -> None:
    outcomes: Counter[str] = Counter()

    @fuzz(300)
    @given(
        target=st.sampled_from(TARGETS),
        session=st.none()
        | st.sampled_from(VALID_SESSIONS + SHORT_SESSIONS)
        | st.from_regex(SESSION, fullmatch=True)
        | st.text(max_size=140),
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
        elif not page and not SESSION.fullmatch(session or ""):
            assert response.status_code == 422, response.text
            outcomes["short session refused"] += bool(TOKEN.fullmatch(session or ""))
        elif target != "own":
            assert response.status_code == 404, response.text
            outcomes["unknown account"] += 1
        else:
            assert response.status_code == 200, response.text
            assert page or isinstance(response.json()["messages"], list)
            outcomes["page" if page else "transcript"] += 1

    get()
    assert all(outcomes[o] > 0 for o in ("short session refused", "unknown account", "page", "transcript")), outcomes


def test_the_stream_refuses_bad_ids_and_survives_any_last_event_id(
    hostile: HostileApp, limits_clock: StoppedClock
) -> None:
    # A conversation to resume in, so cursors reach the transcript query; a minute after whatever
    # the POST test sent, so the limits let it in.
    limits_clock.minute_on()
    conversation = "session-stream-0001"
    posted = hostile.exchange(
        "POST /v1/webchat/{channel_account_id}/messages",
        "POST",
        f"/v1/webchat/{OWN}/messages",
        json={"session": conversation, "id": "stream-1", "text": "hello"},
    )
    assert posted.status_code == 202, posted.text
    resumed: Counter[bool] = Counter()  # whether a case resumed that conversation at some cursor
    refused_short: Counter[bool] = Counter()

    @fuzz(100)
    @given(
        target=st.sampled_from(TARGETS),
        session=st.sampled_from([conversation] * 3 + ["nobody-at-all-0000"])
        | st.sampled_from(SHORT_SESSIONS)
        | st.text(max_size=20),
        last_event_id=st.none()
        | st.from_regex(r"[0-9]{1,18}:[0-9]{1,9}", fullmatch=True)
        | st.sampled_from(["999999999999999999:999999999", "0:0", "-1:0", "1:-1"])
        | st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30),
    )
    def stream(target: str, session: str, last_event_id: str | None) -> None:
        resumed[target == "own" and session == conversation and last_event_id is not None] += 1
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
        elif not SESSION.fullmatch(session):
            assert status == 422, response.text
            refused_short[bool(TOKEN.fullmatch(session))] += 1
        elif target != "own":
            assert status == 404, response.text
        else:
            assert (status, response.content[:7]) == (200, b"retry: "), response.content

    stream()
    assert resumed[True] > 5, resumed
    assert refused_short[True] > 0, refused_short  # a well-formed session too short to be unguessable
