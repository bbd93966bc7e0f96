"""A loopback OpenAI-compatible embeddings server for the search tests, and the embeddings slot's
own tests against it.

The fake is a tiny "model" that knows a few synonyms: each concept below is one dimension, so
"we are getting married" and "wedding invitation" land close together although they share no
word. Any other word goes, lightly weighted, to one of 64 hashed dimensions. It answers in the
real ``/v1/embeddings`` format (``float`` or ``base64`` encoding, as the SDK asks).
"""

from __future__ import annotations

import base64
import json
import math
import re
import struct
import threading
import unicodedata
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic_ai.models import override_allow_model_requests

from frontdesk.errors import ConfigError, ModelAPIError
from frontdesk.platform.models.embeddings import HashEmbedder, build_embedder

CONCEPTS: dict[str, set[str]] = {
    "calling-card": {"busines", "card", "visit", "presentacion", "hand", "phone", "number", "client", "meet"},
    "wedding": {"wedding", "invitation", "married", "marry", "guest", "bride", "rsvp", "boda", "cuoi"},
    "trade-show": {
        "retractable",
        "roll",
        "stand",
        "banner",
        "trade",
        "show",
        "booth",
        "exhibition",
        "fair",
        "portable",
    },
    "outdoor": {"outdoor", "vinyl", "banner", "weather", "grommet", "hem", "fence", "rain", "lona"},
    "apparel": {"shirt", "tshirt", "tee", "uniform", "staff", "wear", "camiseta", "thun"},
    "packaging": {"box", "packaging", "carton", "mailer", "ship", "shipping", "parcel", "product"},
}
EXTRA_DIMENSIONS = 64
OTHER_WORD_WEIGHT = 0.3
_WORD = re.compile(r"[a-z0-9]+")


def fake_vector(text: str) -> list[float]:
    folded = "".join(c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c))
    vector = [0.0] * (len(CONCEPTS) + EXTRA_DIMENSIONS)
    for raw in _WORD.findall(folded):
        word = raw[:-1] if len(raw) > 3 and raw.endswith("s") else raw
        dims = [i for i, words in enumerate(CONCEPTS.values()) if word in words]
        for i in dims:
            vector[i] += 1.0
        if not dims:
            vector[len(CONCEPTS) + zlib.crc32(word.encode()) % EXTRA_DIMENSIONS] += OTHER_WORD_WEIGHT
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


@dataclass
class FakeEmbeddings:
    """The server's address and every request it answered (the inputs of each call)."""

    base_url: str
    model: str = "fake-synonyms-1"
    calls: list[list[str]] = field(default_factory=list)
    fail_with: int | None = None  # answer every request with this HTTP status

    @property
    def spec(self) -> str:
        return f"openai-compatible:{self.base_url}#{self.model}"

    @property
    def texts_embedded(self) -> int:
        return sum(len(call) for call in self.calls)


def _handler(state: FakeEmbeddings) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path != "/v1/embeddings":
                self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                return
            if state.fail_with:
                self._send(state.fail_with, {"error": {"message": "overloaded", "type": "server_error"}})
                return
            inputs = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
            state.calls.append(inputs)
            data = []
            for index, text in enumerate(inputs):
                vector = fake_vector(text)
                if body.get("encoding_format") == "base64":
                    encoded: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
                else:
                    encoded = vector
                data.append({"object": "embedding", "index": index, "embedding": encoded})
            tokens = sum(len(t.split()) for t in inputs)
            self._send(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                },
            )

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler


@contextmanager
def serve_fake_embeddings() -> Iterator[FakeEmbeddings]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(FakeEmbeddings("")))
    state = FakeEmbeddings(f"http://127.0.0.1:{server.server_address[1]}/v1")
    server.RequestHandlerClass = _handler(state)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        # pydantic-ai refuses every model request in tests (conftest); this one stays on loopback.
        with override_allow_model_requests(True):
            yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def fake_embeddings() -> Iterator[FakeEmbeddings]:
    with serve_fake_embeddings() as state:
        yield state


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    )


# -- the embeddings slot ---------------------------------------------------------------------------


async def test_openai_compatible_embedder_returns_one_vector_per_text_in_order(fake_embeddings):
    embedder = build_embedder(fake_embeddings.spec)
    texts = ["We are getting married", "Wedding invitation suites", "Vinyl banners for outdoors"]

    vectors = await embedder.embed(texts, "document")

    assert fake_embeddings.calls == [texts]  # one request for the batch
    assert [pytest.approx(v, abs=1e-6) for v in vectors] == [fake_vector(t) for t in texts]
    assert cosine(vectors[0], vectors[1]) > 0.5 > cosine(vectors[0], vectors[2])
    assert embedder.name == fake_embeddings.spec


async def test_a_failing_embeddings_server_is_a_model_api_error_with_its_status(fake_embeddings):
    fake_embeddings.fail_with = 503
    embedder = build_embedder(fake_embeddings.spec)

    with pytest.raises(ModelAPIError) as caught:
        await embedder.embed(["hello"], "query")

    assert caught.value.status == 503


async def test_real_providers_stay_refused_in_tests(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # discard port, were it reached
    embedder = build_embedder("openai:text-embedding-3-small")

    # pydantic-ai's guard refuses before any connection (a reached port would be a ModelAPIError).
    with pytest.raises(RuntimeError, match="ALLOW_MODEL_REQUESTS"):
        await embedder.embed(["hello"], "query")


async def test_hash_embedder_is_deterministic_and_knows_spelling_not_meaning():
    embedder = build_embedder("script:hash")
    assert isinstance(embedder, HashEmbedder)

    first, again, typo, synonym = await embedder.embed(
        ["business cards", "business cards", "bussiness card", "calling cards"], "query"
    )

    assert first == again == (await HashEmbedder().embed(["business cards"], "document"))[0]
    assert (len(first), round(sum(x * x for x in first), 6)) == (256, 1.0)
    assert cosine(first, typo) > 0.5
    assert cosine(first, typo) > cosine(first, synonym)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("anthropic:claude-haiku-4-5", "not from 'anthropic'"),
        ("script:demo", "only offline embedder"),
        ("nonsense", "provider:model"),
    ],
)
def test_unusable_embeddings_slots_are_config_errors(spec, message):
    with pytest.raises(ConfigError, match=message):
        build_embedder(spec)


def test_openai_embeddings_without_an_api_key_fail_at_start_naming_the_slot(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(ConfigError, match="openai:text-embedding-3-small"):
        build_embedder("openai:text-embedding-3-small")
