"""A scenario plays at a fixed moment (``at``, a Monday morning by default), so a reply about
"now", a weekday or a lead time is judged the same whatever day the eval runs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from frontdesk.errors import ConfigError
from frontdesk.evals import run_scenario
from frontdesk.evals.scenario import PLAYED_AT, Scenario, load_scenario

OPEN_NOW = {
    "name": "open-now",
    "rules": [
        {
            "match": "(?i)open now",
            "responses": [{"tool": "get_business_info", "args": {}}, {"reply": "Yes, we're open now."}],
        }
    ],
}


SHIPS = {"outcome": "replied", "claims_rejected": []}
REFUSED = {"claims_rejected": ["hours"], "fallback": True}  # "the hours say it is closed now"
SUNDAY = datetime(2026, 11, 1, 15, 17, tzinfo=UTC)  # 10:17 in New York, the print shop's time zone


def open_now(expect: dict[str, Any], **extra: Any) -> Scenario:
    turn = {"say": "are you open now?", "expect": expect}
    return Scenario.model_validate({"name": "open now?", "model": {"script": OPEN_NOW}, "turns": [turn], **extra})


async def test_open_now_ships_on_the_default_monday_morning_and_is_refused_on_a_sunday():
    # The print shop opens 09:00-18:00 on Mondays and is closed on Sundays.
    assert PLAYED_AT.weekday() == 0
    assert (await run_scenario(open_now(SHIPS))).failures == []
    assert (await run_scenario(open_now(REFUSED, at=SUNDAY))).failures == []
    assert (await run_scenario(open_now(SHIPS, at=SUNDAY))).failures != []  # the expectations tell them apart


def test_a_moment_without_its_time_zone_is_refused(tmp_path):
    path = tmp_path / "naive.yaml"
    path.write_text(
        "name: naive\nat: 2026-11-02T10:17:00\nmodel: {script: {name: s, default: [{reply: hi}]}}\n"
        "turns: [{say: hi}]\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="at"):
        load_scenario(path)
