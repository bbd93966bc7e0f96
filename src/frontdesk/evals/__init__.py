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
    results: list[ScenarioResult] = []
    for index, path in enumerate(files, start=1):
        try:
            scenario = load_scenario(path)
        except ConfigError as exc:
            result = ScenarioResult(path.stem, str(path), error=exc.message)
        else:
            if select and select.lower() not in f"{scenario.name} {path}".lower():
                continue
            result = await run_scenario(scenario, settings)
        results.append(result)
        show_progress(console, result, index, len(files))
    show_summary(console, results)
    if junit is not None:
        write_junit(junit, results)
    return results
