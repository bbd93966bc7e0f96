"""The loyalty pack: a loyalty-programme back office reached over MCP (the service lives in ``server/``).

Unlike the print shop, its tools are not built in-process: the composition root connects the
pack's MCP server (setting ``mcp_servers``), wraps the server's tools, adds the staged rule flow
(``flow.py``) and admits all of them through ``POLICIES`` + the flow's policies.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frontdesk.capabilities.mcp import McpToolSource
from frontdesk.capabilities.policy import ToolPolicy
from frontdesk.capabilities.tools import Tool, ToolKind
from frontdesk.packs.loyalty.evidence import loyalty_evidence

DATA_DIR = Path(__file__).parent / "data"

PLAYBOOK = """\
# How to work (loyalty back office)
- You assist the loyalty programme's staff. Answer from tool results only; never invent ids, \
numbers, dates or names.
- To change anything, use the tools offered this turn. A tool marked "Needs the user's \
confirmation" only records the request: say exactly what will change and ask. Nothing has \
changed until confirm_pending_action ran after the user said yes; never say it is done before.
- Create or change rules step by step with the rule_draft_* tools. Ask for every value the user \
has not given; never fill one in yourself.
- Always end with `reply`."""

FALLBACK_TEXTS = {
    "en": "I could not verify that answer, so I'd rather not guess. Could you rephrase or narrow the request?",
    "vi": "Mình chưa kiểm chứng được câu trả lời nên không muốn đoán. Bạn có thể hỏi lại cụ thể hơn không?",
}


@dataclass(frozen=True)
class McpPack:
    """A pack whose tools come from an MCP server (plus in-process flow tools)."""

    name: str
    mcp_server: str  # the key in the ``mcp_servers`` setting
    lexicon: dict[str, Any]
    discovery_domains: frozenset[str]
    default_policy: dict[str, Any]
    playbook: str
    fallback_texts: dict[str, str]
    workflow_domains: dict[str, frozenset[str]] = field(default_factory=dict)
    # Where the router learns what things are called: domain -> the server's list tool. (Tiers
    # are named by the lexicon: their names are words such as "Gold".)
    name_sources: dict[str, str] = field(default_factory=dict)
    # What staff say when they want each tool: tool -> language -> phrases (the tool's card in
    # the tool index, ``capabilities/tool_index``).
    tool_phrases: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def policies(self) -> dict[str, ToolPolicy]:
        from frontdesk.packs.loyalty.flow import flow_policies
        from frontdesk.packs.loyalty.policies import POLICIES

        return {**POLICIES, **flow_policies()}

    def tools(self, source: McpToolSource, flow_tools: list[Tool]) -> list[Tool]:
        policies = self.policies()
        kinds: dict[str, ToolKind] = {name: "action" for name, policy in policies.items() if policy.writes}
        return [*source.tools(kinds=kinds, evidence=loyalty_evidence), *flow_tools]


def _data(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA_DIR / name).read_text(encoding="utf-8"))
    return data


def loyalty_pack() -> McpPack:
    from frontdesk.packs.loyalty.flow import WORKFLOW
    from frontdesk.packs.loyalty.policies import DISCOVERY_DOMAINS

    return McpPack(
        name="loyalty",
        mcp_server="loyalty",
        lexicon=_data("lexicon.json"),
        discovery_domains=DISCOVERY_DOMAINS,
        default_policy={
            "business_description": "A retail loyalty programme's back office, used by its staff.",
            "operator_language": "vi",
            "timezone": "Asia/Ho_Chi_Minh",
        },
        playbook=PLAYBOOK,
        fallback_texts=FALLBACK_TEXTS,
        workflow_domains={WORKFLOW: frozenset({"rule"})},
        name_sources={
            "campaign": "campaign_list",
            "rule": "rule_list",
            "reward": "reward_list",
            "segment": "segment_list",
            "member": "member_list",
        },
        tool_phrases=_data("tool_cards.json"),
    )
