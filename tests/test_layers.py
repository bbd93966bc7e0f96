"""The import rules of ARCHITECTURE.md §2, checked on the source (invariant 6 among them).

The top-level modules of ``frontdesk`` are the nodes; ``ALLOWED`` lists every arrow one may have to
another. An import along an arrow not listed fails, and the listed arrows must form no cycle, so
no chain of imports leads from a layer back up to one above it, however many modules it passes
through. A new arrow is a design decision: add it here, with its reason in docs/architecture.md.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "frontdesk"
ROOTS = {"app", "runtime", "cli", "demo", "evals", "worker_process"}  # composition: may import everything


def _all_imports() -> dict[str, set[str]]:
    """Every module of ``frontdesk`` -> every module it imports (third-party ones too)."""
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[module] = names
    return found


def _imports() -> dict[str, set[str]]:
    return {module: {n for n in names if n.startswith("frontdesk")} for module, names in _all_imports().items()}


IMPORTS = _imports()


# Composition roots (they wire everything): app, runtime, cli and its command modules, demo, evals.
ALLOWED: dict[str, set[str]] = {
    # the bottom: no frontdesk imports, or only each other
    "frontdesk": set(),  # the package's __init__ (its version)
    "errors": set(),
    "http_errors": set(),
    "settings": set(),
    "platform": {"frontdesk", "errors", "settings"},
    # the layers, each over the ones before it
    "workflows": {"errors", "platform"},
    "business": {"errors", "platform"},
    "output": {"errors", "platform"},
    "capabilities": {"errors", "platform", "settings", "workflows"},
    "context": {"capabilities", "errors", "platform"},  # ledger entries store ToolEvidence
    "verification": {"capabilities", "context", "platform"},
    # output: the reply contract (output/blocks.py is the ``reply`` tool's schema)
    "reasoning": {"capabilities", "context", "errors", "output", "platform", "verification"},
    # verification: a saved scenario masks the contact details the gate reads, read the same way
    "humans": {"business", "context", "errors", "output", "platform", "settings", "verification"},
    "ingestion": {"errors", "http_errors", "output", "platform"},
    # the turn: ingestion's lease, batch and quiet window; reasoning's value; one commit; delivery
    "turns": {"context", "errors", "humans", "ingestion", "output", "platform", "reasoning"},
    "packs": {"business", "capabilities", "humans", "platform", "verification", "workflows"},
    # composition
    "cli_accounts": {"errors", "ingestion", "platform", "settings"},
    "cli_business": {"business", "errors", "platform", "settings"},
    "cli_operators": {"errors", "humans", "platform", "settings"},
    "cli_vault": {"errors", "ingestion", "platform", "settings"},
    "demo": {"business", "capabilities", "packs", "platform", "settings"},
    "runtime": {
        "capabilities", "context", "frontdesk", "humans", "ingestion", "output", "packs", "platform",
        "reasoning", "settings", "turns", "workflows",
    },
    # evals: the console plays a saved scenario file before it keeps it (evals/trial.py)
    "app": {"business", "errors", "evals", "frontdesk", "http_errors", "humans", "ingestion", "platform", "runtime"},
    # one of serve's worker processes: a runtime without HTTP
    "worker_process": {"platform", "runtime", "settings"},
    "evals": {
        "business", "capabilities", "context", "demo", "errors", "ingestion", "output", "packs", "platform",
        "runtime", "settings", "verification",
    },
    "cli": {
        "app", "cli_accounts", "cli_business", "cli_operators", "cli_vault", "demo", "errors", "evals",
        "ingestion", "output", "packs", "platform", "runtime", "settings", "worker_process",
    },
}  # fmt: skip


def _node(module: str) -> str:
    """``frontdesk.reasoning.agent`` -> ``reasoning``; the package itself -> ``frontdesk``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "__init__" else "frontdesk"


def test_every_import_follows_an_allowed_arrow():
    offenders = sorted(
        f"{module} imports {name}"
        for module, names in IMPORTS.items()
        for name in names
        if _node(name) != _node(module) and _node(name) not in ALLOWED.get(_node(module), set())
    )
    assert offenders == []


def test_the_allowed_arrows_form_no_cycle():
    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        stack = [start]
        while stack:
            for target in ALLOWED.get(stack.pop(), set()):
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return seen

    assert [node for node in ALLOWED if node in reachable(node)] == []


def test_every_module_is_a_node_of_the_allow_list():
    assert {_node(module) for module in IMPORTS} - set(ALLOWED) == set()


def test_every_allowed_arrow_is_used():
    # A stale arrow would let a new backward import in unnoticed.
    used = {(_node(m), _node(n)) for m, names in IMPORTS.items() for n in names if _node(m) != _node(n)}
    listed = {(source, target) for source, targets in ALLOWED.items() for target in targets}
    assert listed - used == set()


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


def test_only_the_composition_root_knows_the_packs():
    offenders = sorted(
        f"{module} imports {name}"
        for module, names in IMPORTS.items()
        if not module.startswith("frontdesk.packs") and module.split(".")[1] not in ROOTS
        for name in names
        if name.startswith("frontdesk.packs")
    )
    assert offenders == []


def test_reasoning_returns_a_value_and_never_touches_the_store():
    # The turn commits what reasoning decided (turns/commit.py); a session in reasoning would let
    # a turn write outside its one fenced transaction.
    offenders = sorted(
        f"{module} imports {name}"
        for module, names in _all_imports().items()
        if module.startswith("frontdesk.reasoning")
        for name in names
        if name.startswith(("sqlalchemy", "frontdesk.platform.store"))
    )
    assert offenders == []
