"""Model slots and providers. Code never names a vendor model; settings do.

Slot strings: ``openai:<model>``, ``anthropic:<model>``, ``google:<model>``,
``openai-compatible:<base_url>#<model>``, ``script:<file>``, ``local:<built-in name | path.gguf>``
(an embedded model on this machine's CPU, ``platform/models/local.py``). Provider modules are imported only
when a slot uses them (the three vendor SDKs cost ~2.4 s to import). Wire formats come from
pydantic-ai's direct request API; the loop, budgets and persistence are ours.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import httpx2
from pydantic_ai import ModelMessage, ModelResponse
from pydantic_ai.direct import model_request
from pydantic_ai.exceptions import ModelAPIError as PaiModelAPIError
from pydantic_ai.exceptions import (
    ModelHTTPError,
    ModelQuotaExceededError,
    ModelRequestRejectedError,
    UnexpectedModelBehavior,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings

from frontdesk.errors import ConfigError, ModelAPIError, transient_status
from frontdesk.platform.models.local import LocalModelClient, LocalModelOptions

SLOTS = ("chat", "utility", "embeddings", "transcription")
PROVIDERS = ("openai", "anthropic", "google", "openai-compatible", "script", "local")


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    model: str
    base_url: str | None = None

    def __str__(self) -> str:
        """The spec as shown in traces and logs: credentials in a base URL are masked."""
        if self.base_url:
            return f"{self.provider}:{_mask_userinfo(self.base_url)}#{self.model}"
        return f"{self.provider}:{self.model}"


def _mask_userinfo(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    userinfo, at, host = rest.partition("@")
    return f"{scheme}{sep}***@{host}" if at and "/" not in userinfo else url


def parse_model_spec(value: str) -> ModelSpec:
    provider, sep, rest = value.partition(":")
    if not sep or not rest:
        raise ConfigError(f"model {value!r} must look like 'provider:model' (providers: {', '.join(PROVIDERS)})")
    if provider not in PROVIDERS:
        raise ConfigError(f"unknown model provider {provider!r} in {value!r} (known: {', '.join(PROVIDERS)})")
    if provider == "openai-compatible":
        base_url, sep, model = rest.rpartition("#")
        if not sep or not base_url.startswith(("http://", "https://")) or not model:
            raise ConfigError(f"{value!r}: use openai-compatible:<http(s) base url>#<model>")
        return ModelSpec(provider, model, base_url)
    return ModelSpec(provider, rest)


class ModelClient(Protocol):
    """What the generation loop needs from a model: one request, one response."""

    @property
    def name(self) -> str: ...

    async def request(self, messages: Sequence[ModelMessage], params: ModelRequestParameters) -> ModelResponse: ...


class PydanticAIClient:
    """A pydantic-ai ``Model`` behind our protocol, with vendor errors mapped to ``ModelAPIError``."""

    def __init__(self, model: Model, name: str, timeout_s: float, *, sdk_retries: int = 1) -> None:
        """``sdk_retries``: how often the vendor SDK (OpenAI, Anthropic) repeats a failed request
        itself, with its own short backoff, for a blip. A longer outage is left to the turn's job
        (``turns/assembler.py``), which frees the worker while it waits."""
        self._model = model
        self._name = name
        self._settings = ModelSettings(timeout=timeout_s, max_retries=sdk_retries)

    @property
    def name(self) -> str:
        return self._name

    async def request(self, messages: Sequence[ModelMessage], params: ModelRequestParameters) -> ModelResponse:
        try:
            return await model_request(
                self._model, list(messages), model_settings=self._settings, model_request_parameters=params
            )
        except (PaiModelAPIError, UnexpectedModelBehavior) as exc:
            raise vendor_error(self._name, exc) from exc
        except (TimeoutError, httpx2.TransportError) as exc:  # timeouts included
            # An SDK that lets its transport's own errors through (or our timeout setting firing).
            raise ModelAPIError(f"{self._name}: {type(exc).__name__}: {exc}", transient=True) from exc


def vendor_error(name: str, exc: PaiModelAPIError | UnexpectedModelBehavior) -> ModelAPIError:
    """A pydantic-ai failure as ours: an HTTP status and ``Retry-After`` kept, the rest as text.
    No connection, a timeout, a rate limit or the vendor's own fault is transient; an answer
    pydantic-ai could not read, a refused request and a spent quota (a 429 too) are not."""
    if isinstance(exc, UnexpectedModelBehavior):
        return ModelAPIError(f"{name}: {exc}")
    final = isinstance(exc, ModelQuotaExceededError | ModelRequestRejectedError)
    if isinstance(exc, ModelHTTPError):
        return ModelAPIError(
            f"{name}: HTTP {exc.status_code}",
            status=exc.status_code,
            retry_after=exc.retry_after,
            transient=not final and transient_status(exc.status_code),
        )
    return ModelAPIError(f"{name}: {exc}", retry_after=exc.retry_after, transient=not final)


def build_model(spec: ModelSpec) -> Model:
    """Construct the pydantic-ai model for a spec, importing only that provider's modules."""
    try:
        if spec.provider == "script":
            from frontdesk.platform.models.script import load_script_model

            return load_script_model(spec.model)
        if spec.provider == "openai":
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider

            return OpenAIChatModel(spec.model, provider=OpenAIProvider())
        if spec.provider == "openai-compatible":
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider

            api_key = os.environ.get("FRONTDESK_OPENAI_COMPATIBLE_API_KEY", "none")
            return OpenAIChatModel(spec.model, provider=OpenAIProvider(base_url=spec.base_url, api_key=api_key))
        if spec.provider == "anthropic":
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider

            return AnthropicModel(spec.model, provider=AnthropicProvider())
        if spec.provider == "google":
            from pydantic_ai.models.google import GoogleModel
            from pydantic_ai.providers.google import GoogleProvider

            return GoogleModel(spec.model, provider=GoogleProvider())
    except ConfigError:
        raise
    except Exception as exc:  # a missing API key surfaces here as pydantic-ai's UserError
        raise ConfigError(f"cannot set up model {spec}: {exc}") from exc
    raise ConfigError(f"unknown provider {spec.provider!r}")


class ModelGateway:
    """Resolves a slot name to a client, building each one once, on first use."""

    def __init__(
        self, slots: Mapping[str, str | None], *, timeout_s: float = 60.0, local: LocalModelOptions | None = None
    ) -> None:
        unknown = set(slots) - set(SLOTS)
        if unknown:
            raise ConfigError(f"unknown model slots {sorted(unknown)} (slots: {', '.join(SLOTS)})")
        self._specs = {slot: parse_model_spec(v) for slot, v in slots.items() if v}
        self._timeout_s = timeout_s
        self._local = local or LocalModelOptions()
        self._clients: dict[str, ModelClient] = {}

    @classmethod
    def with_clients(cls, clients: Mapping[str, ModelClient]) -> ModelGateway:
        """A gateway whose slots are already-built clients (tests, benchmarks, embedding apps)."""
        gateway = cls({})
        gateway._clients.update(clients)
        return gateway

    def configured(self, slot: str) -> bool:
        return slot in self._clients or slot in self._specs

    def client(self, slot: str) -> ModelClient:
        if slot in self._clients:
            return self._clients[slot]
        spec = self._specs.get(slot)
        if spec is None:
            raise ConfigError(f"model slot {slot!r} is not configured (set FRONTDESK_MODEL_{slot.upper()})")
        client: ModelClient
        if spec.provider == "local":
            # One loaded model per file: the chat and utility slots may well name the same one.
            same = next(
                (c for c in self._clients.values() if isinstance(c, LocalModelClient) and c.model == spec.model), None
            )
            client = same or LocalModelClient(spec.model, self._local, timeout_s=self._timeout_s)
        else:
            client = PydanticAIClient(build_model(spec), str(spec), self._timeout_s)
        self._clients[slot] = client
        return client
