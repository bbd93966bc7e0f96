"""The S3 media store against a real S3-compatible server on loopback (moto's ThreadedMotoServer).

moto 5.2.5 serves any presigned link, expired or altered (it checks neither the SigV4 query
signature nor the expiry: tried before writing these tests), and a bucket like AWS, R2 or MinIO
refuses such links. So the store talks to moto through ``PresignGate``: a loopback proxy that does
what those buckets do with a presigned GET (recompute the signature from the secret, check the
expiry; written from the SigV4 specification, not with botocore) and passes everything on to moto.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import sys
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote

import httpx2
import pytest
from moto.server import ThreadedMotoServer
from pydantic_ai import BinaryContent, ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from werkzeug.serving import make_server

# The loopback harness and the platform doubles live with the channel tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "channels"))

from fake_telegram import TOKEN, FakeTelegram
from live import live_channel
from snapshot import read_fixture

from frontdesk.context.conversation import ContextLoader
from frontdesk.demo import seed_demo
from frontdesk.errors import ConfigError, NotFoundError
from frontdesk.platform.ids import TenantId
from frontdesk.platform.media import KEY_PATTERN, build_media_store, tenant_prefix
from frontdesk.platform.media_s3 import MISSING_EXTRA, S3Client, S3MediaStore, masked_url, s3_client
from frontdesk.platform.models.gateway import ModelGateway, PydanticAIClient
from frontdesk.reasoning.agent import Agent
from frontdesk.reasoning.loop import LoopLimits
from frontdesk.reasoning.turn import Turn, TurnMessage
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from harness import FAST, message

KEY_ID = "AKIAFRONTDESKTEST01"
SECRET = "fd-test-secret-0123456789abcdefghijklmnop"
PNG = b"\x89PNG\r\n\x1a\n" + b"pixels" * 40
JPEG = b"\xff\xd8\xff\xe0" + b"jpeg-bytes" * 50
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "server", "date"}


class PresignGate:
    """WSGI: refuse a presigned request whose signature or expiry is wrong, as S3 does; pass on the rest."""

    def __init__(self, upstream: str, secrets: dict[str, str]) -> None:
        self._upstream = httpx2.Client(base_url=upstream, timeout=10)
        self._secrets = secrets

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        raw_uri = environ["REQUEST_URI"]
        path, _, query = raw_uri.partition("?")
        params = parse_qsl(query, keep_blank_values=True)
        if any(name == "X-Amz-Signature" for name, _ in params):
            refusal = self._refusal(environ["REQUEST_METHOD"], environ["HTTP_HOST"], path, params)
            if refusal is not None:
                start_response("403 Forbidden", [("Content-Type", "application/xml")])
                return [f"<Error><Code>{refusal}</Code></Error>".encode()]
        headers = {k[5:].replace("_", "-"): v for k, v in environ.items() if k.startswith("HTTP_")}
        if environ.get("CONTENT_TYPE"):
            headers["CONTENT-TYPE"] = environ["CONTENT_TYPE"]
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        headers = {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}
        answer = self._upstream.request(environ["REQUEST_METHOD"], raw_uri, headers=headers, content=body)
        passed = [(k, v) for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP | {"content-encoding"}]
        start_response(f"{answer.status_code} {answer.reason_phrase}", passed)
        return [answer.content]

    def _refusal(self, method: str, host: str, path: str, params: list[tuple[str, str]]) -> str | None:
        query = dict(params)
        if query.get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256":
            return "AuthorizationQueryParametersError"
        key_id, day, region, service, terminator = query["X-Amz-Credential"].split("/")
        if key_id not in self._secrets:
            return "InvalidAccessKeyId"
        signed_at = datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        if datetime.now(UTC) > signed_at + timedelta(seconds=int(query["X-Amz-Expires"])):
            return "AccessDenied"  # "Request has expired"
        encoded = sorted((quote(k, safe="-_.~"), quote(v, safe="-_.~")) for k, v in params if k != "X-Amz-Signature")
        signed_headers = query["X-Amz-SignedHeaders"]
        values = {"host": host}
        canonical = "\n".join(
            [
                method,
                path,
                "&".join(f"{k}={v}" for k, v in encoded),
                "".join(f"{name}:{values[name]}\n" for name in signed_headers.split(";")),
                signed_headers,
                "UNSIGNED-PAYLOAD",
            ]
        )
        scope = f"{day}/{region}/{service}/{terminator}"
        to_sign = f"AWS4-HMAC-SHA256\n{query['X-Amz-Date']}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
        signing_key = f"AWS4{self._secrets[key_id]}".encode()
        for part in (day, region, service, terminator):
            signing_key = hmac.new(signing_key, part.encode(), hashlib.sha256).digest()
        expected = hmac.new(signing_key, to_sign.encode(), hashlib.sha256).hexdigest()
        return None if hmac.compare_digest(expected, query["X-Amz-Signature"]) else "SignatureDoesNotMatch"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """moto on a free loopback port, reached through the presign gate on another one."""
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    gate = make_server("127.0.0.1", 0, PresignGate(f"http://{host}:{port}", {KEY_ID: SECRET}), threaded=True)
    thread = threading.Thread(target=gate.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{gate.server_port}"
    finally:
        gate.shutdown()
        thread.join()
        moto.stop()


def s3_settings(endpoint: str, bucket: str | None, **extra: Any) -> Settings:
    return Settings(
        media_store="s3",
        s3_bucket=bucket,
        s3_endpoint_url=endpoint,
        s3_access_key_id=KEY_ID,
        s3_secret_access_key=SECRET,
        **extra,
    )


@pytest.fixture(scope="module")
def client(endpoint: str) -> S3Client:
    """One client for the module, built as the store builds its own (building one takes ~0.5 s)."""
    return s3_client(endpoint, "us-east-1", KEY_ID, SECRET)


@pytest.fixture
def bucket(client: Any) -> str:
    name = f"media-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return name


@pytest.fixture
def store(client: S3Client, bucket: str, endpoint: str) -> S3MediaStore:
    return S3MediaStore(client, bucket, url_ttl_s=3600, endpoint=endpoint)


def bucket_keys(client: Any, bucket: str) -> list[str]:
    return sorted(o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", []))


async def test_an_image_round_trips_and_lands_under_its_tenants_prefix(store, client, bucket):
    stored = await store.put(TenantId("acme"), PNG, "image/png")
    again = await store.put(TenantId("acme"), PNG, "image/png")

    assert stored == again
    assert KEY_PATTERN.fullmatch(stored.key)
    assert (stored.key.split("/", 1)[0], stored.key[-4:]) == ("acme", ".png")
    assert await store.get(stored.key) == (PNG, "image/png")
    assert bucket_keys(client, bucket) == [stored.key]


async def test_two_tenants_never_share_a_key_prefix(store, client, bucket):
    tenants = ["acme", "acme-2", "Acme", "../acme", "acme/x", "club"]
    keys = {t: (await store.put(TenantId(t), PNG, "image/png")).key for t in tenants}

    prefixes = {t: key.split("/", 1)[0] for t, key in keys.items()}
    assert len(set(prefixes.values())) == len(tenants)  # the same bytes, one object per tenant
    assert (prefixes["acme"], prefixes["club"]) == ("acme", "club")
    assert all(p.startswith("_") for t, p in prefixes.items() if t in ("Acme", "../acme", "acme/x"))
    assert all(prefixes[t] == tenant_prefix(t) for t in tenants)
    assert bucket_keys(client, bucket) == sorted(keys.values())
    for tenant, key in keys.items():
        assert await store.get(key) == (PNG, "image/png"), tenant


async def test_a_presigned_url_serves_the_bytes_over_http_until_it_expires(store, endpoint, bucket):
    stored = await store.put(TenantId("acme"), PNG, "image/png")
    url = store.signed_url(stored.key, "https://unused.example", ttl_s=2)
    query = dict(parse_qsl(url.split("?", 1)[1]))
    # X-Amz-Date is truncated to the second, so a 2 s link has at least 1 s left now.
    expires_at = datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC) + timedelta(seconds=2)

    async with httpx2.AsyncClient() as http:
        fresh = await http.get(url)
        await asyncio.sleep((expires_at - datetime.now(UTC)).total_seconds() + 0.05)
        stale = await http.get(url)

    assert (fresh.status_code, fresh.content, fresh.headers["content-type"]) == (200, PNG, "image/png")
    assert (url.split("?")[0], query["X-Amz-Expires"]) == (f"{endpoint}/{bucket}/{stored.key}", "2")
    assert (stale.status_code, b"AccessDenied" in stale.content) == (403, True)


async def test_a_changed_presigned_url_is_refused(store, endpoint, bucket):
    mine = await store.put(TenantId("acme"), PNG, "image/png")
    theirs = await store.put(TenantId("club"), b"their private photo", "image/jpeg")
    url = store.signed_url(mine.key, "")
    path, query = url.split("?", 1)

    async with httpx2.AsyncClient() as http:
        other_object = await http.get(path.replace(mine.key, theirs.key) + "?" + query)
        stretched = await http.get(url.replace("X-Amz-Expires=3600", "X-Amz-Expires=604800"))
        forged = await http.get(url[:-6] + "000000")
        unsigned = await http.get(f"{endpoint}/{bucket}/{mine.key}")  # a private bucket: moto itself refuses it
        genuine = await http.get(url)

    assert [r.status_code for r in (other_object, stretched, forged, unsigned)] == [403, 403, 403, 403]
    assert (genuine.status_code, genuine.content) == (200, PNG)


async def test_a_missing_object_is_not_found(store):
    stored = await store.put(TenantId("acme"), PNG, "image/png")

    with pytest.raises(NotFoundError):
        await store.get(stored.key.replace(".png", ".jpg"))
    with pytest.raises(NotFoundError):
        await store.get("acme/../club/" + stored.key.split("/", 1)[1])  # not a key: refused before any request


async def test_a_bucket_that_does_not_exist_is_a_clear_config_error(endpoint):
    store = build_media_store(s3_settings(endpoint, "no-such-media-bucket"))

    with pytest.raises(ConfigError, match=r"no-such-media-bucket.* does not exist"):
        await store.check()
    with pytest.raises(ConfigError, match="does not exist"):
        await store.put(TenantId("acme"), PNG, "image/png")


async def test_an_existing_bucket_passes_the_start_up_check(store):
    await store.check()


def test_s3_without_a_bucket_is_refused_at_start_up():
    with pytest.raises(ConfigError, match="needs s3_bucket"):
        build_media_store(Settings(media_store="s3"))


def test_s3_without_the_extra_names_the_install_command(monkeypatch, endpoint):
    monkeypatch.setitem(sys.modules, "boto3", None)  # what an install without the s3 extra sees

    with pytest.raises(ConfigError) as raised:
        build_media_store(s3_settings(endpoint, "media"))

    assert raised.value.message == MISSING_EXTRA == "media_store = 's3' needs the s3 extra: pip install 'frontdesk[s3]'"


def test_the_local_store_stays_the_default_and_needs_no_boto3(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "boto3", None)

    assert type(build_media_store(Settings(media_dir=tmp_path))).__name__ == "LocalMediaStore"


def test_half_a_credential_pair_or_an_overlong_link_lifetime_is_refused(endpoint):
    with pytest.raises(ConfigError, match="both"):
        build_media_store(Settings(media_store="s3", s3_bucket="media", s3_access_key_id=KEY_ID))
    with pytest.raises(ConfigError, match="media_url_ttl_s"):
        build_media_store(s3_settings(endpoint, "media", media_url_ttl_s=8 * 24 * 3600.0))


def test_credentials_never_show_in_repr_and_endpoint_userinfo_is_masked(endpoint):
    with_userinfo = endpoint.replace("http://", "http://minio-admin:hunter2-password@")
    store = build_media_store(s3_settings(with_userinfo, "media"))
    settings = s3_settings(with_userinfo, "media")

    assert [s for s in (SECRET, KEY_ID, "hunter2") if s in repr(store)] == []
    assert [s for s in (SECRET, KEY_ID) if s in repr(settings)] == []
    assert "***@127.0.0.1" in repr(store)
    assert masked_url("https://user:pw@minio.internal:9000/path?token=x") == "https://***@minio.internal:9000/path"
    assert masked_url("https://r2.example.com") == "https://r2.example.com"


async def test_an_inbound_photo_lands_in_the_tenants_prefix_and_the_agent_sees_it(
    db, tmp_path, endpoint, client, bucket
):
    seen: list[Any] = []

    async def vision(messages: Any, info: Any) -> ModelResponse:
        seen.append(messages[-1].parts[-1].content)
        return ModelResponse(parts=[ToolCallPart("reply", {"blocks": [{"type": "text", "text": "Nice design!"}]})])

    account, webhook_secret = "tg-inkwell-01", "s3cret-Token_value"
    async with live_channel(
        db,
        tmp_path,
        FakeTelegram(),
        channel="telegram",
        account_id=account,
        config={"bot_id": "7351862094"},
        secrets={"bot_token": TOKEN, "webhook_secret": webhook_secret},
        chat=PydanticAIClient(FunctionModel(vision), "function:vision", timeout_s=10),
        media_store="s3",
        s3_bucket=bucket,
        s3_endpoint_url=endpoint,
        s3_access_key_id=KEY_ID,
        s3_secret_access_key=SECRET,
    ) as live:
        photo_id = "AgACAgIAAxkBAAIHM2jo3xKvQ1pLQ2Ww6bF0m0a1c2d3AAJ4-jEbHk9JS4nV0o3Xq8yGAQADAgADeQADNgQ"
        live.platform.media[f"files/{photo_id}"] = (JPEG, "image/jpeg")
        await live.http.post(
            f"/webhooks/telegram/{account}",
            content=read_fixture("telegram", "message__photo_caption.json"),
            headers={"Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": webhook_secret},
        )
        await live.idle()
        (row,) = await live.messages()
        replies = [c.body for c in live.platform.sent("sendChatAction", "getFile") if c.method == "POST"]

    key = row.meta["media_key"]
    assert (row.status, key.split("/", 1)[0]) == ("ready", "demo")  # the demo tenant's prefix
    assert bucket_keys(client, bucket) == [key]
    assert client.get_object(Bucket=bucket, Key=key)["Body"].read() == JPEG
    assert not any((tmp_path / "media").rglob("*.jpg"))  # nothing went to the local directory
    (content,) = seen  # the agent read the object back from the bucket for the vision model
    assert (content[1].data, content[1].media_type) == (JPEG, "image/jpeg")
    assert replies == [{"chat_id": 6112093847, "text": "Nice design!"}]


async def test_the_agent_shows_the_model_only_its_own_tenants_images(db, store):
    seen: list[Any] = []

    async def vision(messages: Any, info: Any) -> ModelResponse:
        seen.append(messages[-1].parts[-1].content)
        return ModelResponse(parts=[ToolCallPart("reply", {"blocks": [{"type": "text", "text": "Got it"}]})])

    gateway = ModelGateway.with_clients({"chat": PydanticAIClient(FunctionModel(vision), "function:vision", 10)})
    runtime = Runtime.build(Settings(**FAST), gateway=gateway, db=db)
    accounts = await seed_demo(db, runtime.clock, runtime.channel_deps.media)
    ingested = await runtime.ingestor.ingest(message(accounts.webchat_id, "Here is my logo"))
    ours = await store.put(TenantId(accounts.tenant_id), JPEG, "image/jpeg")
    theirs = await store.put(TenantId("club"), PNG, "image/png")  # a row pointing elsewhere must not leak it
    now = runtime.clock.now()
    batch = (
        TurnMessage(1, "user", "image", "[image]", now, image_key=theirs.key),
        TurnMessage(2, "user", "image", "[image] Here is my logo", now, image_key=ours.key),
    )
    agent = Agent(gateway, runtime.clock, LoopLimits(), runtime.agent_packs, media=store)
    context = await ContextLoader(db).load(ingested.conversation_id, now)

    run = await agent.generate(Turn(accounts.tenant_id, "Demo", ingested.conversation_id, batch, ()), context)
    await runtime.close()

    assert run.result.outcome.value == "replied"
    (content,) = seen
    shown = [(part.data, part.media_type) for part in content if isinstance(part, BinaryContent)]
    assert shown == [(JPEG, "image/jpeg")]
