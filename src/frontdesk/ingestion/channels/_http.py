"""Calling platform APIs: JSON calls and capped downloads, errors mapped to ``ChannelAPIError``.

One 429 with a short ``Retry-After`` is waited out and tried again: the platform said it did not
take the call, so this is not a blind resend. Anything else is the caller's to record.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

import httpx2

from frontdesk.errors import ChannelAPIError

MAX_WAIT_FOR_RATE_LIMIT_S = 5.0
MAX_MEDIA_BYTES = 20 * 1024 * 1024  # Telegram's download ceiling; more than any chat photo or voice note
_BOT_TOKEN_IN_PATH = re.compile(r"/bot[0-9]+:[A-Za-z0-9_-]+")


class RedactTokens(logging.Filter):
    """httpx logs every request URL at INFO; Telegram's URLs carry the bot token. Whoever
    configures logging, the token never reaches a log line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            record.msg = _BOT_TOKEN_IN_PATH.sub("/bot***", record.getMessage())
            record.args = None
        return True


for _name in ("httpx2", "httpx"):
    _logger = logging.getLogger(_name)
    if not any(isinstance(f, RedactTokens) for f in _logger.filters):
        _logger.addFilter(RedactTokens())


def _retry_after(response: httpx2.Response, body: Any) -> float | None:
    header = response.headers.get("retry-after", "")
    if header.isdigit():
        return float(header)
    if isinstance(body, dict):  # Telegram: {"parameters": {"retry_after": 3}}
        value = (body.get("parameters") or {}).get("retry_after")
        if isinstance(value, int | float):
            return float(value)
    return None


def _describe(body: Any, response: httpx2.Response) -> str:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):  # Meta: {"error": {"message", "code", "error_data": {"details"}}}
            details = (
                (error.get("error_data") or {}).get("details") if isinstance(error.get("error_data"), dict) else None
            )
            text = f"{error.get('code', '')} {error.get('message', '')}".strip()
            return (f"{text}: {details}" if details else text)[:300]
        for key in ("description", "message", "error"):  # Telegram, LINE, others
            if isinstance(body.get(key), str):
                details = body.get("details")  # LINE: [{"message", "property"}]
                if isinstance(details, list) and details:
                    parts = [
                        ": ".join(str(d[k]) for k in ("property", "message") if d.get(k))
                        for d in details
                        if isinstance(d, dict)
                    ]
                    return f"{body[key]} ({'; '.join(parts)})"[:300]
                return str(body[key])[:300]
    return response.text[:300]


async def call_json(
    http: httpx2.AsyncClient,
    method: str,
    url: str,
    *,
    json: Any = None,
    headers: Mapping[str, str] | None = None,
    ok: Any = None,
) -> Any:
    """One API call; the decoded JSON body on success. ``ok(body) -> bool`` checks bodies that
    report failure with HTTP 200 (Telegram's ``{"ok": false}``)."""
    for attempt in range(2):
        try:
            response = await http.request(method, url, json=json, headers=dict(headers or {}))
        except httpx2.HTTPError as exc:
            raise ChannelAPIError(f"{method} {_redact(url)}: {type(exc).__name__}") from exc
        try:
            body = response.json() if response.content else None
        except ValueError:
            body = None
        if response.status_code == 429 and attempt == 0:
            wait = _retry_after(response, body)
            if wait is not None and wait <= MAX_WAIT_FOR_RATE_LIMIT_S:
                await asyncio.sleep(wait)
                continue
        if response.is_success and (ok is None or ok(body)):
            return body
        raise ChannelAPIError(
            f"HTTP {response.status_code}: {_describe(body, response)}",
            status=response.status_code,
            retry_after=_retry_after(response, body),
        )
    raise AssertionError("unreachable")


MAX_REDIRECTS = 3


async def download(
    http: httpx2.AsyncClient,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    limit: int = MAX_MEDIA_BYTES,
    allow: Callable[[str], bool] | None = None,
) -> tuple[bytes, str]:
    """The bytes at ``url`` and their content type, refused past ``limit`` bytes.

    Redirects are followed by hand (at most 3): every hop must be https (or stay on the first
    URL's origin, e.g. a local test double) and pass ``allow``; credentials never follow a hop to
    another origin. A signed webhook can still carry any URL, so nothing here trusts the target:
    a URL that came from a payload or a platform's answer is fetched with the guarded client
    (``ChannelDeps.guarded_http``), which checks every hop's address as it connects and raises
    ``OutboundRefused`` (not retried: the address will not change its nature)."""
    current, sent_headers = url, dict(headers or {})
    for _ in range(MAX_REDIRECTS + 1):
        try:
            async with http.stream("GET", current, headers=sent_headers, follow_redirects=False) as response:
                if response.is_redirect:
                    target = str(response.url.join(response.headers.get("location", "")))
                    if not _may_follow(url, target) or (allow is not None and not allow(target)):
                        raise ChannelAPIError("download: redirected to a location we do not fetch from", permanent=True)
                    if _origin(target) != _origin(current):
                        sent_headers = {k: v for k, v in sent_headers.items() if k.lower() != "authorization"}
                    current = target
                    continue
                return await _read_capped(response, limit)
        except httpx2.HTTPError as exc:
            raise ChannelAPIError(f"download: {type(exc).__name__}") from exc
    raise ChannelAPIError("download: too many redirects", permanent=True)


async def _read_capped(response: httpx2.Response, limit: int) -> tuple[bytes, str]:
    if not response.is_success:
        raise ChannelAPIError(f"download: HTTP {response.status_code}", status=response.status_code)
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ChannelAPIError(f"download: {declared} bytes is over the {limit}-byte limit", permanent=True)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise ChannelAPIError(f"download: over the {limit}-byte limit", permanent=True)
        chunks.append(chunk)
    mime = response.headers.get("content-type", "application/octet-stream").split(";")[0].strip()
    return b"".join(chunks), mime


def _origin(url: str) -> tuple[str, str]:
    parsed = httpx2.URL(url)
    return parsed.scheme, parsed.netloc.decode() if isinstance(parsed.netloc, bytes) else str(parsed.netloc)


def _may_follow(first: str, target: str) -> bool:
    return httpx2.URL(target).scheme == "https" or _origin(target) == _origin(first)


def _redact(url: str) -> str:
    """Telegram puts the bot token in the path: never let it reach an error message."""
    return _BOT_TOKEN_IN_PATH.sub("/bot***", url)
