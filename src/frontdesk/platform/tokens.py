"""Token counts, offline: tiktoken's BPE files ship inside the package.

``tiktoken.get_encoding`` downloads its files from a public blob store on first use, which fails
on a machine without internet and would make a turn's budget depend on the network. So the two
files live in ``tokenizer_files/`` (taken once from the ``litellm==1.110.2`` wheel, see
docs/dependencies.md), are checked against the sha256 hashes tiktoken publishes for them in
``tiktoken_ext.openai_public``, and are turned into ``tiktoken.Encoding`` objects here, with the
split pattern and special tokens of those same definitions (a test compares them with tiktoken's).

``o200k_base`` (GPT-4o and later) is the default counter for every provider: exact for current
OpenAI models and a close proxy for the others (the budget adds a margin for those).
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache, lru_cache
from pathlib import Path
from typing import Literal

import tiktoken

EncodingName = Literal["o200k_base", "cl100k_base"]
DEFAULT_ENCODING: EncodingName = "o200k_base"
FILES_DIR = Path(__file__).resolve().parent / "tokenizer_files"

# The sha256 of each file as tiktoken_ext.openai_public declares it (``expected_hash``).
EXPECTED_SHA256: dict[EncodingName, str] = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"

# Copied from tiktoken_ext.openai_public (tiktoken 0.14.0), which builds them inside functions
# that download the files: they cannot be imported without a network call.
_PATTERNS: dict[EncodingName, str] = {
    "o200k_base": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
    "cl100k_base": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
        r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    ),
}
_SPECIAL_TOKENS: dict[EncodingName, dict[str, int]] = {
    "o200k_base": {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    "cl100k_base": {
        _ENDOFTEXT: 100257,
        _FIM_PREFIX: 100258,
        _FIM_MIDDLE: 100259,
        _FIM_SUFFIX: 100260,
        _ENDOFPROMPT: 100276,
    },
}


class TokenizerFileError(ValueError):
    """A shipped BPE file is missing or is not the file tiktoken published (a corrupt install)."""


def bpe_path(name: EncodingName) -> Path:
    return FILES_DIR / f"{name}.tiktoken"


def load_ranks(path: Path, expected_sha256: str) -> dict[bytes, int]:
    """The merge ranks of a ``.tiktoken`` file, refused unless its sha256 is ``expected_sha256``.

    Parsed here rather than with ``tiktoken.load.load_tiktoken_bpe``: that function also copies
    every file it reads into a cache folder under the system temp dir (keyed by the path), and a
    later read of the same path is then served from that copy."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TokenizerFileError(f"tokenizer file {path} cannot be read: {exc}") from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        raise TokenizerFileError(f"tokenizer file {path} has sha256 {actual}, expected {expected_sha256}")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@cache
def encoding(name: EncodingName = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """The named encoding, built once per process from the shipped file (~0.3 s for o200k)."""
    return tiktoken.Encoding(
        name,
        pat_str=_PATTERNS[name],
        mergeable_ranks=load_ranks(bpe_path(name), EXPECTED_SHA256[name]),
        special_tokens=_SPECIAL_TOKENS[name],
    )


def count_tokens(text: str, name: EncodingName = DEFAULT_ENCODING) -> int:
    """Tokens in ``text``. Special-token strings a customer types (``<|endoftext|>``) are counted
    as ordinary text, as a provider encodes them, instead of raising like ``Encoding.encode``."""
    if not text:
        return 0
    return _counted(text, name)


# Most of what a turn counts was counted by the turn before: the static prefix, each tool's schema,
# the history's messages (encoding them was a tenth of a plain turn's CPU). Keyed by the text, so
# a changed prompt is counted afresh; bounded, so a busy instance keeps only the recent texts.
@lru_cache(maxsize=2048)
def _counted(text: str, name: EncodingName) -> int:
    return len(encoding(name).encode_ordinary(text))


def warm(name: EncodingName = DEFAULT_ENCODING) -> None:
    """Load the encoding now (at start-up) instead of inside the first turn."""
    encoding(name)
