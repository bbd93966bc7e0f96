"""``frontdesk eval``: scenario files run through the real pipeline (docs/eval.md)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from frontdesk.errors import ConfigError
from frontdesk.evals.report import show_progress, show_summary, write_junit
from frontdesk.evals.runner import ScenarioResult, run_scenario
from frontdesk.evals.scenario import Scenario, load_scenario, scenario_files
from frontdesk.settings import Settings

__all__ = ["Scenario", "ScenarioResult", "load_scenario", "run_all", "run_scenario", "scenario_files"]


async def run_all(
    targets: Sequence[Path],
    *,
    settings: Settings | None = None,
    junit: Path | None = None,
    select: str | None = None,
    console: Console | None = None,
) -> list[ScenarioResult]:
    """Run every scenario found under ``targets``; a file that does not parse is a failed result."""
    console = console or Console()
    files = scenario_files(list(targets))
    if not files:
        raise ConfigError(f"no scenario files (*.yaml) under {', '.join(map(str, targets))}")
    chosen: list[tuple[Path, Scenario | ScenarioResult]] = []
    for path in files:
        try:
            scenario = load_scenario(path)
        except ConfigError as exc:
            if not select or select.lower() in str(path).lower():
                chosen.append((path, ScenarioResult(path.stem, str(path), error=exc.message)))
            continue
        if not select or select.lower() in f"{scenario.name} {path}".lower():
            chosen.append((path, scenario))
    results: list[ScenarioResult] = []
    for index, (_path, item) in enumerate(chosen, start=1):
        result = item if isinstance(item, ScenarioResult) else await run_scenario(item, settings)
        results.append(result)
        show_progress(console, result, index, len(chosen))
    show_summary(console, results)
    if junit is not None:
        write_junit(junit, results)
    return results
