"""The knowledge registry: a hand-edited file is refused with errors naming the file and the
snippet; a turn gets the snippets of its domains and action only, most specific first; a token cap
drops whole snippets; snippets past their review window are reported."""

from __future__ import annotations

import dataclasses
import json
import logging
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from frontdesk.capabilities.policy import RoutingDecision
from frontdesk.context.knowledge import KnowledgeRegistry, Snippet, load_pack_knowledge
from frontdesk.errors import ConfigError

TODAY = date(2026, 11, 30)


def entry(snippet_id: str = "tier-ladder", **fields: Any) -> dict[str, Any]:
    return {
        "id": snippet_id,
        "domains": ["tier"],
        "text": "Tiers follow lifetime earned points.",
        "source": "Loyalty handbook §3",
        "owner": "Programme manager",
        "reviewed_at": "2026-11-02",
        "version": 1,
        **fields,
    }


def write(tmp_path: Path, *entries: dict[str, Any], **top: Any) -> Path:
    path = tmp_path / "knowledge.json"
    path.write_text(json.dumps({"snippets": list(entries), **top}), encoding="utf-8")
    return path


def load(tmp_path: Path, *entries: dict[str, Any], **top: Any) -> KnowledgeRegistry:
    return KnowledgeRegistry.load(write(tmp_path, *entries, **top), today=TODAY)


def snippet(snippet_id: str, domains: set[str], text: str = "A note.", **fields: Any) -> Snippet:
    defaults: dict[str, Any] = {"source": "handbook", "owner": "ops", "reviewed_at": date(2026, 11, 1), "version": 1}
    return Snippet(id=snippet_id, domains=frozenset(domains), text=text, **{**defaults, **fields})


def turn(intent: str, *domains: str) -> RoutingDecision:
    return RoutingDecision(intent, frozenset(domains), 0.85, "idle")


# -- loading


def test_a_valid_file_loads_into_frozen_snippets_with_the_default_review_window(tmp_path):
    registry = load(tmp_path, entry(actions=["adjust"], text="  Tiers follow\n   lifetime earned points.  "))

    (loaded,) = registry.snippets
    assert loaded == Snippet(
        id="tier-ladder",
        domains=frozenset({"tier"}),
        actions=frozenset({"adjust"}),
        text="Tiers follow lifetime earned points.",  # one line in the prompt
        source="Loyalty handbook §3",
        owner="Programme manager",
        reviewed_at=date(2026, 11, 2),
        version=1,
        review_days=180,
    )
    assert loaded.line() == "[tier-ladder v1] Tiers follow lifetime earned points."
    assert loaded.ref == "tier-ladder@1"
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.version = 2  # type: ignore[misc]  # the point: a frozen snippet refuses the write


@pytest.mark.parametrize(
    ("entries", "top", "problem"),
    [
        ([entry("a"), entry("b"), entry("a")], {}, "snippet 'a': duplicate id"),
        ([entry(text="   ")], {}, "snippet 'tier-ladder': text: String should have at least 1 character"),
        ([entry(version=0)], {}, "snippet 'tier-ladder': version: Input should be greater than or equal to 1"),
        ([entry(version="2")], {}, "snippet 'tier-ladder': version: Input should be a valid integer"),
        ([entry(domains=[])], {}, "snippet 'tier-ladder': domains: List should have at least 1 item"),
        ([entry(reviewed_at="2026-12-05")], {}, "snippet 'tier-ladder': reviewed_at 2026-12-05 is in the future"),
        ([entry(reviewd_at="2026-11-01")], {}, "snippet 'tier-ladder': unknown field 'reviewd_at'"),
        ([{k: v for k, v in entry().items() if k != "owner"}], {}, "snippet 'tier-ladder': missing field 'owner'"),
        ([{k: v for k, v in entry().items() if k != "id"}], {}, "snippet #1 (no usable id): missing field 'id'"),
        ([entry("Tier Ladder")], {}, "snippet 'Tier Ladder': id: String should match pattern"),
        ([entry()], {"notes": "draft"}, "file: unknown field 'notes'"),
        (
            [entry(text="Points expire. " * 60)],
            {},
            "snippet 'tier-ladder': 187 tokens, over the limit of 160; split it",
        ),
    ],
)
def test_a_bad_file_is_refused_naming_the_file_and_the_snippet(tmp_path, entries, top, problem):
    path = write(tmp_path, *entries, **top)

    with pytest.raises(ConfigError) as refused:
        KnowledgeRegistry.load(path, today=TODAY)

    assert str(path) in refused.value.message
    assert problem in refused.value.message


def test_every_problem_in_a_file_is_listed_at_once(tmp_path):
    path = write(tmp_path, entry("a", version=0), entry("b"), entry("c", text="", owner=""))

    with pytest.raises(ConfigError) as refused:
        KnowledgeRegistry.load(path, today=TODAY)

    assert refused.value.details == [
        "snippet 'a': version: Input should be greater than or equal to 1",
        "snippet 'c': text: String should have at least 1 character",
        "snippet 'c': owner: String should have at least 1 character",
    ]


def test_a_review_dated_tomorrow_is_accepted_for_reviewers_ahead_of_the_servers_time_zone(tmp_path):
    assert load(tmp_path, entry(reviewed_at="2026-12-01")).snippets[0].reviewed_at == date(2026, 12, 1)


def test_a_file_that_is_not_json_is_refused_with_its_name(tmp_path):
    path = tmp_path / "knowledge.json"
    path.write_text('{"snippets": [', encoding="utf-8")

    with pytest.raises(ConfigError, match=rf"knowledge file {path} is not valid JSON"):
        KnowledgeRegistry.load(path, today=TODAY)


# -- selecting for a turn

ADJUST = snippet("manual-adjust-audit", {"member"}, actions=frozenset({"adjust"}))
TIER_LADDER = snippet("tier-ladder", {"tier", "member"})
MEMBER_STATUS = snippet("member-status", {"member"})
VOUCHER_EXPIRY = snippet("voucher-expiry", {"voucher"})
REGISTRY = KnowledgeRegistry([MEMBER_STATUS, TIER_LADDER, ADJUST, VOUCHER_EXPIRY])


def ids(snippets: list[Snippet]) -> list[str]:
    return [s.id for s in snippets]


def test_a_turn_gets_only_the_snippets_of_its_domains():
    assert ids(REGISTRY.select(turn("detail", "voucher"))) == ["voucher-expiry"]
    assert ids(REGISTRY.select(turn("list", "tier"))) == ["tier-ladder"]
    assert ids(REGISTRY.select(turn("list", "campaign"))) == []


def test_a_snippet_for_an_action_shows_only_on_turns_with_that_action():
    assert "manual-adjust-audit" in ids(REGISTRY.select(turn("adjust", "member")))
    assert "manual-adjust-audit" not in ids(REGISTRY.select(turn("detail", "member")))


@pytest.mark.parametrize("decision", [turn("greeting"), turn("unknown", "member"), turn("detail")])
def test_greetings_unknown_turns_and_turns_without_domains_get_no_snippets(decision):
    assert REGISTRY.select(decision) == []


def test_the_order_is_most_specific_first_then_file_order():
    # The action's own note, then the note touching both routed domains, then the rest in file order.
    assert ids(REGISTRY.select(turn("adjust", "member", "tier"))) == [
        "manual-adjust-audit",
        "tier-ladder",
        "member-status",
    ]
    assert ids(REGISTRY.select(turn("detail", "member"))) == ["member-status", "tier-ladder"]


def test_the_token_cap_drops_whole_snippets_and_never_cuts_one():
    short = snippet("short", {"rule"}, "Stackable rules add up.")
    long = snippet("long", {"rule"}, "Of the matching non-stackable rules only the highest-priority one counts. " * 3)
    last = snippet("last", {"rule"}, "Rules of an ended campaign are frozen.")
    registry = KnowledgeRegistry([short, long, last])
    decision = turn("detail", "rule")
    cap = registry.tokens(short) + registry.tokens(last)
    assert registry.tokens(long) > registry.tokens(last)

    chosen = registry.select(decision, max_tokens=cap)

    assert chosen == [short, last]  # the long one did not fit; the shorter one after it did, whole
    assert ids(registry.select(decision, max_tokens=cap + registry.tokens(long))) == ["short", "long", "last"]
    assert registry.select(decision, max_tokens=registry.tokens(short) - 1) == []
    assert ids(registry.select(decision)) == ["short", "long", "last"]


# -- review windows


def test_a_snippet_is_stale_the_day_after_its_review_window_ends():
    reviewed = snippet("tier-ladder", {"tier"}, reviewed_at=date(2026, 6, 1), review_days=180)
    fresh = snippet("voucher-expiry", {"voucher"}, reviewed_at=date(2026, 11, 1))
    registry = KnowledgeRegistry([reviewed, fresh])

    assert reviewed.review_due == date(2026, 11, 28)
    assert registry.stale(date(2026, 11, 28)) == []
    assert registry.stale(date(2026, 11, 29)) == [reviewed]
    assert reviewed.days_overdue(date(2026, 12, 8)) == 10
    assert fresh.days_overdue(date(2026, 12, 8)) == 0


def test_a_pack_without_a_knowledge_file_has_no_registry(tmp_path):
    assert load_pack_knowledge(tmp_path) is None


def test_a_packs_stale_snippets_are_logged_at_load_and_still_served(tmp_path, caplog):
    (tmp_path / "data").mkdir()
    write(tmp_path / "data", entry("tier-ladder", reviewed_at="2026-01-10", review_days=90), entry("fresh"))

    with caplog.at_level(logging.WARNING, logger="frontdesk.context.knowledge.registry"):
        registry = load_pack_knowledge(tmp_path, today=TODAY)

    assert registry is not None
    assert ids(registry.select(turn("detail", "tier"))) == ["tier-ladder", "fresh"]
    assert [r.getMessage() for r in caplog.records] == [
        f"knowledge snippet tier-ladder@1 ({tmp_path / 'data' / 'knowledge.json'}) is 234 days past its review "
        "(owner: Programme manager)"
    ]
