"""The policy of every loyalty tool, declared (never derived from a tool's name).

Domains are what a request must be about for the tool to be offered: a tool that reads two
things (a campaign's rules) names both, so "which rules does campaign X have" finds it through
either. Writes outside a flow are offered in the ``idle`` phase only; a side question during a
flow never brings them in. Anything destructive, or that moves many members' points or vouchers
at once, needs an explicit confirmation turn. ``rule_create`` and ``rule_update`` take the whole
rule model (~3,000 tokens of schema): they are run by the staged rule flow's submit step, never
offered to the model directly (``STAGED_ONLY``).
"""

from __future__ import annotations

from frontdesk.capabilities.policy import Operation, Risk, ToolPolicy

IDLE = frozenset({"idle"})
STAGED_ONLY = frozenset({"staged_submit"})  # no router ever produces this phase


def read(*domains: str) -> ToolPolicy:
    return ToolPolicy(frozenset(domains), "read")


def write(
    operation: Operation, *domains: str, risk: Risk = "medium", confirm: bool = False, phases: frozenset[str] = IDLE
) -> ToolPolicy:
    return ToolPolicy(frozenset(domains), operation, risk, phases, requires_confirmation=confirm)


def destructive(operation: Operation, *domains: str) -> ToolPolicy:
    return write(operation, *domains, risk="high", confirm=True)


POLICIES: dict[str, ToolPolicy] = {
    # -- campaign
    "campaign_list": read("campaign"),
    "campaign_search": read("campaign"),
    "campaign_get": read("campaign"),
    "campaign_create": write("create", "campaign"),
    "campaign_update": write("update", "campaign"),
    "campaign_delete": destructive("delete", "campaign"),
    "campaign_activate": write("update", "campaign", confirm=True),
    "campaign_pause": write("update", "campaign"),
    "campaign_end": destructive("update", "campaign"),
    "campaign_clone": write("create", "campaign"),
    "campaign_list_rules": read("campaign", "rule"),
    "campaign_list_rewards": read("campaign", "reward"),
    # -- rule
    "rule_list": read("rule"),
    "rule_search": read("rule"),
    "rule_get": read("rule"),
    "rule_create": write("create", "rule", phases=STAGED_ONLY),
    "rule_update": write("update", "rule", phases=STAGED_ONLY),
    "rule_delete": destructive("delete", "rule"),
    "rule_activate": write("update", "rule"),
    "rule_deactivate": write("update", "rule"),
    "rule_clone": write("create", "rule", "campaign"),
    "rule_set_priority": write("update", "rule"),
    "rule_list_formula_types": read("rule"),
    "rule_get_formula_schema": read("rule"),
    "rule_validate_formula": read("rule"),
    "rule_validate_criteria": read("rule", "segment"),
    "rule_preview_points": read("rule"),
    "rule_simulate_purchase": read("rule", "member"),
    # -- reward
    "reward_list": read("reward"),
    "reward_search": read("reward"),
    "reward_get": read("reward"),
    "reward_create": write("create", "reward"),
    "reward_update": write("update", "reward"),
    "reward_delete": destructive("delete", "reward"),
    "reward_activate": write("update", "reward"),
    "reward_deactivate": write("update", "reward"),
    "reward_restock": write("update", "reward"),
    "reward_redeem": write("create", "reward", "member", confirm=True),
    "reward_cancel_redemption": destructive("update", "reward", "member"),
    "reward_list_redemptions": read("reward", "member"),
    # -- member
    "member_list": read("member"),
    "member_search": read("member"),
    "member_get": read("member"),
    "member_get_by_phone": read("member"),
    "member_create": write("create", "member"),
    "member_update": write("update", "member"),
    "member_deactivate": destructive("update", "member"),
    "member_reactivate": write("update", "member"),
    "member_list_vouchers": read("member", "voucher"),
    "member_list_segments": read("member", "segment"),
    "member_list_redemptions": read("member", "reward"),
    "member_record_purchase": write("create", "member", confirm=True),
    "member_earn_points": write("update", "member", confirm=True),
    "member_redeem_points": write("update", "member", confirm=True),
    "member_adjust_points": write("update", "member", risk="high", confirm=True),
    "member_transfer_points": write("update", "member", risk="high", confirm=True),
    "member_get_balance": read("member"),
    "member_get_ledger": read("member"),
    "member_list_purchases": read("member"),
    # -- tier
    "tier_list": read("tier"),
    "tier_get": read("tier"),
    "tier_update": write("update", "tier", risk="high", confirm=True),
    "tier_preview_member": read("tier", "member"),
    "tier_evaluate_member": write("update", "tier", "member"),
    "tier_evaluate_all": write("update", "tier", risk="high", confirm=True),
    "tier_set_member": write("update", "tier", "member", confirm=True),
    "tier_unlock_member": write("update", "tier", "member"),
    "tier_list_members": read("tier", "member"),
    "tier_get_history": read("tier", "member"),
    # -- voucher
    "voucher_list": read("voucher"),
    "voucher_get": read("voucher"),
    "voucher_get_by_code": read("voucher"),
    "voucher_issue": write("create", "voucher", "member"),
    "voucher_issue_to_segment": write("create", "voucher", "segment", risk="high", confirm=True),
    "voucher_validate": read("voucher"),
    "voucher_redeem": write("update", "voucher", confirm=True),
    "voucher_revoke": destructive("update", "voucher"),
    "voucher_extend": write("update", "voucher"),
    "voucher_expire_overdue": write("update", "voucher", risk="high", confirm=True),
    # -- segment
    "segment_list": read("segment"),
    "segment_get": read("segment"),
    "segment_create": write("create", "segment"),
    "segment_update": write("update", "segment"),
    "segment_delete": destructive("delete", "segment"),
    "segment_list_members": read("segment", "member"),
    "segment_add_members": write("update", "segment", "member"),
    "segment_remove_members": write("update", "segment", "member"),
    "segment_refresh": write("update", "segment"),
    "segment_preview": read("segment"),
    "segment_check_member": read("segment", "member"),
    # -- report (each also reachable from the domain it reports on)
    "report_campaign_performance": read("report", "campaign"),
    "report_points_liability": read("report", "member", "tier"),
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
