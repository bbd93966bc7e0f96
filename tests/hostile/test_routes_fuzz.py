"""Every other route against hostile input: the media links, the ops endpoints, and a sweep of
every route of the app with any method, path values and body.

The media route serves customer images to whoever holds a signed, unexpired link, so its key,
expiry and signature are fuzzed around the real thing: valid keys, a stored key, real and forged
signatures, any text. The sweep takes every route the app has (console, channels, ops), fills
its path parameters with hostile values, and sends it with any method, so an unknown path, a
wrong method or a refused value all answer in the error shape and never with a 5xx.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from fastapi.routing import APIRoute
from hostile_harness import HostileApp, hostile_fixture
from hostile_kit import fuzz
from hypothesis import given
from hypothesis import strategies as st
from starlette.routing import BaseRoute

from frontdesk.platform.ids import TenantId
from frontdesk.platform.media import KEY_PATTERN, LEGACY_KEY_PATTERN, LocalMediaStore

PHOTO = b"\x89PNG\r\n\x1a\n" + b"hostile" * 20


hostile = hostile_fixture("hostile-routes")


def test_a_media_link_serves_only_what_its_signature_covers(hostile: HostileApp) -> None:
    store = hostile.runtime.channel_deps.media
    assert isinstance(store, LocalMediaStore)
    stored = hostile.run(store.put(TenantId("demo"), PHOTO, "image/png")).key
    forger = LocalMediaStore(Path("/nonexistent"), signing_key=b"not our key")
    statuses: Counter[int] = Counter()

    @fuzz(500)
    @given(
        key=st.one_of(
            st.just(stored),
            st.from_regex(KEY_PATTERN, fullmatch=True),
            st.from_regex(LEGACY_KEY_PATTERN, fullmatch=True),
            st.sampled_from(["../.signing-key", ".signing-key", "demo/../../etc/passwd", stored.upper()]),
            st.text(max_size=60),
        ),
        link=st.sampled_from(["genuine", "genuine", "expired", "forged", "tampered", "fuzzed"]),
        expires=st.integers() | st.text(max_size=12),
        signature=st.text(max_size=30),
    )
    def fetch(key: str, link: str, expires: int | str, signature: str) -> None:
        # A link as the store signs it (now valid, or expired), as another key signs it, with one
        # character of its signature changed, or with a fuzzed expiry and signature.
        params: dict[str, int | str] = {"exp": expires, "sig": signature}
        if link != "fuzzed":
            signer = forger if link == "forged" else store
            query = signer.signed_path(key, ttl_s=-60 if link == "expired" else 300).rsplit("?", 1)[1]
            params = dict(p.split("=", 1) for p in query.split("&"))
            if link == "tampered":
                params["sig"] = str(params["sig"])[:-1] + ("A" if not str(params["sig"]).endswith("A") else "B")
        response = hostile.exchange("GET /media/m/{key:path}", "GET", "/media/m/" + quote(key, safe="/"), params=params)
        statuses[response.status_code] += 1
        if link == "genuine" and key == stored:
            assert (response.status_code, response.content) == (200, PHOTO)
        elif link == "genuine" and KEY_PATTERN.fullmatch(key):
            assert response.status_code == 404, response.text  # a genuine link to a file we do not have
        else:
            assert response.status_code in (401, 404, 422), response.text

    fetch()
    assert all(statuses[s] > 0 for s in (200, 401, 404, 422)), statuses


def test_every_route_answers_any_method_and_path_values_without_a_server_error(hostile: HostileApp) -> None:
    routes: list[APIRoute | None] = [*_api_routes(hostile.app.routes), None]  # None: a path we do not serve
    assert len(routes) > 40, "the channel and console routers were not found"

    @fuzz(1_500)
    @given(
        route=st.sampled_from(routes),
        # The route's own method two times in three, else any (a 405, or another route's).
        own=st.sampled_from([True, True, False]),
        method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]),
        value=st.sampled_from(["demo-webchat", "hostile-line", "1", "0", "-1", "x" * 41, "%00", "..", ""])
        | st.text(max_size=30),
        body=st.none() | st.binary(max_size=100),
        query=st.dictionaries(st.text(max_size=8), st.text(max_size=12), max_size=3),
    )
    def sweep(
        route: APIRoute | None, own: bool, method: str, value: str, body: bytes | None, query: dict[str, str]
    ) -> None:
        if own and route is not None:
            method = sorted(route.methods)[0]
        template = route.path if route is not None else "/{anything}/{else}"
        path = template
        for name in route.param_convertors if route is not None else ("anything", "else"):
            path = path.replace("{" + name + "}", quote(value, safe="") or "x").replace("{" + name + ":path}", "x")
        if path.endswith("/stream") and method == "GET":
            path = path.replace("demo-webchat", "no-such-webchat")  # a live stream never ends in-process
        label = (
            "no such route" if route is None else f"{method} {template}" if method in route.methods else "wrong method"
        )
        hostile.exchange(label, method, path, content=body, params=query)

    sweep()


def _api_routes(routes: Sequence[BaseRoute]) -> list[APIRoute]:
    found: list[APIRoute] = []
    for route in routes:
        if isinstance(route, APIRoute):
            found.append(route)
        inner = getattr(route, "original_router", None)  # FastAPI keeps an included router whole
        if inner is not None:
            found.extend(_api_routes(inner.routes))
    return found
