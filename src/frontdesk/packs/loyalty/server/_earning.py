"""Which rules award how many points for a member's purchase: facts read from the database, then the
pure engine. Shared by ``rule_simulate_purchase`` (a dry run) and ``member_record_purchase``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from pydantic import TypeAdapter

from frontdesk.packs.loyalty.server.db import Database, Row, iso
from frontdesk.packs.loyalty.server.engine import VIETNAM, PurchaseFacts, criteria_failures, formula_points, with_tier
from frontdesk.packs.loyalty.server.models import Formula, Purchase, RuleCriteria

FORMULA = TypeAdapter[Formula](Formula)


@dataclass(frozen=True)
class Award:
    rule_id: str
    rule_name: str
    campaign_id: str
    formula_type: str
    formula_points: int
    points: int  # after the tier multiplier
    explanation: str

    def as_json(self) -> dict[str, object]:
        return {
            "rule_id": self.rule_id,
            "rule_name": self.rule_name,
            "campaign_id": self.campaign_id,
            "formula_type": self.formula_type,
            "formula_points": self.formula_points,
            "points": self.points,
            "explanation": self.explanation,
        }


@dataclass(frozen=True)
class Evaluation:
    awards: list[Award]
    skipped: list[dict[str, object]]
    tier_multiplier: float

    @property
    def total(self) -> int:
        return sum(award.points for award in self.awards)


def aware(moment: datetime) -> datetime:
    """Times without an offset are the programme's local time (Vietnam)."""
    return moment.replace(tzinfo=VIETNAM) if moment.tzinfo is None else moment


def member_facts(db: Database, member: Row, purchase: Purchase, at: datetime) -> PurchaseFacts:
    member_id = member["id"]
    earlier = db.rows(
        "SELECT occurred_at FROM purchases WHERE member_id = ? AND occurred_at <= ?", (member_id, iso(at))
    )
    counts = db.rows(
        "SELECT rule_id, COUNT(*) AS n, SUM(member_id = ?) AS mine FROM ledger "
        "WHERE kind = 'earn' AND rule_id IS NOT NULL GROUP BY rule_id",
        (member_id,),
    )
    birthdays: dict[str, set[int]] = {}
    for row in db.rows(
        "SELECT l.rule_id, substr(l.created_at, 1, 4) AS year FROM ledger l JOIN rules r ON r.id = l.rule_id "
        "WHERE l.member_id = ? AND r.formula_type = 'birthday_bonus'",
        (member_id,),
    ):
        birthdays.setdefault(row["rule_id"], set()).add(int(row["year"]))
    segments = db.rows("SELECT segment_id FROM segment_members WHERE member_id = ?", (member_id,))
    return PurchaseFacts(
        amount_vnd=purchase.amount_vnd,
        channel=purchase.channel,
        items=tuple(purchase.items),
        occurred_at=at,
        tier=member["tier"],
        segment_ids=frozenset(row["segment_id"] for row in segments),
        joined_on=datetime.fromisoformat(member["joined_at"]).astimezone(VIETNAM).date(),
        birthday=datetime.fromisoformat(member["birthday"]).date() if member["birthday"] else None,
        is_first_purchase=not earlier,
        history=tuple(datetime.fromisoformat(row["occurred_at"]).astimezone(VIETNAM).date() for row in earlier),
        awards_member={row["rule_id"]: int(row["mine"]) for row in counts},
        awards_total={row["rule_id"]: int(row["n"]) for row in counts},
        birthday_award_years=birthdays,
    )


def _campaign_failures(rule: Row, facts: PurchaseFacts, spent: int) -> list[str]:
    failures: list[str] = []
    day = facts.day.isoformat()
    if rule["start_date"] and day < rule["start_date"]:
        failures.append(f"campaign starts {rule['start_date']}")
    if rule["end_date"] and day > rule["end_date"]:
        failures.append(f"campaign ended {rule['end_date']}")
    channels = json.loads(rule["channels"])
    if channels and facts.channel not in channels:
        failures.append(f"campaign does not run on {facts.channel}")
    if rule["budget_points"] is not None and spent >= rule["budget_points"]:
        failures.append("campaign points budget used up")
    return failures


def evaluate(db: Database, facts: PurchaseFacts) -> Evaluation:
    """Awards of every active rule of every active campaign for the purchase, best priority first."""
    multiplier = float(db.scalar("SELECT earn_multiplier FROM tiers WHERE code = ?", (facts.tier,)))
    rules = db.rows(
        "SELECT r.*, c.start_date, c.end_date, c.channels, c.budget_points, "
        "(SELECT COALESCE(SUM(points), 0) FROM ledger WHERE campaign_id = c.id AND kind = 'earn') AS spent "
        "FROM rules r JOIN campaigns c ON c.id = r.campaign_id "
        "WHERE r.status = 'active' AND c.status = 'active' ORDER BY r.priority DESC, r.id"
    )
    awards: list[Award] = []
    skipped: list[dict[str, object]] = []
    exclusive_taken: str | None = None
    for rule in rules:
        criteria = RuleCriteria.model_validate_json(rule["criteria"])
        failures = _campaign_failures(rule, facts, rule["spent"]) + criteria_failures(rule["id"], criteria, facts)
        if failures:
            skipped.append({"rule_id": rule["id"], "reasons": failures})
            continue
        points, explanation = formula_points(rule["id"], FORMULA.validate_json(rule["formula"]), facts)
        if points <= 0:
            skipped.append({"rule_id": rule["id"], "reasons": [explanation]})
            continue
        if not rule["stackable"]:
            if exclusive_taken is not None:
                skipped.append({"rule_id": rule["id"], "reasons": [f"exclusive rule {exclusive_taken} applies"]})
                continue
            exclusive_taken = rule["id"]
        awarded = with_tier(points, multiplier)
        awards.append(
            Award(rule["id"], rule["name"], rule["campaign_id"], rule["formula_type"], points, awarded, explanation)
        )
    return Evaluation(awards, skipped, multiplier)
