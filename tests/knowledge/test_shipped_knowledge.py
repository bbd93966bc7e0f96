"""The knowledge every pack ships: re-reviewed in time, and still about tools, domains and
intents the pack really has. A failure here is a snippet to re-check with its owner, not a test
to relax (docs/knowledge.md says how to bump a reviewed snippet)."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

import pytest

import frontdesk.packs
from frontdesk.capabilities.policy import RoutingDecision, ToolPolicy
from frontdesk.context.knowledge import KNOWLEDGE_FILE, KnowledgeRegistry, load_pack_knowledge
from frontdesk.packs import MCP_PACKS, PACKS
from frontdesk.packs.loyalty import DATA_DIR as LOYALTY_DATA
from frontdesk.reasoning.agent import KNOWLEDGE_TOKEN_CAP

PACKS_DIR = Path(frontdesk.packs.__file__).parent
SHIPPED = sorted(path.parents[1].name for path in PACKS_DIR.glob(f"*/data/{KNOWLEDGE_FILE}"))
POLICIES: dict[str, dict[str, ToolPolicy]] = {
    **{name: dict(pack.policies) for name, pack in PACKS.items()},
    **{name: pack.policies() for name, pack in MCP_PACKS.items()},
}
# The intents each pack's router can produce (a snippet for any other intent would never show).
LOYALTY_ACTIONS = set(json.loads((LOYALTY_DATA / "lexicon.json").read_text(encoding="utf-8"))["actions"])
INTENTS: dict[str, set[str]] = {
    "loyalty": LOYALTY_ACTIONS | {"continue", "cancel", "submit"},  # reasoning/action_router.py, in a flow
    "catalog": {"browse", "detail_question", "capture", "post_capture", "human_request"},  # reasoning/router.py
}
TOOL_NAME = re.compile(r"`([^`]+)`")  # tool names are written in backticks, and only tool names


def registry(pack: str) -> KnowledgeRegistry:
    loaded = load_pack_knowledge(PACKS_DIR / pack)
    assert loaded is not None
    return loaded


def test_the_catalog_and_loyalty_packs_ship_knowledge():
    assert SHIPPED == ["catalog", "loyalty"]
    assert len(registry("loyalty").snippets) >= 10


def test_no_shipped_snippet_is_past_its_review_window():
    today = date.today()
    overdue = [
        f"{pack}/{s.id} v{s.version}: {s.days_overdue(today)} days overdue "
        f"(reviewed {s.reviewed_at}, window {s.review_days} days, owner {s.owner})"
        for pack in SHIPPED
        for s in registry(pack).stale(today)
    ]
    assert overdue == [], "re-check these with their owner, then bump reviewed_at:\n" + "\n".join(overdue)


@pytest.mark.parametrize("pack", SHIPPED)
def test_shipped_snippets_name_only_tools_domains_and_intents_their_pack_has(pack):
    assert pack in POLICIES, f"pack {pack} ships knowledge but is not registered in packs/__init__.py"
    tools = {*POLICIES[pack], "reply"}
    domains = {domain for policy in POLICIES[pack].values() for domain in policy.domains}

    rot: list[str] = []
    for s in registry(pack).snippets:
        rot += [f"{s.id}: tool `{name}` does not exist" for name in TOOL_NAME.findall(s.text) if name not in tools]
        rot += [f"{s.id}: domain {d!r} has no tool" for d in sorted(s.domains - domains)]
        rot += [f"{s.id}: intent {a!r} is never routed" for a in sorted(s.actions - INTENTS[pack])]

    assert rot == []


@pytest.mark.parametrize("pack", SHIPPED)
def test_every_shipped_snippet_reaches_the_prompt_of_a_turn_about_it(pack):
    """A snippet always crowded out by its neighbours under the agent's cap would never be read."""
    knowledge = registry(pack)
    unreachable = []
    for snippet in knowledge.snippets:
        intent = min(snippet.actions) if snippet.actions else "detail"
        decision = RoutingDecision(intent, snippet.domains, 0.85, "idle")
        if snippet not in knowledge.select(decision, KNOWLEDGE_TOKEN_CAP):
            unreachable.append(snippet.id)

    assert unreachable == []
