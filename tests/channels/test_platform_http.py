"""Calls to platform APIs: rate limits waited out once, downloads capped, redirects followed
only to places we fetch from, and credentials never carried to another host."""

from __future__ import annotations

import httpx2
import pytest

from frontdesk.errors import ChannelAPIError
from frontdesk.ingestion.channels._http import call_json, download


def client(handler) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


async def test_a_short_rate_limit_is_waited_out_once_then_the_error_is_reported():
    calls = []

    def handler(request):
        calls.append(request)
        if len(calls) == 1:
            return httpx2.Response(429, json={"ok": False, "parameters": {"retry_after": 0}})
        return httpx2.Response(200, json={"ok": True, "result": 1})

    async with client(handler) as http:
        assert await call_json(http, "POST", "https://api.telegram.org/bot1:x/sendMessage", json={}) == {
            "ok": True,
            "result": 1,
        }
    assert len(calls) == 2

    async with client(lambda r: httpx2.Response(429, headers={"retry-after": "60"}, json={})) as http:
        with pytest.raises(ChannelAPIError) as failed:
            await call_json(http, "POST", "https://x.test/send", json={})
    assert (failed.value.status, failed.value.retry_after) == (429, 60.0)


async def test_meta_errors_keep_their_details_and_telegram_tokens_never_show():
    body = {"error": {"code": 131053, "message": "Media upload error", "error_data": {"details": "bad jpeg"}}}
    async with client(lambda r: httpx2.Response(400, json=body)) as http:
        with pytest.raises(ChannelAPIError, match="131053 Media upload error: bad jpeg"):
            await call_json(http, "POST", "https://graph.facebook.com/v25.0/1/messages", json={})

    def unreachable(request):
        raise httpx2.ConnectError("refused")

    async with client(unreachable) as http:
        with pytest.raises(ChannelAPIError) as failed:
            await call_json(http, "POST", "https://api.telegram.org/bot123:SECRET-token/sendMessage", json={})
    assert "SECRET" not in str(failed.value)


async def test_a_body_over_the_limit_is_refused():
    async with client(lambda r: httpx2.Response(200, content=b"x" * 100)) as http:
        with pytest.raises(ChannelAPIError, match="limit"):
            await download(http, "https://cdn.test/a.jpg", limit=50)


async def test_redirects_to_plain_http_or_a_refused_host_are_not_followed():
    def handler(request):
        if request.url.path == "/to-http":
            return httpx2.Response(302, headers={"location": "http://169.254.169.254/latest/meta-data"})
        return httpx2.Response(302, headers={"location": "https://evil.test/x"})

    async with client(handler) as http:
        with pytest.raises(ChannelAPIError, match="redirected"):
            await download(http, "https://cdn.test/to-http")
        with pytest.raises(ChannelAPIError, match="redirected"):
            await download(http, "https://cdn.test/to-evil", allow=lambda url: "cdn.test" in url)


async def test_a_redirect_to_another_host_drops_the_bearer_token():
    seen = {}

    def handler(request):
        seen[request.url.host] = request.headers.get("authorization")
        if request.url.host == "graph.test":
            return httpx2.Response(302, headers={"location": "https://cdn.test/file"})
        return httpx2.Response(200, content=b"data", headers={"content-type": "image/jpeg"})

    async with client(handler) as http:
        assert await download(http, "https://graph.test/media", headers={"Authorization": "Bearer t"}) == (
            b"data",
            "image/jpeg",
        )
    assert seen == {"graph.test": "Bearer t", "cdn.test": None}


async def test_endless_redirects_stop():
    async with client(lambda r: httpx2.Response(302, headers={"location": "https://cdn.test/again"})) as http:
        with pytest.raises(ChannelAPIError, match="too many redirects"):
            await download(http, "https://cdn.test/start")
