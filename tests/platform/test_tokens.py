"""Token counts work offline, from the BPE files shipped in the package, and are tiktoken's own:
the files carry tiktoken's published hashes (a tampered copy is refused), the split patterns and
special tokens equal tiktoken's definitions, and counts equal tiktoken's on English, Vietnamese
and JSON."""

from __future__ import annotations

import glob
import hashlib
import inspect
import json
import os
import re
import shutil
import socket
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load
from tiktoken_ext import openai_public

from frontdesk.platform import tokens
from frontdesk.platform.tokens import EXPECTED_SHA256, TokenizerFileError, bpe_path, count_tokens, load_ranks

ROOT = Path(__file__).resolve().parents[2]
NAMES: tuple[tokens.EncodingName, ...] = ("o200k_base", "cl100k_base")
SAMPLES = {
    "english": "Hi! How much are 500 business cards, double-sided, on 350gsm matte? I'd need them by Friday.",
    "vietnamese": "Xin chào, mình là Bảo. Cho mình hỏi giá in 500 tờ rơi khổ A5, giấy couché 150gsm, giao tuần này?",
    "json": json.dumps(
        {
            "services": [
                {"id": "business-cards", "name": "Business cards", "price": "$45 per 250 cards", "days": 3},
                {"id": "flyers", "name": "Tờ rơi A5", "price": None, "tags": ["in nhanh", "giá rẻ"]},
            ],
            "total": 2,
        },
        ensure_ascii=False,
    ),
    "special text": "a customer typed <|endoftext|> and <|endofprompt|> into the chat",
}


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to resolve a name or open a connection fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def tiktoken_definition(name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """tiktoken's own definition of ``name`` (``tiktoken_ext.openai_public``), served from a cache
    folder holding our files under the names tiktoken gives its downloads (sha1 of the URL)."""
    source = inspect.getsource(getattr(openai_public, name))
    (url,) = re.findall(r'"(https://[^"]+\.tiktoken)"', source)
    shutil.copy(bpe_path(name), tmp_path / hashlib.sha1(url.encode()).hexdigest())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    definition: dict[str, Any] = getattr(openai_public, name)()
    return definition


@pytest.mark.parametrize("name", NAMES)
def test_shipped_files_carry_the_hashes_tiktoken_publishes(name: tokens.EncodingName):
    published = re.findall(r'expected_hash="([0-9a-f]{64})"', inspect.getsource(getattr(openai_public, name)))

    assert published == [EXPECTED_SHA256[name]]
    assert hashlib.sha256(bpe_path(name).read_bytes()).hexdigest() == EXPECTED_SHA256[name]


@pytest.mark.parametrize("name", NAMES)
def test_encoding_equals_tiktokens_definition(name: tokens.EncodingName, no_network, monkeypatch, tmp_path):
    reference = tiktoken_definition(name, monkeypatch, tmp_path)
    ours = tokens.encoding(name)

    assert ours._pat_str == reference["pat_str"]
    assert ours._special_tokens == reference["special_tokens"]
    assert load_ranks(bpe_path(name), EXPECTED_SHA256[name]) == reference["mergeable_ranks"]


@pytest.mark.parametrize("name", NAMES)
def test_counts_equal_tiktokens_on_english_vietnamese_and_json(name: tokens.EncodingName, monkeypatch, tmp_path):
    reference = tiktoken.Encoding(**tiktoken_definition(name, monkeypatch, tmp_path))

    counts = {sample: count_tokens(text, name) for sample, text in SAMPLES.items()}

    assert counts == {sample: len(reference.encode_ordinary(text)) for sample, text in SAMPLES.items()}
    assert all(n > 0 for n in counts.values())
    assert count_tokens("") == 0


def test_a_tampered_file_is_refused(tmp_path):
    tampered = tmp_path / "o200k_base.tiktoken"
    data = bytearray(bpe_path("o200k_base").read_bytes())
    line_end = data.index(b"\n")
    data[line_end - 1 : line_end] = b"7"  # one rank changed; the file still parses
    tampered.write_bytes(bytes(data))

    with pytest.raises(TokenizerFileError, match="sha256"):
        load_ranks(tampered, EXPECTED_SHA256["o200k_base"])
    with pytest.raises(TokenizerFileError, match="cannot be read"):
        load_ranks(tmp_path / "missing.tiktoken", EXPECTED_SHA256["o200k_base"])


def test_loading_uses_no_network_no_environment_and_no_cache_folder(no_network, monkeypatch, tmp_path):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # where tiktoken's loader would copy files
    with pytest.raises(AssertionError, match="network access"):  # the guard does catch a download
        tiktoken.load.read_file("https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken")
    environment = dict(os.environ)
    tokens.encoding.cache_clear()
    try:
        assert count_tokens("Where is my order A-17?") == count_tokens("Where is my order A-17?", "o200k_base") > 0
        assert count_tokens("Where is my order A-17?", "cl100k_base") > 0
    finally:
        tokens.encoding.cache_clear()  # the next test loads again, with the network back
    assert dict(os.environ) == environment
    assert list(tmp_path.iterdir()) == []


def test_counting_a_long_conversation_is_fast():
    text = " ".join(SAMPLES.values()) * 150  # ~40k characters
    tokens.warm()

    started = time.perf_counter()
    n = count_tokens(text)
    elapsed = time.perf_counter() - started

    assert n > 8_000
    assert elapsed < 0.25, f"{elapsed:.3f}s for {len(text)} characters"


def test_the_package_data_patterns_ship_the_files():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["frontdesk"]
    package = ROOT / "src" / "frontdesk"
    shipped = {Path(p).resolve() for pattern in patterns for p in glob.glob(str(package / pattern), recursive=True)}

    assert {bpe_path(name).resolve() for name in NAMES} <= shipped
