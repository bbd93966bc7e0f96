"""Eval scenarios of the loyalty pack: its service built per scenario and reached over MCP, the
checks that read the service and the staged flow's draft, and the shipped ``scenarios/loyalty/``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from frontdesk.errors import ConfigError
from frontdesk.evals import load_scenario, run_scenario, scenario_files
from frontdesk.evals.scenario import Expect, Scenario

REPO = Path(__file__).resolve().parents[2]
SHIPPED = scenario_files([REPO / "scenarios" / "loyalty"])

START = {
    "match": "(?i)create a new rule",
    "responses": [
        {"tool": "rule_draft_start", "args": {"campaign_id": "cmp_0003", "name": "Eval probe rule"}},
        {"reply": "Draft opened. Which formula type?"},
    ],
}


def scenario(turns: list[dict[str, Any]], *, rules: list[dict[str, Any]] | None = None, **extra: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "name": "probe",
            "pack": "loyalty",
            "model": {"script": {"name": "probe", "rules": rules or [START], "default": [{"reply": "OK."}]}},
            "turns": turns,
            **extra,
        }
    )


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_repository_ships_loyalty_scenarios():
    assert len(SHIPPED) >= 6


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
async def test_shipped_loyalty_scenario_passes(path: Path):
    result = await run_scenario(load_scenario(path))

    assert result.error is None, result.error
    assert result.failures == [], "\n".join(result.failures)
    assert result.turns == len(load_scenario(path).turns)


async def test_service_and_draft_checks_pass_on_what_the_service_and_the_store_hold():
    result = await run_scenario(
        scenario(
            [
                {
                    "say": "Create a new rule in campaign cmp_0003 called Eval probe rule",
                    "expect": {
                        "tools_called": ["rule_draft_start"],
                        "draft_open": True,
                        "draft_phase": "formula_type",
                        "offered_among": {"tools": ["rule_draft_set_streak", "rule_draft_start"],
                                          "exactly": ["rule_draft_start"]},
                        "service": [
                            {"tool": "campaign_get", "args": {"campaign_id": "cmp_0003"}, "path": "campaign.name",
                             "contains": ["Weekend Double Points"]},
                            {"tool": "rule_list", "args": {"campaign_id": "cmp_0003"}, "path": "items",
                             "where": {"name": "Weekend x2"}, "count": 1},
                        ],
                    },
                }
            ]
        )
    )  # fmt: skip

    assert (result.error, result.failures) == (None, [])
    assert result.checks == 6  # 1 tool, 2 draft, 1 offered_among, 2 service (a fragment, a count)


async def test_failed_service_and_draft_checks_say_what_was_found():
    result = await run_scenario(
        scenario(
            [
                {
                    "say": "Create a new rule in campaign cmp_0003 called Eval probe rule",
                    "expect": {
                        "draft_phase": "review",
                        "tools_failed": ["rule_draft_start"],
                        "write_tools_offered": False,
                        "service": [
                            {"tool": "rule_list", "args": {"campaign_id": "cmp_0003"}, "path": "items",
                             "where": {"name": "Eval probe rule"}, "count": 1},
                            {"tool": "rule_get", "args": {"rule_id": "rul_0999"}, "contains": ["anything"]},
                            {"tool": "campaign_get", "args": {"campaign_id": "cmp_0003"}, "path": "campaign.nope",
                             "contains": ["x"]},
                        ],
                    },
                }
            ]
        )
    )  # fmt: skip

    assert result.error is None
    text = "\n".join(result.failures)
    assert "no open draft in phase 'review' (open: loyalty.create_rule in phase 'formula_type')" in text
    assert "no call to rule_draft_start failed (failed: none)" in text
    assert re.search(r"write tools offered: \[.*'rule_draft_start'.*\], expected none", text)
    assert "items where {'name': 'Eval probe rule'}, expected 1" in text
    assert 'service rule_get({"rule_id": "rul_0999"}) failed:' in text
    assert "no 'campaign.nope' in" in text


async def test_a_restart_turn_replaces_the_runtime_and_the_draft_survives():
    rules = [
        START,
        {
            "match": "(?i)fixed points",
            "responses": [
                {"tool": "rule_draft_choose_formula", "args": {"type": "fixed_points"}},
                {"reply": "How many points?"},
            ],
        },
    ]
    result = await run_scenario(
        scenario(
            [
                {"say": "Create a new rule in campaign cmp_0003 called Eval probe rule"},
                {
                    "say": "Use fixed points",
                    "restart": True,
                    "expect": {"route_phase": "formula_type", "draft_phase": "formula:fixed_points"},
                },
            ],
            rules=rules,
        )
    )

    assert (result.error, result.failures, result.turns) == (None, [], 2)


def broken(*, pack: str = "loyalty", say: str = '"yes"', expect: str = "draft_open: false") -> str:
    return (
        f"name: broken\npack: {pack}\nmodel: {{script: {{default: [{{reply: ok}}]}}}}\n"
        f"turns:\n  - say: {say}\n    expect: {{{expect}}}\n"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (broken(pack="loyalty-ish"), "unknown pack 'loyalty-ish' (known: catalog, loyalty)"),
        (broken(pack="catalog"), "turns [1]: `service`, `draft_open` and `draft_phase` need a pack with its own"),
        (broken(say="yes"), 'a message is text, got True: quote it in YAML (say: "yes")'),
        (broken(expect="service: [{tool: rule_list}]"), "a service check needs `count`, `contains` or `not_contains`"),
        (broken(expect="service: [{tool: rule_list, where: {name: x}}]"), "`where` selects items to count"),
        (broken(expect="offered_among: {tools: [rule_get], exactly: [rule_list]}"), "not among `tools`: ['rule_list']"),
    ],
    ids=["unknown-pack", "check-on-catalog", "bare-yes", "empty-check", "where-without-count", "offered-among"],
)
def test_invalid_loyalty_scenarios_are_errors_naming_the_problem(tmp_path, text, problem):
    path = write(tmp_path, text)

    with pytest.raises(ConfigError) as raised:
        load_scenario(path)

    assert str(path) in raised.value.message
    assert problem in raised.value.message


def test_every_expectation_key_is_documented_in_eval_md():
    rows = re.findall(r"^\| (`[a-z_]+`(?: / `[a-z_]+`)*) \|", (REPO / "docs" / "eval.md").read_text(), re.MULTILINE)
    documented = {key for row in rows for key in re.findall(r"`([a-z_]+)`", row)}

    assert set(Expect.model_fields) - documented == set()
