"""The local client around llama.cpp, with a stand-in for the model: one request at a time, the
time limit covers the wait, and a cancelled turn never lets two threads into the model."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from types import SimpleNamespace

import pytest
from pydantic_ai import ModelRequest, SystemPromptPart, ToolCallPart, ToolReturnPart, UserPromptPart
from test_local_prompt import params_for

from frontdesk.errors import ModelAPIError
from frontdesk.platform.models.local import MAX_OUTPUT_TOKENS, REPEATED_TOKENS, LocalModelClient, LocalModelOptions

PARAMS = params_for("get_service_detail")
QUESTION = [ModelRequest(parts=[SystemPromptPart("prefix")]), ModelRequest(parts=[UserPromptPart("price?")])]
CALL = json.dumps({"tool": "get_service_detail", "args": {"service_id": "flyers"}})


class FakeLlama:
    """Answers ``CALL`` after ``seconds``, and records whether two threads were ever inside."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.input_ids: list[int] = []  # what llama.cpp holds evaluated (nothing: no state to keep)
        self.n_tokens = 0
        self.inside = 0
        self.overlapped = False
        self.calls = 0
        self._lock = threading.Lock()

    def tokenize(self, text: bytes, **_kwargs: object) -> list[int]:
        return list(range(len(text) // 4))

    def create_completion(self, prompt: list[int], **_kwargs: object) -> dict[str, object]:
        with self._lock:
            self.inside += 1
            self.overlapped |= self.inside > 1
            self.calls += 1
        time.sleep(self.seconds)
        with self._lock:
            self.inside -= 1
        return {"choices": [{"text": CALL}], "usage": {"prompt_tokens": len(prompt), "completion_tokens": 12}}


def client_with(llama: FakeLlama | WritingLlama, timeout_s: float) -> LocalModelClient:
    client = LocalModelClient("/models/shop.gguf", LocalModelOptions(), timeout_s=timeout_s)
    client._llama = llama
    client._formatter = lambda messages: SimpleNamespace(prompt=json.dumps(messages), stop=None, stopping_criteria=None)
    client._grammar = lambda schema: None  # the real one is checked by llama.cpp itself (smoke test)
    return client


async def test_a_call_comes_back_as_a_tool_call_with_its_token_counts():
    client = client_with(FakeLlama(0.0), timeout_s=5)

    response = await client.request(QUESTION, PARAMS)

    (part,) = response.parts
    assert isinstance(part, ToolCallPart)
    assert (part.tool_name, part.args) == ("get_service_detail", {"service_id": "flyers"})
    assert response.usage.output_tokens == 12
    assert response.usage.input_tokens > 0
    assert client.name == "local:shop.gguf"  # the file's name, never the operator's directories


async def test_requests_take_turns_on_the_model():
    llama = FakeLlama(0.2)
    client = client_with(llama, timeout_s=5)

    await asyncio.gather(*(client.request(QUESTION, PARAMS) for _ in range(3)))

    assert llama.calls == 3
    assert not llama.overlapped


async def test_the_time_limit_counts_the_wait_behind_another_turn():
    llama = FakeLlama(0.8)
    client = client_with(llama, timeout_s=0.3)
    first = asyncio.create_task(client.request(QUESTION, PARAMS))
    await asyncio.sleep(0.05)

    with pytest.raises(ModelAPIError, match="busy with other turns"):
        await client.request(QUESTION, PARAMS)
    await first


async def test_a_cancelled_turn_keeps_the_model_until_its_thread_is_done():
    llama = FakeLlama(0.4)
    client = client_with(llama, timeout_s=5)
    cancelled = asyncio.create_task(client.request(QUESTION, PARAMS))
    await asyncio.sleep(0.1)
    cancelled.cancel()

    await client.request(QUESTION, PARAMS)  # waits for the abandoned run instead of joining it

    assert llama.calls == 2
    assert not llama.overlapped


class WritingLlama:
    """Writes ``token_at(i)`` one token at a time, asking the stopping criteria after each, as
    llama.cpp does."""

    def __init__(self, token_at) -> None:
        self.token_at = token_at
        self.written = 0

    def tokenize(self, text: bytes, **_kwargs: object) -> list[int]:
        return list(range(len(text) // 4))

    def create_completion(self, prompt: list[int], max_tokens: int, stopping_criteria, **_kwargs):
        tokens = list(prompt)
        while self.written < max_tokens:
            tokens.append(self.token_at(self.written))
            self.written += 1
            if any(criterion(tokens, None) for criterion in stopping_criteria):
                break
        text = '{"tool": "reply", "args": {"blocks": [{"type": "text", "text": "' + "la " * self.written
        return {"choices": [{"text": text}], "usage": {"prompt_tokens": len(prompt), "completion_tokens": self.written}}


def looping(i: int) -> int:
    """Sixty tokens of a reply, then one twelve-token phrase over and over."""
    return 500 + i if i < 60 else 1000 + (i - 60) % 12


def photo_urls(i: int) -> int:
    """URLs one after another: a 20-token prefix they share, then 10 tokens of their own."""
    url, at = divmod(i, 30)
    return 2000 + at if at < 20 else 3000 + url * 10 + at


async def test_a_reply_that_loops_is_stopped_long_before_the_output_limit():
    llama = WritingLlama(looping)

    response = await client_with(llama, timeout_s=5).request(QUESTION, PARAMS)

    assert llama.written <= 60 + 12 + REPEATED_TOKENS < MAX_OUTPUT_TOKENS
    assert not isinstance(response.parts[0], ToolCallPart)  # cut off: the loop asks again, as for prose


async def test_urls_that_share_a_long_prefix_are_not_a_loop():
    llama = WritingLlama(photo_urls)

    await client_with(llama, timeout_s=5).request(QUESTION, PARAMS)

    assert llama.written == MAX_OUTPUT_TOKENS


async def test_a_first_step_with_nothing_to_choose_is_answered_without_the_model():
    from test_local_prompt import _bound_to

    from frontdesk.reasoning.terminal import reply_tool_definition

    # The router's reading: a question about the flyers, which starts with their details.
    reply = reply_tool_definition(tool_first=True, first_step=("get_service_detail",))
    params = PARAMS.__class__(
        function_tools=[*_bound_to(("flyers",), "get_service_detail", "search_services"), reply],
        allow_text_output=True,
    )
    llama = FakeLlama(0.0)
    client = client_with(llama, timeout_s=5)

    response = await client.request(QUESTION, params)

    (part,) = response.parts
    assert isinstance(part, ToolCallPart)
    assert (part.tool_name, part.args) == ("get_service_detail", {"service_id": "flyers"})
    assert llama.calls == 0  # the grammar left one output: nothing for the model to write
    assert response.usage.output_tokens == 0

    # Once a tool has answered, the model writes (the reply is open).
    result = ToolReturnPart("get_service_detail", {"price": "$25"}, tool_call_id=part.tool_call_id)
    answered = [*QUESTION, response, ModelRequest(parts=[result])]
    await client.request(answered, params)
    assert llama.calls == 1


async def test_an_opening_evaluated_ahead_takes_its_turn_on_the_model():
    llama = FakeLlama(0.2)
    client = client_with(llama, timeout_s=5)

    await asyncio.gather(client.prefill("You are the assistant of a print shop."), client.request(QUESTION, PARAMS))

    assert llama.calls == 2
    assert not llama.overlapped
