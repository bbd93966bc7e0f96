"""The ``embeddings`` slot: text in, vectors out (catalog search, ``capabilities/search``).

Slot strings, parsed by the gateway's ``parse_model_spec``:

- ``openai:<model>``: OpenAI's ``/v1/embeddings`` (``OPENAI_API_KEY``), e.g. ``openai:text-embedding-3-small``.
- ``openai-compatible:<base_url>#<model>``: any server speaking that endpoint (Ollama, vLLM,
  llama.cpp server, LM Studio...); the key comes from ``FRONTDESK_OPENAI_COMPATIBLE_API_KEY``.
- ``script:hash``: an offline, deterministic embedder for demos, benchmarks and tests. It hashes
  folded words and their character trigrams into 256 dimensions, so it knows spelling, not
  meaning: it forgives typos and word forms ("sticky labels" ~ "sticker label"), never synonyms.

The vendor wire format comes from pydantic-ai's embeddings API (``pydantic_ai.embeddings``), the
same library the chat slots use; vendor errors become our ``ModelAPIError``.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import unicodedata
from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic_ai.embeddings import EmbeddingModel
from pydantic_ai.exceptions import ModelAPIError as PaiModelAPIError

from frontdesk.errors import ConfigError, ModelAPIError
from frontdesk.platform.models.gateway import ModelSpec, parse_model_spec, vendor_error

EmbedKind = Literal["query", "document"]
HASH_MODEL = "hash"
HASH_DIMENSIONS = 256


class Embedder(Protocol):
    """What search needs from the embeddings slot. ``name`` is stored beside every vector, so a
    change of model re-embeds the documents instead of comparing vectors from two spaces."""

    @property
    def name(self) -> str: ...

    async def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]: ...


class PydanticAIEmbedder:
    """A pydantic-ai ``EmbeddingModel`` behind our protocol, vendor errors mapped to ``ModelAPIError``."""

    def __init__(self, model: EmbeddingModel, name: str) -> None:
        self._model = model
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    async def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        if not texts:
            return []
        try:
            result = await self._model.embed(list(texts), input_type=kind)
        except PaiModelAPIError as exc:  # ModelHTTPError included
            raise vendor_error(self._name, exc) from exc
        vectors = [[float(x) for x in vector] for vector in result.embeddings]
        if len(vectors) != len(texts):
            raise ModelAPIError(f"{self._name}: {len(vectors)} vectors for {len(texts)} texts")
        return vectors


class HashEmbedder:
    """``script:hash``: feature hashing of folded words and character trigrams, L2-normalised.
    Deterministic across processes and machines (blake2b, not Python's salted ``hash``)."""

    name = f"script:{HASH_MODEL}"

    def __init__(self, dimensions: int = HASH_DIMENSIONS) -> None:
        self._dimensions = dimensions

    async def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        return [self.vector(text) for text in texts]

    def vector(self, text: str) -> list[float]:
        vector = [0.0] * self._dimensions
        for raw in _WORD.findall(_fold(text)):
            word = raw[:-1] if len(raw) > 3 and raw.endswith("s") else raw  # "cards" = "card"
            padded = f"<{word}>"
            trigrams = [padded[i : i + 3] for i in range(len(padded) - 2)]
            # The word and its trigrams weigh the same in total: a typo keeps most trigrams.
            features = [(f"w:{word}", 1.0), *((f"t:{t}", 1.0 / math.sqrt(len(trigrams))) for t in trigrams)]
            for feature, weight in features:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                index = int.from_bytes(digest[:4], "big") % self._dimensions
                vector[index] += weight if digest[4] & 1 else -weight
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector


_WORD = re.compile(r"[a-z0-9]+")


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.lower().replace("đ", "d"))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def build_embedder(spec_string: str, *, timeout_s: float = 30.0) -> Embedder:
    """The embedder for an ``embeddings`` slot string; vendor SDKs are imported only when used."""
    spec = parse_model_spec(spec_string)
    if spec.provider == "script":
        if spec.model != HASH_MODEL:
            raise ConfigError(f"{spec_string!r}: the only offline embedder is 'script:{HASH_MODEL}'")
        return HashEmbedder()
    if spec.provider in ("openai", "openai-compatible"):
        return PydanticAIEmbedder(_openai_model(spec, timeout_s), str(spec))
    raise ConfigError(
        f"{spec_string!r}: embeddings come from openai:<model>, openai-compatible:<url>#<model> "
        f"or script:{HASH_MODEL}, not from {spec.provider!r}"
    )


def _openai_model(spec: ModelSpec, timeout_s: float) -> EmbeddingModel:
    from openai import AsyncOpenAI, OpenAIError
    from pydantic_ai.embeddings.openai import OpenAIEmbeddingModel
    from pydantic_ai.providers.openai import OpenAIProvider

    try:
        if spec.provider == "openai-compatible":
            api_key = os.environ.get("FRONTDESK_OPENAI_COMPATIBLE_API_KEY", "none")
            client = AsyncOpenAI(base_url=spec.base_url, api_key=api_key, timeout=timeout_s, max_retries=1)
        else:
            client = AsyncOpenAI(timeout=timeout_s, max_retries=1)  # OPENAI_API_KEY, OPENAI_BASE_URL
    except OpenAIError as exc:  # no API key: fail at start-up, naming the slot, never the key
        raise ConfigError(f"cannot set up embeddings model {spec}: {exc}") from exc
    return OpenAIEmbeddingModel(spec.model, provider=OpenAIProvider(openai_client=client))
