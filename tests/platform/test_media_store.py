"""The media store: content-addressed files, reachable from outside only by a signed, unexpired link."""

from __future__ import annotations

import time

import pytest

from frontdesk.errors import NotFoundError
from frontdesk.platform.ids import TenantId
from frontdesk.platform.media import KEY_PATTERN, LocalMediaStore

PNG = b"\x89PNG\r\n\x1a\n" + b"pixels" * 10
ACME = TenantId("acme")


async def test_the_same_bytes_are_stored_once_per_tenant_under_a_content_key(tmp_path):
    store = LocalMediaStore(tmp_path)
    first = await store.put(ACME, PNG, "image/png")
    again = await store.put(ACME, PNG, "image/png")
    other_tenant = await store.put(TenantId("Other Shop"), PNG, "image/png")

    assert first == again
    assert KEY_PATTERN.fullmatch(first.key)
    assert (first.key.split("/", 1)[0], first.key[-4:]) == ("acme", ".png")
    assert await store.get(first.key) == (PNG, "image/png")
    assert KEY_PATTERN.fullmatch(other_tenant.key)
    assert other_tenant.key.split("/", 1)[0].startswith("_")  # not a safe path segment as it is: hashed
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.png")) == sorted(
        [first.key, other_tenant.key]
    )


async def test_a_signed_url_is_absolute_on_the_public_base_url(tmp_path):
    store = LocalMediaStore(tmp_path)
    stored = await store.put(ACME, PNG, "image/png")

    assert store.signed_url(stored.key, "https://shop.example/").startswith(
        f"https://shop.example/media/m/{stored.key}?exp="
    )


async def test_a_signed_link_verifies_until_it_expires_and_only_for_its_key(tmp_path):
    store = LocalMediaStore(tmp_path)
    stored = await store.put(ACME, PNG, "image/png")
    path = store.signed_path(stored.key, ttl_s=60)
    query = dict(p.split("=", 1) for p in path.split("?", 1)[1].split("&"))
    expires, signature = int(query["exp"]), query["sig"]

    assert path.startswith(f"/media/m/{stored.key}?")
    assert store.verify(stored.key, expires, signature)
    assert not store.verify(stored.key, expires + 1, signature)  # a stretched expiry
    other = await store.put(ACME, b"other", "image/png")
    assert not store.verify(other.key, expires, signature)  # another file
    assert not store.verify(stored.key, int(time.time()) - 1, store._sign(stored.key, int(time.time()) - 1))


async def test_the_signing_key_survives_a_restart_and_is_private(tmp_path):
    first = LocalMediaStore(tmp_path)
    stored = await first.put(ACME, PNG, "image/png")
    path = first.signed_path(stored.key)
    query = dict(p.split("=", 1) for p in path.split("?", 1)[1].split("&"))

    assert LocalMediaStore(tmp_path).verify(stored.key, int(query["exp"]), query["sig"])
    assert (tmp_path / ".signing-key").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    "key",
    [
        "../etc/passwd",
        "acme/ab/../../x.png",
        "acme/zz/" + "0" * 40 + ".png",
        "ab/" + "0" * 40 + ".png",  # no tenant prefix
        "../ab/" + "0" * 40 + ".png",
        "Acme/ab/" + "0" * 40 + ".png",  # a raw tenant id that is not a safe segment
    ],
)
async def test_unknown_or_crafted_keys_are_not_found(tmp_path, key):
    with pytest.raises(NotFoundError):
        await LocalMediaStore(tmp_path).get(key)


async def test_the_media_route_serves_a_signed_link_and_refuses_a_forged_one(db, tmp_path):
    import httpx2

    from frontdesk.app import create_app
    from harness import make_runtime

    runtime, _ = await make_runtime(db, {"name": "x", "default": [{"reply": "hi"}]}, media_dir=tmp_path)
    stored = await runtime.channel_deps.media.put(ACME, PNG, "image/png")
    url = runtime.channel_deps.media.signed_url(stored.key, "http://t")
    other = await runtime.channel_deps.media.put(TenantId("club"), b"theirs", "image/png")
    transport = httpx2.ASGITransport(app=create_app(runtime, run_workers=False))
    async with httpx2.AsyncClient(transport=transport, base_url="http://t") as http:
        good = await http.get(url)
        forged = await http.get(url[:-3] + "AAA")
        unsigned = await http.get(f"/media/m/{stored.key}")
        other_tenant = await http.get(url.replace(stored.key, other.key))
    await runtime.close()

    assert (good.status_code, good.content, good.headers["content-type"]) == (200, PNG, "image/png")
    assert (forged.status_code, unsigned.status_code, other_tenant.status_code) == (401, 401, 401)


async def test_media_stored_before_keys_named_the_tenant_are_still_read_and_served(tmp_path):
    store = LocalMediaStore(tmp_path)
    legacy = "ab/" + "c" * 40 + ".png"  # the key form of earlier releases: no tenant segment
    (tmp_path / "ab").mkdir()
    (tmp_path / legacy).write_bytes(PNG)

    url = store.signed_url(legacy, "http://t")
    path, _, query = url.removeprefix("http://t/media/m/").partition("?")
    params = dict(pair.split("=") for pair in query.split("&"))

    assert await store.get(legacy) == (PNG, "image/png")
    assert path == legacy
    assert store.verify(legacy, int(params["exp"]), params["sig"])
