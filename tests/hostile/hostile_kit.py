"""What the hostile-input tests share: example budgets, the case tally, hostile bodies, signatures.

Every example runs at a fixed seed (``fuzz``), so a failure reproduces and a run's case count is
the same each time. ``FRONTDESK_THOROUGH=1`` multiplies every budget by ``THOROUGH_FACTOR``. The
cases each endpoint got are tallied in ``TALLY`` and printed at the end of the session:
``hostile input: N cases across M endpoints``. The app the tests drive is in ``hostile_harness``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from collections import Counter
from importlib import resources
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

THOROUGH = os.environ.get("FRONTDESK_THOROUGH", "") not in ("", "0")
THOROUGH_FACTOR = 5
TALLY: Counter[str] = Counter()  # endpoint ("POST /webhooks/line/{account_id}") -> cases sent
SECRET = "hostile-test-secret"
OTHER_SECRET = "someone-elses-secret"


def examples(normal: int) -> int:
    """An example budget: ``normal`` in a normal run, ``THOROUGH_FACTOR`` times that when thorough."""
    return normal * THOROUGH_FACTOR if THOROUGH else normal


def fuzz(normal: int) -> settings:
    """Fixed seed (the same cases every run, so a failure reproduces), no deadline (a request is
    a few milliseconds but the first one of a module warms caches), no example database."""
    return settings(
        max_examples=examples(normal),
        deadline=None,
        derandomize=True,
        database=None,
        # Request bodies are large by design (real fixtures, nested JSON), and each example is a
        # real HTTP exchange with the database: both are what is being tested, not a slow strategy.
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )


# -- bodies


json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)


def fixture_bodies(channel: str, *, prefix: str = "", unless: str | None = None) -> list[bytes]:
    """The real payloads in a channel's fixture folder (as the installed package ships them):
    those whose name starts with ``prefix`` and, if given, not with ``unless``."""
    folder = resources.files(f"frontdesk.ingestion.channels.{channel}").joinpath("fixtures")
    names = sorted(f.name for f in folder.iterdir() if f.name.endswith(".json") and f.name.startswith(prefix))
    return [folder.joinpath(n).read_bytes() for n in names if unless is None or not n.startswith(unless)]


def _replace_somewhere(document: Any, replacement: Any, path: list[int]) -> Any:
    """``document`` with one nested value (chosen by ``path`` indexes) swapped for ``replacement``."""
    if not path or not isinstance(document, dict | list) or not document:
        return replacement
    keys = list(document) if isinstance(document, dict) else list(range(len(document)))
    key = keys[path[0] % len(keys)]
    copy = dict(document) if isinstance(document, dict) else list(document)
    copy[key] = _replace_somewhere(document[key], replacement, path[1:])
    return copy


# Values that break stores and drivers rather than parsers: PostgreSQL refuses NUL in text, a lone
# surrogate cannot be encoded as UTF-8, integers past 64 bits overflow a BIGINT (or, written out,
# an id's length), and so on.
NASTY = [
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "",
    " ",
    "\u202e\u0000",
    "\n" * 3,
    "x" * 5_000,
    "%s%n",
    "../../etc/passwd",
    2**63,
    -(2**63) - 1,
    2**64,
    10**300,
    -1,
    0,
    1e308,
    42.0,
    -0.0,
    True,
    None,
    [],
    {},
]


def _leaves(document: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(document, dict):
        return [p for k, v in document.items() for p in _leaves(v, (*path, k))] or [path]
    if isinstance(document, list):
        return [p for i, v in enumerate(document) for p in _leaves(v, (*path, i))] or [path]
    return [path]


def _poison(document: Any, which: int, nasty: Any) -> Any:
    """``document`` with one leaf (the ``which``-th, modulo their number) set to ``nasty``."""
    paths = _leaves(document)
    target = paths[which % len(paths)]
    if not target:
        return nasty
    copy = json.loads(json.dumps(document))
    parent = copy
    for key in target[:-1]:
        parent = parent[key]
    parent[target[-1]] = nasty
    return copy


def _nest(depth: int, inner: str) -> bytes:
    return ("[" * depth + inner + "]" * depth).encode()


def hostile_bodies(samples: list[bytes]) -> st.SearchStrategy[bytes]:
    """Real payloads, and real payloads truncated, mutated (one nested value replaced by random
    JSON), poisoned (one leaf replaced by a ``NASTY`` value), nested far too deep, or replaced by
    random JSON, random text or random bytes."""
    real = st.sampled_from(samples)
    truncated = st.tuples(real, st.floats(0, 1)).map(lambda t: t[0][: int(len(t[0]) * t[1])])
    mutated = st.tuples(real, json_values, st.lists(st.integers(0, 50), max_size=6)).map(
        lambda t: json.dumps(_replace_somewhere(json.loads(t[0]), t[1], t[2])).encode()
    )
    poisoned = st.tuples(real, st.integers(0, 200), st.sampled_from(NASTY)).map(
        lambda t: json.dumps(_poison(json.loads(t[0]), t[1], t[2])).encode()
    )
    nested = st.builds(_nest, st.sampled_from([300, 5_000, 60_000]), st.sampled_from(["", "{}", '"x"']))
    return st.one_of(
        real,
        truncated,
        mutated,
        poisoned,
        poisoned,
        json_values.map(lambda v: json.dumps(v).encode()),
        st.text(max_size=60).map(str.encode),
        st.binary(max_size=200),
        nested,
    )


# -- signatures


def meta_signature(secret: str, raw: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


def line_signature(secret: str, raw: bytes) -> str:
    return base64.b64encode(hmac.new(secret.encode(), raw, hashlib.sha256).digest()).decode()


# -- the session's last words


class _Summary:
    """Prints the case tally as the session's last words (a plugin, registered by the first
    hostile module: a conftest here would shadow the suite's own ``conftest`` module)."""

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not TALLY:
            return
        mode = "thorough" if THOROUGH else "normal"
        terminalreporter.write_line(
            f"hostile input: {sum(TALLY.values())} cases across {len(TALLY)} endpoints ({mode} run)"
        )
        for label, cases in sorted(TALLY.items()):
            terminalreporter.write_line(f"  {cases:6d}  {label}")


def report_at_the_end(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("hostile-summary"):
        config.pluginmanager.register(_Summary(), "hostile-summary")
