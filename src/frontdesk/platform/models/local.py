"""The ``local:`` provider: a GGUF model run on this machine's CPU through llama.cpp.

Every output is generated under a grammar built from the turn's bundle (``local_prompt``), greedy,
so a 1.5B model always emits one well-formed call of an offered tool. llama.cpp is imported only
when a ``local:`` slot is used (the ``local`` extra builds it from source). Inference blocks, so
it runs in a worker thread, one request at a time per loaded model (a ``Llama`` is not safe to
share between threads and two runs would only halve each other's speed on the same cores); the
model's prompt cache then keeps the conversation's common prefix between the calls of a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_ai import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.usage import RequestUsage

from frontdesk.errors import ConfigError, ModelAPIError
from frontdesk.platform.models.local_openings import OpeningStates
from frontdesk.platform.models.local_prompt import (
    allowed_tools,
    call_schema,
    chat_messages,
    grammar_schema,
    parse_output,
    settled_call,
    turn_photos,
)
from frontdesk.platform.models.local_weights import INSTALL_HINT, Progress, resolve_weights

log = logging.getLogger(__name__)
# A reply of three short blocks, with room (the bench's replies: 95 tokens mean); a runaway
# string stops here. At 700 a runaway cost 60 s per attempt, and the retry ran away again.
MAX_OUTPUT_TOKENS = 400
# A runaway is usually a loop: the last this many tokens written once already stop the output.
# (Not fewer: the URLs of three photos share a prefix of some 20 tokens.)
REPEATED_TOKENS = 48


@dataclass(frozen=True)
class LocalModelOptions:
    cache_dir: Path | None = None
    threads: int | None = None
    context: int = 8192
    # Openings evaluated ahead (``prefill``) kept in memory as llama.cpp states, 0: none. A turn
    # after another business's reads its own opening back instead of evaluating it again.
    state_cache_mb: int = 256


class LocalModelClient:
    """A ``ModelClient`` over llama.cpp. ``load`` may be called ahead (the demo does, to show
    progress); otherwise the first request loads the model."""

    def __init__(self, model: str, options: LocalModelOptions, *, timeout_s: float) -> None:
        self._model = model
        self._options = options
        self._timeout_s = timeout_s
        self._llama: Any = None
        self._formatter: Any = None
        self._grammars: dict[str, Any] = {}
        self._load_lock = threading.Lock()
        self._run_lock = asyncio.Lock()
        self._calls = 0
        self._evaluated: list[int] = []  # per llama.cpp eval of this completion: its token count
        self._openings = OpeningStates(options.state_cache_mb << 20)

    @property
    def name(self) -> str:
        return f"local:{Path(self._model).name}"  # never the operator's directory layout

    @property
    def model(self) -> str:
        return self._model

    def prepare(self, progress: Progress | None = None) -> Path:
        """Find or assemble the weights (verified) without loading them: ``serve``'s HTTP process
        does this for its worker processes, which load them."""
        return resolve_weights(self._model, self._options.cache_dir, progress)

    def load(self, progress: Progress | None = None, on_stage: Callable[[str], None] | None = None) -> None:
        """Find or assemble the weights (verified), then load them; idempotent."""
        with self._load_lock:
            if self._llama is not None:
                return
            llama_cpp = _import_llama_cpp()
            path = resolve_weights(self._model, self._options.cache_dir, progress)
            if on_stage is not None:
                on_stage(f"loading {path.name} ({path.stat().st_size / 1e9:.1f} GB)")
            started = time.perf_counter()
            threads = self._options.threads or os.cpu_count() or 2
            with _plain_weight_buffers(llama_cpp):
                self._llama = llama_cpp.Llama(
                    model_path=str(path),
                    n_ctx=self._options.context,
                    n_threads=threads,
                    n_threads_batch=threads,
                    verbose=False,
                )
            self._formatter = _chat_formatter(llama_cpp, self._llama, path)
            self._evaluated = _count_evaluated(self._llama)
            log.info("local model %s loaded in %.1f s", path.name, time.perf_counter() - started)

    async def request(self, messages: Sequence[ModelMessage], params: ModelRequestParameters) -> ModelResponse:
        # The prompt lists every tool offered this turn, the grammar only those this step may
        # call: the prompt of each step then extends the last one's, and llama.cpp evaluates
        # only what was added (the newest call and its result), not the whole turn again.
        photos = turn_photos(messages)
        chat = chat_messages(messages, params.function_tools, photos)
        tools = allowed_tools(messages, params)
        schema = call_schema(tools, list(photos))
        self._calls += 1
        call_id = f"local-{self._calls}"
        settled = settled_call(schema)
        if settled is not None:  # the grammar leaves one output: written without the model
            part = ToolCallPart(settled["tool"], settled["args"], tool_call_id=call_id)
            return ModelResponse(parts=[part], usage=RequestUsage(), model_name=self.name)
        # The time limit covers the wait behind other turns too: it is what the customer waits.
        deadline = time.monotonic() + self._timeout_s
        try:
            async with asyncio.timeout(self._timeout_s):
                await self._run_lock.acquire()
        except TimeoutError:
            raise ModelAPIError(f"{self.name}: busy with other turns for {self._timeout_s:.0f} s") from None
        # The model is held until its thread returns, even if this request is cancelled meanwhile:
        # llama.cpp cannot be stopped mid-prompt, and a second thread must never use it at once.
        work = asyncio.ensure_future(asyncio.to_thread(self._complete, chat, schema, deadline))
        work.add_done_callback(self._release)
        output, usage = await asyncio.shield(work)
        return ModelResponse(
            parts=[parse_output(output, tools, call_id, photos)],
            usage=RequestUsage(
                input_tokens=usage.get("prompt_tokens", 0),
                output_tokens=usage.get("completion_tokens", 0),
                cache_read_tokens=usage.get("reused_tokens", 0),
            ),
            model_name=self.name,
        )

    async def prefill(self, system_text: str) -> int:
        """Evaluate ``system_text`` as a prompt's opening system message ahead of any request, and
        return the tokens evaluated (0: it was in memory already). A request whose prompt opens
        with it then evaluates only the rest: llama.cpp keeps the evaluated tokens in its context
        and, with ``state_cache_mb``, its state cache. Waits behind a running request."""
        await self._run_lock.acquire()
        work = asyncio.ensure_future(asyncio.to_thread(self._prefill, system_text))
        work.add_done_callback(self._release)
        return await asyncio.shield(work)

    def _prefill(self, system_text: str) -> int:
        self.load()
        formatted = self._formatter(messages=[{"role": "system", "content": system_text}])
        prompt = self._llama.tokenize(formatted.prompt.encode("utf-8"), add_bos=False, special=True)
        self._evaluated.clear()
        # One token generated: llama-cpp-python keeps a completion's state, not a bare evaluation.
        self._llama.create_completion(prompt=prompt, max_tokens=1, temperature=0.0)
        self._openings.save(self._llama, _import_llama_cpp())
        return self._evaluated[0] if self._evaluated else 0

    def _release(self, work: asyncio.Future[Any]) -> None:
        self._run_lock.release()
        if not work.cancelled():
            work.exception()  # retrieved: a cancelled caller's failure is not "never retrieved"

    def _complete(
        self, chat: list[dict[str, str]], schema: dict[str, Any], deadline: float
    ) -> tuple[str, dict[str, int]]:
        self.load()
        llama_cpp = _import_llama_cpp()
        grammar = self._grammar(schema) if schema["anyOf"] else None
        formatted = self._formatter(messages=chat)
        timed_out = False

        def out_of_time(_tokens: Any, _logits: Any) -> bool:
            nonlocal timed_out
            timed_out = time.monotonic() > deadline
            return timed_out

        # The chat API takes no stopping criteria, so the prompt is rendered with the model's own
        # template here and completed directly: a run past its deadline stops at the next token.
        def looping(tokens: Any, _logits: Any) -> bool:
            written = list(tokens[len(prompt) :])
            tail = written[-REPEATED_TOKENS:]
            return len(written) >= 2 * REPEATED_TOKENS and _contains(written[:-1], tail)

        criteria = [out_of_time, looping, *(formatted.stopping_criteria or [])]
        prompt = self._llama.tokenize(formatted.prompt.encode("utf-8"), add_bos=False, special=True)
        self._openings.restore_for(self._llama, llama_cpp, prompt)
        self._evaluated.clear()
        try:
            completion = self._llama.create_completion(
                prompt=prompt,
                stop=formatted.stop,
                grammar=grammar,  # None without tools: free text
                temperature=0.0,
                max_tokens=MAX_OUTPUT_TOKENS,
                stopping_criteria=llama_cpp.StoppingCriteriaList(criteria),
            )
        except (RuntimeError, ValueError) as exc:  # llama.cpp reports a full context this way
            raise ModelAPIError(f"{self.name}: {exc}") from exc
        if timed_out:
            raise ModelAPIError(f"{self.name}: no answer within {self._timeout_s:.0f} s")
        text = completion["choices"][0]["text"] or ""
        # The completion's first eval is the part of the prompt not already in llama.cpp's memory.
        reused = len(prompt) - self._evaluated[0] if self._evaluated else 0
        usage = dict(completion.get("usage") or {})
        log.debug("local model: %d prompt tokens evaluated, %d reused", len(prompt) - reused, reused)
        return text, {**usage, "reused_tokens": max(0, reused)}

    def _grammar(self, schema: dict[str, Any]) -> Any:
        """Grammars by schema (a bundle recurs every turn of its route), each checked by llama.cpp
        before use: a grammar it cannot parse would otherwise crash the process, not fail a call."""
        text = json.dumps(grammar_schema(schema), sort_keys=True)
        key = hashlib.sha256(text.encode()).hexdigest()
        grammar = self._grammars.get(key)
        if grammar is None:
            llama_cpp = _import_llama_cpp()
            grammar = llama_cpp.LlamaGrammar.from_json_schema(text, verbose=False)
            probe = llama_cpp.llama_sampler_init_grammar(
                self._llama._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
            )
            if not probe:
                raise ModelAPIError(f"{self.name}: llama.cpp cannot build a grammar for this turn's tools")
            llama_cpp.llama_sampler_free(probe)
            if len(self._grammars) >= 64:
                self._grammars.clear()
            self._grammars[key] = grammar
        return grammar


def _contains(tokens: list[int], run: list[int]) -> bool:
    """Whether ``run`` occurs in ``tokens`` (a short scan: outputs are at most a few hundred)."""
    width = len(run)
    return any(tokens[i : i + width] == run for i in range(len(tokens) - width + 1))


def _count_evaluated(llama: Any) -> list[int]:
    """The token count of each ``eval`` llama.cpp runs, from the last ``clear``: a completion's
    first is what it evaluated of the prompt (the rest it reused), then one per generated token.
    llama-cpp-python reports no such figure, so its ``eval`` is wrapped on this instance."""
    counts: list[int] = []
    evaluate = llama.eval

    def counted(tokens: Any) -> Any:
        counts.append(len(tokens))
        return evaluate(tokens)

    llama.eval = counted
    return counts


def _chat_formatter(llama_cpp: Any, llama: Any, path: Path) -> Any:
    """The model's own chat template (from the GGUF), as llama-cpp-python would render it."""
    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        raise ConfigError(f"{path.name} has no chat template: use an instruction-tuned (chat) GGUF model")
    eos, bos = llama.token_eos(), llama.token_bos()
    return llama_cpp.llama_chat_format.Jinja2ChatFormatter(
        template=template,
        eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
        bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
        stop_token_ids=[eos],
    )


# The wrap below changes a module every client in the process shares: one load at a time.
_DEFAULTS_LOCK = threading.Lock()


@contextlib.contextmanager
def _plain_weight_buffers(llama_cpp: Any) -> Iterator[None]:
    """Load with llama.cpp's "extra buffer types" off: the weight layouts it picks for the CPU's
    matrix units (AMX tiles, repacked blocks). A build made on a machine with AMX crashed the
    process (a general protection fault in libggml-cpu at the first prompt) inside a VM that
    reports AMX; plain buffers ran the same model there. ``Llama`` offers no argument for it, so
    its defaults are wrapped for the time of the load, under a process-wide lock."""
    module = llama_cpp.llama.llama_cpp  # the ctypes module ``Llama.__init__`` reads its defaults from
    with _DEFAULTS_LOCK:
        defaults = module.llama_model_default_params

        def plain() -> Any:
            params = defaults()
            params.use_extra_bufts = False
            return params

        module.llama_model_default_params = plain
        try:
            yield
        finally:
            module.llama_model_default_params = defaults


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise ConfigError(f"local models need llama.cpp: {INSTALL_HINT} (builds it, ~5 minutes once)") from exc
    return llama_cpp
