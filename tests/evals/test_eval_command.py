"""``frontdesk eval`` as CI runs it: the installed console script, in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

FRONTDESK = shutil.which("frontdesk", path=str(Path(sys.executable).parent)) or shutil.which("frontdesk")
REPO = Path(__file__).resolve().parents[2]

PASSING = """\
name: {name}
model:
  script:
    name: hello
    default:
      - reply: "Hello from the print shop!"
turns:
  - say: hello
    expect:
      reply_contains: ["print shop"]
      route_intent: greeting
      outcome: replied
"""
FAILING = """\
name: expects a unicorn
model:
  script: {default: [{reply: "Hello from the print shop!"}]}
turns:
  - say: hello
    expect:
      reply_contains: ["unicorn"]
"""
TYPO = """\
name: has a typo
model:
  script: {default: [{reply: "Hello!"}]}
turns:
  - say: hello
    expect:
      reply_contain: ["Hello"]
"""


@pytest.fixture
def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    # COLUMNS: rich wraps at 80 columns when not on a terminal, which would split the lines we read.
    return {**clean, "FRONTDESK_CONFIG": "/nonexistent/frontdesk.toml", "PYTHONUNBUFFERED": "1", "COLUMNS": "250"}


def frontdesk_eval(
    *args: str, env: dict[str, str], cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    assert FRONTDESK, "the frontdesk console script is not installed next to this Python"
    return subprocess.run(
        [FRONTDESK, "eval", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout, check=False
    )


def write(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for stem, text in files.items():
        (folder / f"{stem}.yaml").write_text(text, encoding="utf-8")
    return folder


def test_passing_scenario_exits_0_and_says_so(tmp_path, env):
    write(tmp_path / "scenarios", greets=PASSING.format(name="greets back"))

    done = frontdesk_eval("scenarios/greets.yaml", env=env, cwd=tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "✓ [1/1] greets back" in done.stdout
    assert "1 passed, 0 failed (3 checks)" in done.stdout


def test_failed_expectation_exits_1_and_names_the_check(tmp_path, env):
    write(tmp_path / "scenarios", unicorn=FAILING)

    done = frontdesk_eval("scenarios", env=env, cwd=tmp_path)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "✗ [1/1] expects a unicorn" in done.stdout
    assert "turn 1: reply does not contain 'unicorn'" in done.stdout
    assert "0 passed, 1 failed" in done.stdout


def test_unknown_key_is_an_error_naming_the_file_and_the_key_and_the_rest_still_run(tmp_path, env):
    write(tmp_path / "scenarios", greets=PASSING.format(name="greets back"), typo=TYPO)

    done = frontdesk_eval("scenarios", env=env, cwd=tmp_path)

    assert done.returncode == 1, done.stdout + done.stderr
    (error,) = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith("error:")]
    assert "typo.yaml" in error
    assert "expect.reply_contain" in error
    assert "1 passed, 1 failed" in done.stdout


def test_junit_report_has_one_testcase_per_scenario_and_a_failure_for_the_failing_one(tmp_path, env):
    write(tmp_path / "scenarios", greets=PASSING.format(name="greets back"), unicorn=FAILING)

    done = frontdesk_eval("scenarios", "--junit", "reports/out.xml", env=env, cwd=tmp_path)

    assert done.returncode == 1, done.stdout + done.stderr
    suite = ET.parse(tmp_path / "reports" / "out.xml").getroot()
    assert suite.tag == "testsuite"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "0")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {"greets back", "expects a unicorn"}
    assert list(cases["greets back"]) == []
    (failure,) = list(cases["expects a unicorn"])
    assert failure.tag == "failure"
    assert "reply does not contain 'unicorn'" in (failure.get("message") or "")
    assert cases["expects a unicorn"].get("classname", "").endswith("unicorn.yaml")


def test_folder_without_scenario_files_exits_2_with_a_one_line_error(tmp_path, env):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a scenario")

    done = frontdesk_eval("empty", env=env, cwd=tmp_path)

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["error: no scenario files (*.yaml) under empty"]
    assert done.stdout == ""


def test_k_runs_only_the_scenarios_whose_name_matches(tmp_path, env):
    write(tmp_path / "scenarios", a=PASSING.format(name="alpha greets"), b=PASSING.format(name="beta greets"))

    done = frontdesk_eval("scenarios", "-k", "ALPHA", env=env, cwd=tmp_path)
    nothing = frontdesk_eval("scenarios", "-k", "gamma", env=env, cwd=tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "alpha greets" in done.stdout
    assert "beta greets" not in done.stdout
    assert "1 passed, 0 failed" in done.stdout
    assert nothing.returncode == 2
    assert "error: no scenario matched 'gamma'" in nothing.stderr


def test_shipped_scenarios_all_pass(env):
    shipped = [p for p in (REPO / "scenarios").rglob("*") if p.suffix in (".yaml", ".yml")]
    assert shipped, "the repository ships scenarios"

    done = frontdesk_eval("scenarios/", env=env, cwd=REPO, timeout=600)

    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(shipped)} passed, 0 failed" in done.stdout
