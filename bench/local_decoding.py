"""llama.cpp's decoding settings for the embedded model on this machine: prompt and generation speed.

A turn's seconds are the prompt tokens llama.cpp evaluates (each step's new part) and the tokens
it generates under the grammar. This bench loads the built-in model once per setting and times,
in alternating rounds (the machine's speed drifts, so settings are compared within one run):

* prompt: tokens/s evaluating a 600-token prompt from scratch (the print shop's own data, in
  English and Vietnamese, as a turn's prompt mixes them);
* generate: tokens/s generating a reply greedily, free and under the reply's grammar (the
  grammar checks each candidate token, which costs time per token).

Settings: ``--contexts`` (n_ctx), ``--batches`` (n_batch: tokens per prompt chunk),
``--flash`` (flash attention off/on); every combination is one row. Prints medians per row and
each row's ratio to the first. Nothing leaves this machine.

Run (needs the ``local`` extra):
    .venv/bin/python bench/local_decoding.py
    .venv/bin/python bench/local_decoding.py --contexts 8192,4096,2048 --batches 512 --flash off --rounds 3
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import llama_cpp

from frontdesk import demo
from frontdesk.platform.models.local import _chat_formatter, _plain_weight_buffers
from frontdesk.platform.models.local_prompt import call_schema, grammar_schema
from frontdesk.platform.models.local_weights import DEFAULT_LOCAL_MODEL, resolve_weights
from frontdesk.reasoning.terminal import reply_tool_definition

BUSINESS_FILE = Path(demo.__file__).parent / "packs" / "catalog" / "demo" / "print-shop.yaml"
PROMPT_TOKENS = 600
QUESTION = "Viết cho khách một câu trả lời dài về giá danh thiếp và tờ rơi, rồi dịch sang tiếng Anh."


def load(path: Path, context: int, batch: int, flash: bool, threads: int) -> Any:
    with _plain_weight_buffers(llama_cpp):
        return llama_cpp.Llama(
            model_path=str(path),
            n_ctx=context,
            n_batch=batch,
            n_threads=threads,
            n_threads_batch=threads,
            flash_attn=flash,
            verbose=False,
        )


def measure(llama: Any, path: Path, grammar: Any) -> dict[str, float]:
    text = BUSINESS_FILE.read_text(encoding="utf-8")
    tokens = llama.tokenize(text.encode("utf-8"), add_bos=False)[:PROMPT_TOKENS]
    llama.reset()
    llama._ctx.kv_cache_clear()
    started = time.perf_counter()
    llama.eval(tokens)
    prompt_s = time.perf_counter() - started
    formatted = _chat_formatter(llama_cpp, llama, path)(messages=[{"role": "user", "content": QUESTION}])
    figures = {"prompt": len(tokens) / prompt_s}
    for name, constraint in (("free", None), ("grammar", grammar)):
        llama.reset()
        llama._ctx.kv_cache_clear()
        prompt = llama.tokenize(formatted.prompt.encode("utf-8"), add_bos=False, special=True)
        llama.eval(prompt)  # the prompt is not what this part times
        started = time.perf_counter()
        completion = llama.create_completion(prompt=prompt, grammar=constraint, temperature=0.0, max_tokens=64)
        generated = completion["usage"]["completion_tokens"]
        figures[name] = generated / (time.perf_counter() - started)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    parser.add_argument("--contexts", default="8192,4096,2048")
    parser.add_argument("--batches", default="512,256")
    parser.add_argument("--flash", default="off,on")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    path = resolve_weights(DEFAULT_LOCAL_MODEL)
    settings = list(
        itertools.product(
            [int(c) for c in args.contexts.split(",")],
            [int(b) for b in args.batches.split(",")],
            [f == "on" for f in args.flash.split(",")],
        )
    )
    schema = call_schema([reply_tool_definition(photos_fetched=False)])
    grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(grammar_schema(schema)), verbose=False)
    results: dict[tuple[int, int, bool], list[dict[str, float]]] = {s: [] for s in settings}
    for round_number in range(1, args.rounds + 1):
        for setting in settings:
            llama = load(path, *setting, threads=args.threads)
            results[setting].append(measure(llama, path, grammar))
            llama.close()
            print(f"round {round_number} {setting}: {results[setting][-1]}", file=sys.stderr, flush=True)
    print(f"{args.rounds} rounds, {args.threads} threads, load average {os.getloadavg()[0]:.1f}; tokens/s (median)")
    print(f"{'n_ctx':>6} {'n_batch':>7} {'flash':>5} {'prompt':>8} {'free':>7} {'grammar':>8}   ratio to the first row")
    first: dict[str, float] | None = None
    for setting, runs in results.items():
        medians = {k: statistics.median(r[k] for r in runs) for k in ("prompt", "free", "grammar")}
        first = first or medians
        ratios = " ".join(f"{medians[k] / first[k]:.2f}" for k in medians)
        context, batch, flash = setting
        print(
            f"{context:6d} {batch:7d} {'on' if flash else 'off':>5} {medians['prompt']:8.1f} "
            f"{medians['free']:7.1f} {medians['grammar']:8.1f}   {ratios}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
