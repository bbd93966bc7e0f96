"""Docs that users follow must match the code."""

from __future__ import annotations

import re
from pathlib import Path

from frontdesk.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def test_every_setting_is_documented_in_configuration_md():
    documented = set(re.findall(r"^\| `([a-z0-9_]+)` \|", (ROOT / "docs/configuration.md").read_text(), re.MULTILINE))
    assert set(Settings.model_fields) - documented == set()
    assert documented - set(Settings.model_fields) == set(), "docs list settings that do not exist"


def test_readme_keeps_exactly_two_setup_commands():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^python3 -m venv .venv && .*$", readme, re.MULTILINE)
    assert len(commands) == 2
    assert commands[0].endswith("frontdesk demo")
    assert "pytest" in commands[1]
    # .ci/run executes the line after this marker; it must be the test command
    assert readme.split("<!-- test-command -->")[1].split("\n")[2] == commands[1]
