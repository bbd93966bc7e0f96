"""The model gateway: slot strings are parsed or refused with a useful message, vendor SDKs load
only when used, and in tests a real provider can be configured but never reached."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic_ai import ModelRequest, ToolCallPart
from pydantic_ai.models import ModelRequestParameters

from frontdesk.errors import ConfigError, ModelAPIError
from frontdesk.platform.models.gateway import ModelGateway, ModelSpec, PydanticAIClient, build_model, parse_model_spec

HELLO = [ModelRequest.user_text_prompt("hello")]


@pytest.mark.parametrize(
    ("value", "spec"),
    [
        ("openai:gpt-4o-mini", ModelSpec("openai", "gpt-4o-mini")),
        ("anthropic:claude-haiku-4-5", ModelSpec("anthropic", "claude-haiku-4-5")),
        ("google:gemini-2.5-flash", ModelSpec("google", "gemini-2.5-flash")),
        (
            "openai-compatible:http://127.0.0.1:11434/v1#llama3.2",
            ModelSpec("openai-compatible", "llama3.2", "http://127.0.0.1:11434/v1"),
        ),
        (
            "openai-compatible:https://llm.example.com/v1#org/model:q4",
            ModelSpec("openai-compatible", "org/model:q4", "https://llm.example.com/v1"),
        ),
        ("script:file.json", ModelSpec("script", "file.json")),
        ("script:demo", ModelSpec("script", "demo")),
    ],
)
def test_valid_model_strings_are_parsed_and_print_back_the_same(value, spec):
    assert parse_model_spec(value) == spec
    assert str(parse_model_spec(value)) == value


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ("gpt-4o", "provider:model"),
        ("foo:bar", "unknown model provider 'foo'"),
        ("openai:", "provider:model"),
        ("", "provider:model"),
        ("openai-compatible:nourl#m", "openai-compatible:<http(s) base url>#<model>"),
        ("openai-compatible:http://127.0.0.1:11434/v1", "openai-compatible:<http(s) base url>#<model>"),
        ("openai-compatible:http://127.0.0.1:11434/v1#", "openai-compatible:<http(s) base url>#<model>"),
    ],
)
def test_malformed_model_strings_are_refused_with_a_hint(value, hint):
    with pytest.raises(ConfigError) as caught:
        parse_model_spec(value)

    assert hint in caught.value.message
    assert repr(value) in caught.value.message


def test_unknown_provider_message_lists_the_known_ones():
    with pytest.raises(ConfigError) as caught:
        parse_model_spec("foo:bar")

    for provider in ("openai", "anthropic", "google", "openai-compatible", "script"):
        assert provider in caught.value.message


def test_gateway_refuses_a_bad_model_string_when_built():
    with pytest.raises(ConfigError, match="gpt-4o"):
        ModelGateway({"chat": "gpt-4o"})


def test_unconfigured_slot_names_the_setting_to_set():
    gateway = ModelGateway({"chat": None})

    assert not gateway.configured("chat")
    with pytest.raises(ConfigError, match="FRONTDESK_MODEL_CHAT"):
        gateway.client("chat")
    with pytest.raises(ConfigError, match="FRONTDESK_MODEL_UTILITY"):
        gateway.client("utility")


def test_unknown_slot_names_are_refused():
    with pytest.raises(ConfigError) as caught:
        ModelGateway({"chat": "script:demo", "summariser": "script:demo"})

    assert "summariser" in caught.value.message
    assert "chat, utility, embeddings" in caught.value.message


async def test_built_in_demo_script_answers_through_the_gateway():
    gateway = ModelGateway({"chat": "script:demo"})

    client = gateway.client("chat")
    response = await client.request(HELLO, ModelRequestParameters())

    assert gateway.configured("chat")
    assert gateway.client("chat") is client  # built once
    assert client.name == "script:demo"
    (call,) = response.parts
    assert isinstance(call, ToolCallPart)
    assert call.tool_name == "reply"
    assert call.args_as_dict()["blocks"][0]["text"].startswith("Hello! I'm frontdesk's offline demo model")


def test_missing_script_file_is_a_config_error(tmp_path: Path):
    gateway = ModelGateway({"chat": f"script:{tmp_path / 'missing.json'}"})

    with pytest.raises(ConfigError):
        gateway.client("chat")


# -- real providers are configured but never reached in tests -------------------------------------


@pytest.fixture
def trap() -> Iterator[tuple[str, socket.socket]]:
    """A local port that records any connection, standing in for the vendor's API."""
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    url = f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    yield url, server
    server.close()


def assert_untouched(server: socket.socket) -> None:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return  # nobody connected
    conn.close()
    pytest.fail("a model request reached the network")


# pydantic-ai's guard (ALLOW_MODEL_REQUESTS = False in conftest) raises RuntimeError; were it ever
# mapped by our client, it would surface as our ModelAPIError. Either way: refused, nothing sent.
REFUSED = (RuntimeError, ModelAPIError)


def assert_refused(exc: BaseException) -> None:
    assert isinstance(exc, ModelAPIError) or "ALLOW_MODEL_REQUESTS" in str(exc), repr(exc)


async def test_configured_openai_model_is_refused_before_any_network_request(monkeypatch, trap):
    url, server = trap
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", url)  # were a request made, it would land on the trap
    assert str(build_model(parse_model_spec("openai:gpt-4o-mini")).base_url).startswith(url)
    client = ModelGateway({"chat": "openai:gpt-4o-mini"}).client("chat")

    with pytest.raises(REFUSED) as caught:
        await client.request(HELLO, ModelRequestParameters())

    assert_refused(caught.value)
    assert_untouched(server)


async def test_openai_compatible_model_builds_without_any_api_key_and_is_refused_in_tests(monkeypatch, trap):
    url, server = trap
    for name in ("OPENAI_API_KEY", "FRONTDESK_OPENAI_COMPATIBLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    gateway = ModelGateway({"chat": f"openai-compatible:{url}#llama3.2"})

    client = gateway.client("chat")
    assert client.name == f"openai-compatible:{url}#llama3.2"
    with pytest.raises(REFUSED) as caught:
        await client.request(HELLO, ModelRequestParameters())

    assert_refused(caught.value)
    assert_untouched(server)


@pytest.mark.parametrize(
    ("spec", "key"),
    [
        ("anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY"),
        ("google:gemini-2.5-flash", "GOOGLE_API_KEY"),
    ],
)
async def test_other_configured_vendors_are_refused_too(monkeypatch, spec, key):
    monkeypatch.setenv(key, "test-key")
    client = ModelGateway({"chat": spec}).client("chat")

    with pytest.raises(REFUSED) as caught:
        await client.request(HELLO, ModelRequestParameters())

    assert_refused(caught.value)


def test_vendor_model_without_its_api_key_is_a_config_error_naming_the_model(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    gateway = ModelGateway({"chat": "openai:gpt-4o-mini"})  # parsing needs no key

    with pytest.raises(ConfigError, match="openai:gpt-4o-mini"):
        gateway.client("chat")


# -- start-up cost ---------------------------------------------------------------------------------


def test_vendor_sdks_are_not_imported_until_a_slot_uses_them():
    code = (
        "import sys, frontdesk.platform.models.gateway as g\n"
        "print(sorted(m for m in ('anthropic', 'openai', 'google.genai') if m in sys.modules))\n"
        "g.ModelGateway({'chat': 'script:demo'}).client('chat')\n"
        "print(sorted(m for m in ('anthropic', 'openai', 'google.genai') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "[]"]


# -- how a vendor's failures reach the turn (issue 8): through the real OpenAI SDK and pydantic-ai,
# over an in-memory transport (no socket), so the mapping is the one production sees.


def openai_answering(respond: Any) -> PydanticAIClient:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(respond))
    provider = OpenAIProvider(base_url="http://vendor.invalid/v1", api_key="test-key", http_client=http)
    return PydanticAIClient(OpenAIChatModel("gpt-test", provider=provider), "openai:gpt-test", 5, sdk_retries=0)


def vendor_status(status: int, **headers: str) -> Any:
    return lambda request: httpx2.Response(status, json={"error": {"message": "vendor says no"}}, headers=headers)


def vendor_timeout(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ReadTimeout("timed out", request=request)


@pytest.mark.parametrize(
    ("respond", "status", "retry_after", "transient"),
    [
        (vendor_status(429, **{"retry-after": "7"}), 429, 7.0, True),
        (vendor_status(500), 500, None, True),
        (vendor_status(503), 503, None, True),
        (vendor_status(408), 408, None, True),
        (vendor_timeout, None, None, True),
        (
            lambda request: httpx2.Response(
                429, json={"error": {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}}
            ),
            429,
            None,
            False,
        ),
        (vendor_status(400), 400, None, False),
        (vendor_status(401), 401, None, False),
        (lambda request: httpx2.Response(200, text="<html>upstream proxy error</html>"), None, None, False),
    ],
    ids=["429", "500", "503", "408", "timeout", "429-quota-spent", "400", "401", "garbage-200"],
)
async def test_vendor_failures_say_whether_asking_again_later_may_help(respond, status, retry_after, transient):
    from pydantic_ai.models import override_allow_model_requests

    client = openai_answering(respond)
    with override_allow_model_requests(True), pytest.raises(ModelAPIError) as failure:
        await client.request(HELLO, ModelRequestParameters())
    error = failure.value
    assert (error.status, error.retry_after, error.transient) == (status, retry_after, transient)
    assert "test-key" not in str(error)
