"""The import rules of ARCHITECTURE.md §2, checked on the source (invariant 6 among them)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "frontdesk"
ROOTS = {"app", "runtime", "cli", "demo", "evals"}  # composition: may import everything


def _imports() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[module] = {n for n in names if n.startswith("frontdesk")}
    return found


IMPORTS = _imports()


def _offenders(importer_prefix: str, forbidden_prefix: str) -> list[str]:
    return sorted(
        f"{module} imports {name}"
        for module, names in IMPORTS.items()
        if module.startswith(importer_prefix)
        for name in names
        if name.startswith(forbidden_prefix)
    )


def test_no_module_between_ingestion_and_rendering_imports_a_channel():
    channel = "frontdesk.ingestion.channels"
    offenders = sorted(
        f"{module} imports {name}"
        for module, names in IMPORTS.items()
        if not module.startswith(channel) and module.split(".")[1] not in ROOTS
        for name in names
        if name.startswith(channel)
    )
    assert offenders == []


@pytest.mark.parametrize(
    ("importer", "forbidden"),
    [
        ("frontdesk.platform", "frontdesk.ingestion"),
        ("frontdesk.platform", "frontdesk.reasoning"),
        ("frontdesk.platform", "frontdesk.output"),
        ("frontdesk.platform", "frontdesk.capabilities"),
        ("frontdesk.reasoning", "frontdesk.ingestion"),
        ("frontdesk.output", "frontdesk.reasoning"),
        ("frontdesk.output", "frontdesk.ingestion"),
        ("frontdesk.capabilities", "frontdesk.ingestion"),
        ("frontdesk.capabilities", "frontdesk.reasoning"),
        ("frontdesk.capabilities", "frontdesk.context"),
        ("frontdesk.capabilities", "frontdesk.verification"),
        ("frontdesk.verification", "frontdesk.reasoning"),
        ("frontdesk.verification", "frontdesk.ingestion"),
        ("frontdesk.verification", "frontdesk.output"),
        ("frontdesk.context", "frontdesk.reasoning"),
        ("frontdesk.context", "frontdesk.ingestion"),
        ("frontdesk.context", "frontdesk.verification"),
        ("frontdesk.humans", "frontdesk.reasoning"),
        ("frontdesk.humans", "frontdesk.ingestion"),
        ("frontdesk.packs", "frontdesk.ingestion"),
        ("frontdesk.packs", "frontdesk.reasoning"),
        ("frontdesk.platform", "frontdesk.context"),
        ("frontdesk.platform", "frontdesk.packs"),
        ("frontdesk.platform", "frontdesk.humans"),
        ("frontdesk.platform", "frontdesk.business"),
        # A tenant's business data stands on the platform alone: packs and the console read it.
        *(
            ("frontdesk.business", f"frontdesk.{layer}")
            for layer in ("packs", "humans", "reasoning", "ingestion", "capabilities", "context", "verification")
        ),
    ],
)
def test_layer_does_not_import_the_layer_above(importer, forbidden):
    assert _offenders(importer, forbidden) == []


def test_only_the_composition_root_knows_the_packs():
    offenders = sorted(
        f"{module} imports {name}"
        for module, names in IMPORTS.items()
        if not module.startswith("frontdesk.packs") and module.split(".")[1] not in ROOTS
        for name in names
        if name.startswith("frontdesk.packs")
    )
    assert offenders == []
