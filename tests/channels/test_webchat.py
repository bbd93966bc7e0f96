"""The web chat channel through its HTTP API: posting, idempotency, validation, transcript, page, SSE."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

import httpx2
import pytest
import uvicorn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frontdesk.app import create_app
from frontdesk.platform.store.schema import ChannelAccount
from harness import make_runtime, reply

ECHO = {"name": "t", "default": [reply("echo: {user_text}")]}
TWO_BLOCKS = {
    "name": "t2",
    "default": [{"reply": {"blocks": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}}],
}
FIXTURES = resources.files("frontdesk.ingestion.channels.webchat").joinpath("fixtures")
SESSION = "session-alpha-0001"  # a session id is 16 to 128 characters


def fixture(name: str) -> bytes:
    """A request body from the channel's fixtures folder, as the widget would send it."""
    return FIXTURES.joinpath(name).read_bytes()


def fixture_json(name: str) -> dict[str, Any]:
    return json.loads(fixture(name))


@asynccontextmanager
async def api(db, script=ECHO, **settings_: Any) -> AsyncIterator[tuple[Any, httpx2.AsyncClient, Any]]:
    """In-process client; jobs run only when the test says so (``drain``)."""
    runtime, accounts = await make_runtime(db, script, quiet_window_s=0, **settings_)
    app = create_app(runtime, run_workers=False)
    transport = httpx2.ASGITransport(app=app, raise_app_exceptions=False)  # a crash is a 500, as over the wire
    async with httpx2.AsyncClient(transport=transport, base_url="http://test") as client:
        yield runtime, client, accounts


async def drain(runtime) -> None:
    while await runtime.runner.run_once():
        pass


async def post(client: httpx2.AsyncClient, account: str, body: bytes | dict[str, Any]) -> httpx2.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = await client.post(
        f"/v1/webchat/{account}/messages", content=content, headers={"content-type": "application/json"}
    )
    assert response.status_code < 500, response.text
    return response


async def transcript(client: httpx2.AsyncClient, account: str, session: str) -> list[dict[str, Any]]:
    response = await client.get(f"/v1/webchat/{account}/messages", params={"session": session})
    assert response.status_code == 200, response.text
    return response.json()["messages"]


# -- posting and idempotency


async def test_new_message_is_accepted_with_its_message_id(db):
    async with api(db) as (_, client, accounts):
        response = await post(client, accounts.webchat_id, fixture("message__text.json"))

    assert response.status_code == 202
    assert isinstance(response.json()["message_id"], int)
    assert response.json()["duplicate"] is False


async def test_resent_message_returns_the_same_message_and_gets_no_second_reply(db):
    async with api(db) as (runtime, client, accounts):
        first = await post(client, accounts.webchat_id, fixture("message__text.json"))
        await drain(runtime)
        again = await post(client, accounts.webchat_id, fixture("message__text.json"))
        ran_another_turn = await runtime.runner.run_once()
        messages = await transcript(client, accounts.webchat_id, fixture_json("message__text.json")["session"])

    assert again.status_code == 200
    assert again.json() == {"message_id": first.json()["message_id"], "duplicate": True}
    assert not ran_another_turn
    assert [m["role"] for m in messages] == ["user", "assistant"]


async def test_reused_id_with_different_text_is_a_conflict(db):
    async with api(db) as (_, client, accounts):
        await post(client, accounts.webchat_id, fixture("message__text.json"))
        response = await post(client, accounts.webchat_id, fixture("message__duplicate_id.json"))
        messages = await transcript(client, accounts.webchat_id, fixture_json("message__text.json")["session"])

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "idempotency_conflict"
    assert "m-0001" in response.json()["error"]["message"]
    assert [m["blocks"][0]["text"] for m in messages] == [fixture_json("message__text.json")["text"]]


async def test_same_id_in_another_session_is_another_message(db):
    body = fixture_json("message__text.json")
    async with api(db) as (_, client, accounts):
        first = await post(client, accounts.webchat_id, body)
        other = await post(client, accounts.webchat_id, {**body, "session": "someone-else-0002"})

    assert (first.status_code, other.status_code) == (202, 202)
    assert other.json()["message_id"] != first.json()["message_id"]


async def test_vietnamese_and_emoji_text_round_trips_unchanged(db):
    body = fixture_json("message__unicode.json")
    async with api(db) as (runtime, client, accounts):
        assert (await post(client, accounts.webchat_id, body)).status_code == 202
        await drain(runtime)
        messages = await transcript(client, accounts.webchat_id, body["session"])

    assert [m["blocks"][0]["text"] for m in messages] == [body["text"], f"echo: {body['text']}"]


# -- validation


async def test_malformed_json_is_rejected_as_400(db):
    async with api(db) as (_, client, accounts):
        response = await post(client, accounts.webchat_id, fixture("message__malformed.txt"))

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "payload_malformed"


async def test_json_that_is_not_an_object_is_rejected_as_400_like_malformed_json(db):
    async with api(db) as (_, client, accounts):
        answers = [await post(client, accounts.webchat_id, body) for body in (b"[]", b'"hello"', b"1", b"null")]

    assert [(r.status_code, r.json()["error"]["code"]) for r in answers] == [(400, "payload_malformed")] * 4


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("message__missing_text.json", "text"),
        ("message__blank_text.json", "text"),
        ("message__wrong_types.json", "text"),
        ("message__extra_field.json", "tenant_id"),
        ("message__bad_session.json", "session"),
    ],
)
async def test_invalid_message_is_rejected_as_422_naming_the_field(db, name, field):
    async with api(db) as (runtime, client, accounts):
        response = await post(client, accounts.webchat_id, fixture(name))
        queued_a_turn = await runtime.runner.run_once()

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "payload_invalid"
    assert field in error["message"]
    assert not queued_a_turn


async def test_text_over_the_limit_is_rejected_naming_the_limit(db):
    async with api(db, webchat_max_text_chars=10) as (_, client, accounts):
        at_limit = await post(client, accounts.webchat_id, {"session": SESSION, "id": "a", "text": "ắ" * 9 + "🎉"})
        over = await post(client, accounts.webchat_id, {"session": SESSION, "id": "b", "text": "x" * 11})

    assert at_limit.status_code == 202  # the limit counts characters, not bytes
    assert over.status_code == 422
    assert over.json()["error"]["code"] == "payload_invalid"
    assert "10" in over.json()["error"]["message"]


async def test_longest_allowed_session_and_id_are_accepted_and_deduplicated(db):
    body = {"session": "s" * 128, "id": "i" * 128, "text": "hi"}  # documented maximum: 128 each
    async with api(db) as (_, client, accounts):
        first = await post(client, accounts.webchat_id, body)
        again = await post(client, accounts.webchat_id, body)

    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json()["message_id"] == first.json()["message_id"]


async def test_shortest_allowed_session_and_id_are_accepted_and_one_character_less_is_refused(db):
    body = {"session": "s" * 16, "id": "i", "text": "hi"}  # documented minimum: 16 and 1
    async with api(db) as (_, client, accounts):
        shortest = await post(client, accounts.webchat_id, body)
        too_short = await post(client, accounts.webchat_id, {**body, "session": "s" * 15})

    assert (shortest.status_code, too_short.status_code) == (202, 422)
    assert too_short.json()["error"]["code"] == "payload_invalid"
    assert "session" in too_short.json()["error"]["message"]
    assert "16 to 128 characters" in too_short.json()["error"]["message"]


async def test_text_with_a_nul_character_is_rejected_not_a_server_error(db):
    async with api(db) as (_, client, accounts):
        response = await post(client, accounts.webchat_id, {"session": SESSION, "id": "n", "text": "a\u0000b"})

    assert response.status_code == 422  # PostgreSQL cannot store U+0000
    assert "text" in response.json()["error"]["message"]


@pytest.mark.parametrize("query", [{}, {"session": "bad session!"}, {"session": "s" * 15}])
@pytest.mark.parametrize("route", ["messages", "stream"])
async def test_transcript_or_stream_without_a_valid_session_is_422(db, query, route):
    async with api(db) as (_, client, accounts):
        # bounded: a stream the route let in would never end in-process
        response = await asyncio.wait_for(client.get(f"/v1/webchat/{accounts.webchat_id}/{route}", params=query), 10)

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "payload_invalid"
    assert "session" in response.json()["error"]["message"]


ROUTES = [
    ("POST", "/v1/webchat/{id}/messages"),
    ("GET", "/v1/webchat/{id}/messages?session=session-alpha-0001"),
    ("GET", "/v1/webchat/{id}/stream?session=session-alpha-0001"),
    ("GET", "/webchat/{id}"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize("account", ["no-such-account", "terminal"])
async def test_unknown_or_non_webchat_account_is_404(db, method, path, account):
    async with api(db) as (_, client, accounts):
        account_id = accounts.terminal_id if account == "terminal" else account
        body = fixture("message__text.json") if method == "POST" else None
        response = await client.request(method, path.format(id=account_id), content=body)

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


# -- reading replies


async def test_transcript_shows_the_message_and_the_sent_reply(db):
    body = fixture_json("message__text.json")
    async with api(db, TWO_BLOCKS) as (runtime, client, accounts):
        assert await transcript(client, accounts.webchat_id, body["session"]) == []
        posted = await post(client, accounts.webchat_id, body)
        await drain(runtime)
        user, assistant = await transcript(client, accounts.webchat_id, body["session"])

    assert (user["id"], user["role"]) == (posted.json()["message_id"], "user")
    assert user["blocks"] == [{"type": "text", "text": body["text"]}]
    assert assistant["role"] == "assistant"
    assert assistant["blocks"] == [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert assistant["receipt"]["status"] == "sent"


async def test_chat_page_shows_business_name_and_model_label(db):
    async with api(db) as (_, client, accounts):
        response = await client.get(f"/webchat/{accounts.webchat_id}")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "<h1>Demo Print Shop — web chat</h1>" in response.text
    assert "Model: injected" in response.text
    assert f'data-account="{accounts.webchat_id}"' in response.text
    assert "{{" not in response.text


async def test_chat_page_escapes_a_hostile_business_name(db):
    async with api(db) as (runtime, client, accounts):
        async with db.transaction() as session:
            session.add(
                ChannelAccount(
                    id="evil-webchat",
                    tenant_id=accounts.tenant_id,
                    channel="webchat",
                    name='<script>alert("x")</script> & Co',
                    config={},
                    created_at=runtime.clock.now(),
                )
            )
        response = await client.get("/webchat/evil-webchat")

    assert response.status_code == 200
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co" in response.text
    assert '<script>alert("x")' not in response.text


# -- never a 5xx

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=10,
)
tokens = st.from_regex(r"[A-Za-z0-9._:-]{1,128}", fullmatch=True) | st.text(max_size=140)
sessions = st.from_regex(r"[A-Za-z0-9._:-]{16,128}", fullmatch=True) | tokens
texts = st.text(max_size=60)
message_like = st.fixed_dictionaries(
    {"session": sessions, "id": tokens, "text": texts | json_values},
    optional={"extra": json_values},
)
bodies = (
    message_like.map(lambda b: json.dumps(b).encode())
    | json_values.map(lambda v: json.dumps(v).encode())
    | st.binary(max_size=80)
)


@pytest.fixture
async def shared_api(db):
    async with api(db, webchat_max_text_chars=40) as ctx:
        yield ctx


@settings(max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies)
async def test_no_request_body_causes_a_server_error(shared_api, body):
    _, client, accounts = shared_api
    response = await client.post(f"/v1/webchat/{accounts.webchat_id}/messages", content=body)

    # 429: every example comes from one client address, and Hypothesis repeats its simplest session
    assert response.status_code in (200, 202, 400, 409, 422, 429), response.text
    assert "error" in response.json() or "message_id" in response.json()


# -- end to end over real HTTP: the SSE stream


@asynccontextmanager
async def served(app) -> AsyncIterator[httpx2.AsyncClient]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(server.serve())
    try:
        await wait_until(lambda: server.started or task.done())
        assert server.started, "server failed to start"
        port = server.servers[0].sockets[0].getsockname()[1]
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            yield client
    finally:
        server.should_exit = True
        await task


async def wait_until(condition: Any, timeout_s: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def sse_events(response: httpx2.Response) -> AsyncIterator[dict[str, str]]:
    """Parse a text/event-stream into one dict of fields per event (comments skipped)."""
    event: dict[str, str] = {}
    async for line in response.aiter_lines():
        if not line:
            if event:
                yield event
            event = {}
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            event[field] = value.removeprefix(" ")


async def next_block(events: AsyncIterator[dict[str, str]], timeout_s: float = 10.0) -> dict[str, str]:
    async def find() -> dict[str, str]:
        async for event in events:
            if event.get("event") == "block":
                return event
        raise AssertionError("stream ended")

    return await asyncio.wait_for(find(), timeout_s)


async def test_reply_blocks_stream_to_an_open_page_over_http(db):
    runtime, accounts = await make_runtime(db, TWO_BLOCKS, quiet_window_s=0)
    url = f"/v1/webchat/{accounts.webchat_id}"
    async with served(create_app(runtime)) as client:  # workers run in the app's lifespan
        async with client.stream("GET", f"{url}/stream", params={"session": "live-session-0001"}) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            events = sse_events(stream)
            assert (await anext(events)) == {"retry": "2000"}
            assert (await anext(events)) == {"id": "0:0"}  # a new conversation: everything is new
            posted = await client.post(
                f"{url}/messages", json={"session": "live-session-0001", "id": "m1", "text": "cards?"}
            )
            assert posted.status_code == 202
            first, second = await next_block(events), await next_block(events)

        messages = (await client.get(f"{url}/messages", params={"session": "live-session-0001"})).json()

    reply_id = messages["messages"][1]["id"]
    assert reply_id > posted.json()["message_id"]
    assert [first["id"], second["id"]] == [f"{reply_id}:0", f"{reply_id}:1"]
    data = [json.loads(first["data"]), json.loads(second["data"])]
    expected = [(reply_id, 0, 2, "assistant"), (reply_id, 1, 2, "assistant")]
    assert [(d["message_id"], d["index"], d["count"], d["role"]) for d in data] == expected
    assert [d["block"] for d in data] == [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert data[0]["created_at"] == messages["messages"][1]["created_at"]


async def test_reconnecting_with_last_event_id_resumes_after_the_last_block_seen(db):
    runtime, accounts = await make_runtime(db, TWO_BLOCKS, quiet_window_s=0)
    url = f"/v1/webchat/{accounts.webchat_id}"
    async with served(create_app(runtime, run_workers=False)) as client:
        await client.post(f"{url}/messages", json={"session": SESSION, "id": "m1", "text": "hi"})
        await drain(runtime)
        reply_id = (await client.get(f"{url}/messages", params={"session": SESSION})).json()["messages"][1]["id"]
        headers = {"Last-Event-ID": f"{reply_id}:0"}
        async with client.stream("GET", f"{url}/stream", params={"session": SESSION}, headers=headers) as stream:
            resumed = await next_block(sse_events(stream))

    assert resumed["id"] == f"{reply_id}:1"
    assert json.loads(resumed["data"])["block"] == {"type": "text", "text": "two"}


async def test_fresh_stream_on_an_existing_conversation_sends_only_new_replies(db):
    runtime, accounts = await make_runtime(db, ECHO, quiet_window_s=0)
    async with served(create_app(runtime, run_workers=False)) as client:
        url = f"/v1/webchat/{accounts.webchat_id}"
        await client.post(f"{url}/messages", json={"session": SESSION, "id": "m1", "text": "old"})
        await drain(runtime)
        conversation_id = await runtime.ingestor.find_conversation(accounts.webchat_id, SESSION)
        async with client.stream("GET", f"{url}/stream", params={"session": SESSION}) as stream:
            events = sse_events(stream)
            await anext(events)  # retry: the stream is open
            start = await anext(events)  # the cursor it fixed at the present
            assert start["id"].startswith(f"{conversation_id and await latest_id(runtime, conversation_id)}:")
            await client.post(f"{url}/messages", json={"session": SESSION, "id": "m2", "text": "new"})
            await drain(runtime)
            block = await next_block(events)

    assert json.loads(block["data"])["block"]["text"] == "echo: new"


async def latest_id(runtime, conversation_id: str) -> int:
    from frontdesk.output.transcript import latest_message_id

    return await latest_message_id(runtime.db, conversation_id)


async def test_stream_that_drops_before_its_first_block_resumes_from_where_it_started(db):
    runtime, accounts = await make_runtime(db, ECHO, quiet_window_s=0)
    url = f"/v1/webchat/{accounts.webchat_id}"
    async with served(create_app(runtime, run_workers=False)) as client:
        await client.post(f"{url}/messages", json={"session": SESSION, "id": "m1", "text": "old"})
        await drain(runtime)
        async with client.stream("GET", f"{url}/stream", params={"session": SESSION}) as stream:
            events = sse_events(stream)
            await anext(events)
            start = (await anext(events))["id"]
        # the connection dropped; meanwhile a reply was stored
        await client.post(f"{url}/messages", json={"session": SESSION, "id": "m2", "text": "while away"})
        await drain(runtime)
        async with client.stream(
            "GET", f"{url}/stream", params={"session": SESSION}, headers={"Last-Event-ID": start}
        ) as stream:
            block = await next_block(sse_events(stream))

    assert json.loads(block["data"])["block"]["text"] == "echo: while away"


@pytest.mark.parametrize("last_event_id", ["\u00b2:0", "99999999999999999999999:0", "x", "1:2:3"])
async def test_garbled_last_event_id_starts_a_fresh_stream(db, last_event_id):
    runtime, accounts = await make_runtime(db, ECHO, quiet_window_s=0)
    async with served(create_app(runtime, run_workers=False)) as client:
        url = f"/v1/webchat/{accounts.webchat_id}/stream"
        headers = {"Last-Event-ID": last_event_id.encode("utf-8")}
        async with client.stream("GET", url, params={"session": SESSION}, headers=headers) as stream:
            events = sse_events(stream)
            assert stream.status_code == 200
            assert (await anext(events)) == {"retry": "2000"}
            assert (await anext(events)) == {"id": "0:0"}


async def test_customer_message_longer_than_a_reply_block_shows_in_the_transcript(db):
    async with api(db) as (runtime, client, accounts):
        text = "long " * 600  # 3000 characters: allowed in, longer than one reply block
        assert (
            await post(client, accounts.webchat_id, {"session": SESSION, "id": "m1", "text": text})
        ).status_code == 202
        await drain(runtime)
        messages = await transcript(client, accounts.webchat_id, SESSION)

    assert messages[0]["blocks"] == [{"type": "text", "text": text.strip()}]
    assert messages[1]["receipt"]["status"] == "sent"


async def test_body_over_the_size_limit_is_413_before_it_is_read(db):
    async with api(db, webchat_max_text_chars=100) as (_runtime, client, accounts):
        huge = json.dumps({"session": SESSION, "id": "m", "text": "x" * 10_000}).encode()
        response = await post(client, accounts.webchat_id, huge)

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


@pytest.mark.parametrize("account", ["%00", "a" * 41, "bad%20id"])
async def test_malformed_account_id_in_the_path_is_422_not_a_server_error(db, account):
    async with api(db) as (_runtime, client, _accounts):
        responses = [
            await client.post(f"/v1/webchat/{account}/messages", json={"session": SESSION, "id": "m", "text": "x"}),
            await client.get(f"/v1/webchat/{account}/messages", params={"session": SESSION}),
            await client.get(f"/webchat/{account}"),
        ]

    assert [r.status_code for r in responses] == [422, 422, 422]
