"""Showing eval results: a line per scenario as it finishes, a summary table, JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from frontdesk.evals.runner import ScenarioResult


def show_progress(console: Console, result: ScenarioResult, index: int, total: int) -> None:
    mark = "[green]✓[/green]" if result.passed else "[red]✗[/red]"
    console.print(
        f"{mark} \\[{index}/{total}] {escape(result.name)} [dim]({result.seconds:.1f} s, {result.checks} checks)[/dim]"
    )
    # Failure texts quote replies and file contents: never read them as markup.
    if result.error:
        console.print("    error: " + result.error, markup=False, highlight=False, style="red")
    for failure in result.failures:
        console.print("    • " + failure, markup=False, highlight=False)


def show_summary(console: Console, results: Sequence[ScenarioResult]) -> None:
    table = Table(title="frontdesk eval")
    table.add_column("scenario")
    table.add_column("turns", justify="right")
    table.add_column("checks", justify="right")
    table.add_column("time", justify="right")
    table.add_column("result")
    for r in results:
        verdict = "[green]pass[/green]" if r.passed else ("[red]error[/red]" if r.error else "[red]fail[/red]")
        table.add_row(escape(r.name), str(r.turns), str(r.checks), f"{r.seconds:.1f} s", verdict)
    console.print(table)
    failed = sum(not r.passed for r in results)
    checks = sum(r.checks for r in results)
    colour = "red" if failed else "green"
    console.print(f"[{colour}]{len(results) - failed} passed, {failed} failed[/{colour}] ({checks} checks)")


def write_junit(path: Path, results: Sequence[ScenarioResult]) -> None:
    suite = ET.Element(
        "testsuite",
        name="frontdesk-eval",
        tests=str(len(results)),
        failures=str(sum(bool(r.failures) and r.error is None for r in results)),
        errors=str(sum(r.error is not None for r in results)),
        time=f"{sum(r.seconds for r in results):.3f}",
    )
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=r.path or "scenarios", name=r.name, time=f"{r.seconds:.3f}")
        if r.error is not None:
            ET.SubElement(case, "error", message=r.error[:500]).text = r.error
        elif r.failures:
            ET.SubElement(case, "failure", message=r.failures[0][:500]).text = "\n".join(r.failures)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
