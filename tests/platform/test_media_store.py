"""The media store: content-addressed files, reachable from outside only by a signed, unexpired link."""

from __future__ import annotations

import time

import pytest

from frontdesk.errors import NotFoundError
from frontdesk.platform.media import KEY_PATTERN, LocalMediaStore

PNG = b"\x89PNG\r\n\x1a\n" + b"pixels" * 10


async def test_the_same_bytes_are_stored_once_under_a_content_key(tmp_path):
    store = LocalMediaStore(tmp_path)
    first = await store.put(PNG, "image/png")
    again = await store.put(PNG, "image/png")

    assert first == again
    assert KEY_PATTERN.fullmatch(first.key)
    assert first.key.endswith(".png")
    assert await store.get(first.key) == (PNG, "image/png")
    assert len(list(tmp_path.rglob("*.png"))) == 1


async def test_a_signed_link_verifies_until_it_expires_and_only_for_its_key(tmp_path):
    store = LocalMediaStore(tmp_path)
    stored = await store.put(PNG, "image/png")
    path = store.signed_path(stored.key, ttl_s=60)
    query = dict(p.split("=", 1) for p in path.split("?", 1)[1].split("&"))
    expires, signature = int(query["exp"]), query["sig"]

    assert path.startswith(f"/media/m/{stored.key}?")
    assert store.verify(stored.key, expires, signature)
    assert not store.verify(stored.key, expires + 1, signature)  # a stretched expiry
    other = await store.put(b"other", "image/png")
    assert not store.verify(other.key, expires, signature)  # another file
    assert not store.verify(stored.key, int(time.time()) - 1, store._sign(stored.key, int(time.time()) - 1))


async def test_the_signing_key_survives_a_restart_and_is_private(tmp_path):
    first = LocalMediaStore(tmp_path)
    stored = await first.put(PNG, "image/png")
    path = first.signed_path(stored.key)
    query = dict(p.split("=", 1) for p in path.split("?", 1)[1].split("&"))

    assert LocalMediaStore(tmp_path).verify(stored.key, int(query["exp"]), query["sig"])
    assert (tmp_path / ".signing-key").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("key", ["../etc/passwd", "ab/../../x.png", "zz/" + "0" * 40 + ".png"])
async def test_unknown_or_crafted_keys_are_not_found(tmp_path, key):
    with pytest.raises(NotFoundError):
        await LocalMediaStore(tmp_path).get(key)


async def test_the_media_route_serves_a_signed_link_and_refuses_a_forged_one(db, tmp_path):
    import httpx2

    from frontdesk.app import create_app
    from harness import make_runtime

    runtime, _ = await make_runtime(db, {"name": "x", "default": [{"reply": "hi"}]}, media_dir=tmp_path)
    stored = await runtime.channel_deps.media.put(PNG, "image/png")
    path = runtime.channel_deps.media.signed_path(stored.key)
    transport = httpx2.ASGITransport(app=create_app(runtime, run_workers=False))
    async with httpx2.AsyncClient(transport=transport, base_url="http://t") as http:
        good = await http.get(path)
        forged = await http.get(path[:-3] + "AAA")
        unsigned = await http.get(f"/media/m/{stored.key}")
    await runtime.close()

    assert (good.status_code, good.content, good.headers["content-type"]) == (200, PNG, "image/png")
    assert (forged.status_code, unsigned.status_code) == (401, 401)
