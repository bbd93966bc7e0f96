"""The policy of every loyalty tool, declared (never derived from a tool's name).

Domains are what a request must be about for the tool to be offered. The first is the tool's
home: a tool that reads two things (a campaign's rules: home ``campaign``, also ``rule``) is
offered when a turn is about its home alone or about both, so "which rules does campaign X have"
finds it while "pause campaign X" does not carry every campaign-and-something tool along (that
kept a single-domain bundle under the chat slot's schema budget). Unsure turns see only the
``entry`` reads: each domain's list and search tools.

Writes outside a flow are offered in the ``idle`` phase only, and only to the router actions
they declare ("pause" gets ``campaign_pause``, not every campaign write); a side question during
a flow never brings them in. Anything destructive, or that moves many members' points or
vouchers at once, needs an explicit confirmation turn (``capabilities.confirmation``).
``rule_create`` and ``rule_update`` take the whole rule model (~2,500 tokens of schema): they are
run by the staged rule flow's submit step, never offered to the model directly (``STAGED_ONLY``).
"""

from __future__ import annotations

from frontdesk.capabilities.policy import ACTION_FAMILIES, Operation, Risk, ToolPolicy

IDLE = frozenset({"idle"})
STAGED_ONLY = frozenset({"staged_submit"})  # no router ever produces this phase


def read(home: str, *also: str) -> ToolPolicy:
    return ToolPolicy(frozenset({home, *also}), "read", home=home, discovery=False)


def entry(home: str) -> ToolPolicy:
    """A list or search read: where an unsure turn may start looking (offered on unknown turns)."""
    return ToolPolicy(frozenset({home}), "read", home=home)


def write(
    operation: Operation,
    home: str,
    *also: str,
    actions: tuple[str, ...],
    risk: Risk = "medium",
    confirm: bool = False,
    phases: frozenset[str] = IDLE,
    family: str | None = None,
) -> ToolPolicy:
    """``family``: the kind of change (``ACTION_FAMILIES``); by default its first action's."""
    return ToolPolicy(
        frozenset({home, *also}),
        operation,
        risk,
        phases,
        requires_confirmation=confirm,
        home=home,
        actions=frozenset(actions),
        family=family or ACTION_FAMILIES[actions[0]],
    )


def destructive(operation: Operation, home: str, *also: str, actions: tuple[str, ...]) -> ToolPolicy:
    return write(operation, home, *also, actions=actions, risk="high", confirm=True)


POLICIES: dict[str, ToolPolicy] = {
    # -- campaign
    "campaign_list": entry("campaign"),
    "campaign_search": entry("campaign"),
    "campaign_get": read("campaign"),
    "campaign_create": write("create", "campaign", actions=("create",)),
    "campaign_update": write("update", "campaign", actions=("update", "extend")),
    "campaign_delete": destructive("delete", "campaign", actions=("delete",)),
    "campaign_activate": write("update", "campaign", confirm=True, actions=("activate",)),
    "campaign_pause": write("update", "campaign", actions=("pause", "deactivate")),
    "campaign_end": destructive("update", "campaign", actions=("end",)),
    "campaign_clone": write("create", "campaign", actions=("clone",)),
    "campaign_list_rules": read("campaign", "rule"),
    "campaign_list_rewards": read("campaign", "reward"),
    # -- rule
    "rule_list": entry("rule"),
    "rule_search": entry("rule"),
    "rule_get": read("rule"),
    "rule_create": write("create", "rule", phases=STAGED_ONLY, actions=("create",)),
    "rule_update": write("update", "rule", phases=STAGED_ONLY, actions=("update",)),
    "rule_delete": destructive("delete", "rule", actions=("delete",)),
    "rule_activate": write("update", "rule", actions=("activate",)),
    "rule_deactivate": write("update", "rule", actions=("deactivate", "pause")),
    "rule_clone": write("create", "rule", "campaign", actions=("clone",)),
    "rule_set_priority": write("update", "rule", actions=("update", "prioritize")),
    "rule_list_formula_types": read("rule"),
    "rule_get_formula_schema": read("rule"),
    # The staged flow validates each step through these itself; staff may also ask outside it
    # ("is this formula valid?"), and their schemas are small (free-form JSON to check).
    "rule_validate_formula": read("rule"),
    "rule_validate_criteria": read("rule", "segment"),
    "rule_preview_points": read("rule"),
    "rule_simulate_purchase": read("rule", "member"),
    # -- reward
    "reward_list": entry("reward"),
    "reward_search": entry("reward"),
    "reward_get": read("reward"),
    "reward_create": write("create", "reward", actions=("create",)),
    "reward_update": write("update", "reward", actions=("update",)),
    "reward_delete": destructive("delete", "reward", actions=("delete",)),
    "reward_activate": write("update", "reward", actions=("activate",)),
    "reward_deactivate": write("update", "reward", actions=("deactivate", "pause")),
    "reward_restock": write("update", "reward", actions=("restock",)),
    "reward_redeem": write("create", "reward", "member", confirm=True, actions=("redeem",)),
    "reward_cancel_redemption": destructive("update", "reward", "member", actions=("revoke",)),
    "reward_list_redemptions": read("reward", "member"),
    # -- member
    "member_list": read("member"),
    "member_search": entry("member"),
    "member_get": read("member"),
    "member_get_by_phone": entry("member"),
    "member_create": write("create", "member", actions=("create", "enrol")),
    "member_update": write("update", "member", actions=("update",)),
    "member_deactivate": destructive("update", "member", actions=("deactivate",)),
    "member_reactivate": write("update", "member", actions=("activate",)),
    "member_list_vouchers": read("member", "voucher"),
    "member_list_segments": read("member", "segment"),
    "member_list_redemptions": read("member", "reward"),
    "member_record_purchase": write("create", "member", confirm=True, actions=("record",)),
    "member_earn_points": write("update", "member", confirm=True, actions=("earn", "adjust")),
    "member_redeem_points": write("update", "member", confirm=True, actions=("redeem",)),
    "member_adjust_points": write("update", "member", risk="high", confirm=True, actions=("adjust",)),
    "member_transfer_points": write("update", "member", risk="high", confirm=True, actions=("transfer",)),
    "member_get_balance": read("member"),
    "member_get_ledger": read("member"),
    "member_list_purchases": read("member"),
    # -- tier
    "tier_list": entry("tier"),
    "tier_get": read("tier"),
    "tier_update": write("update", "tier", risk="high", confirm=True, actions=("update",)),
    "tier_preview_member": read("tier", "member"),
    "tier_evaluate_member": write("update", "tier", "member", actions=("evaluate",)),
    "tier_evaluate_all": write("update", "tier", risk="high", confirm=True, actions=("evaluate",)),
    "tier_set_member": write("update", "tier", "member", confirm=True, actions=("assign", "update")),
    "tier_unlock_member": write("update", "tier", "member", actions=("unlock",)),
    "tier_list_members": read("tier", "member"),
    "tier_get_history": read("tier", "member"),
    # -- voucher
    "voucher_list": read("voucher"),
    "voucher_get": read("voucher"),
    "voucher_get_by_code": entry("voucher"),
    "voucher_issue": write("create", "voucher", "member", actions=("issue", "create")),
    "voucher_issue_to_segment": write("create", "voucher", "segment", risk="high", confirm=True, actions=("issue",)),
    "voucher_validate": read("voucher"),
    "voucher_redeem": write("update", "voucher", confirm=True, actions=("redeem",)),
    "voucher_revoke": destructive("update", "voucher", actions=("revoke",)),
    "voucher_extend": write("update", "voucher", actions=("extend",)),
    "voucher_expire_overdue": write("update", "voucher", risk="high", confirm=True, actions=("expire",)),
    # -- segment
    "segment_list": entry("segment"),
    "segment_get": read("segment"),
    "segment_create": write("create", "segment", actions=("create",)),
    "segment_update": write("update", "segment", actions=("update",)),
    "segment_delete": destructive("delete", "segment", actions=("delete",)),
    "segment_list_members": read("segment", "member"),
    "segment_add_members": write("update", "segment", "member", actions=("add", "update")),
    "segment_remove_members": write("update", "segment", "member", actions=("remove", "update")),
    "segment_refresh": write("update", "segment", actions=("refresh", "evaluate")),
    "segment_preview": read("segment"),
    "segment_check_member": read("segment", "member"),
    # -- report (each also reachable from the domain it reports on)
    "report_campaign_performance": read("report", "campaign"),
    "report_points_liability": read("report", "member"),
    "report_tier_distribution": read("report", "tier"),
    "report_redemption_summary": read("report", "reward"),
    "report_voucher_usage": read("report", "voucher"),
    "report_top_members": read("report", "member"),
    "report_points_flow": read("report", "member"),
    "report_segment_overview": read("report", "segment"),
    "report_rule_effectiveness": read("report", "rule"),
    "report_member_activity": read("report", "member"),
}

# What an unknown or unsure turn may still use: low-risk reads of these domains.
DISCOVERY_DOMAINS = frozenset({"campaign", "rule", "reward", "tier", "voucher", "segment", "report", "member"})
