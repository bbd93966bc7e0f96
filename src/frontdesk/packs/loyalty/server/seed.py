"""Demo data written on first start: a coffee-and-retail chain's loyalty programme.

Deterministic (a fixed random seed and a fixed "seed day"), so every fresh database holds the same
ids and numbers: 4 tiers, 6 campaigns in every state, 15 rules covering the 8 formula types,
10 rewards, 120 members with purchases and point ledgers, 20 vouchers and 6 segments.
"""

from __future__ import annotations

import random
from datetime import timedelta

from frontdesk.packs.loyalty.server import _seed_data as data
from frontdesk.packs.loyalty.server._seed_data import SEED_NOW
from frontdesk.packs.loyalty.server._seed_members import history, members
from frontdesk.packs.loyalty.server.db import Database, dumps, iso
from frontdesk.packs.loyalty.server.models import RuleDefinition, SegmentCriteria
from frontdesk.packs.loyalty.server.segments import refresh_members


def seed(db: Database) -> None:
    """Fill an empty database; runs inside the caller's transaction."""
    rng = random.Random(20261101)
    now = iso(SEED_NOW)
    for code, name, rank, min_points, multiplier, benefits in data.TIERS:
        db.insert(
            "tiers",
            {
                "code": code,
                "name": name,
                "rank": rank,
                "min_points": min_points,
                "earn_multiplier": multiplier,
                "benefits": dumps(benefits),
            },
        )
    campaign_ids = [_campaign(db, row, now) for row in data.CAMPAIGNS]
    rule_ids = [_rule(db, campaign_ids[index], definition, now) for index, definition in data.RULES]
    reward_ids = [_reward(db, row, campaign_ids, now) for row in data.REWARDS]
    member_ids = members(db, rng)
    for member_id in member_ids:
        history(db, rng, member_id, rule_ids[0], campaign_ids[0], reward_ids)
    _vouchers(db, rng, member_ids, campaign_ids)
    _segments(db, rng, member_ids, now)


def _campaign(db: Database, row: data.CampaignRow, now: str) -> str:
    name, description, status, start, end, budget, channels = row
    campaign_id = db.next_id("cmp")
    db.insert(
        "campaigns",
        {
            "id": campaign_id,
            "name": name,
            "description": description,
            "status": status,
            "start_date": start,
            "end_date": end,
            "budget_points": budget,
            "channels": dumps(channels),
            "created_at": now,
            "updated_at": now,
        },
    )
    return campaign_id


def _rule(db: Database, campaign_id: str, definition: RuleDefinition, now: str) -> str:
    rule_id = db.next_id("rul")
    db.insert(
        "rules",
        {
            "id": rule_id,
            "campaign_id": campaign_id,
            "name": definition.name,
            "description": definition.description,
            "status": definition.status,
            "priority": definition.priority,
            "stackable": int(definition.stackable),
            "formula_type": definition.formula.type,
            "formula": dumps(definition.formula.model_dump(mode="json")),
            "criteria": dumps(definition.criteria.model_dump(mode="json", exclude_defaults=True)),
            "created_at": now,
            "updated_at": now,
        },
    )
    return rule_id


def _reward(db: Database, row: data.RewardRow, campaign_ids: list[str], now: str) -> str:
    name, description, kind, cost, value, stock, min_tier, status, campaign_index = row
    reward_id = db.next_id("rwd")
    db.insert(
        "rewards",
        {
            "id": reward_id,
            "name": name,
            "description": description,
            "kind": kind,
            "points_cost": cost,
            "value_vnd": value,
            "stock": stock,
            "min_tier": min_tier,
            "status": status,
            "campaign_id": None if campaign_index is None else campaign_ids[campaign_index],
            "voucher_discount_vnd": value if kind == "voucher" else None,
            "created_at": now,
            "updated_at": now,
        },
    )
    return reward_id


def _vouchers(db: Database, rng: random.Random, members: list[str], campaigns: list[str]) -> None:
    statuses = ["issued"] * 12 + ["redeemed"] * 4 + ["revoked"] * 2 + ["expired"] * 2
    for n, status in enumerate(statuses):
        percent = n % 3 == 0
        issued = SEED_NOW - timedelta(days=rng.randint(5, 60))
        expires = (
            SEED_NOW - timedelta(days=3) if status == "expired" else SEED_NOW + timedelta(days=rng.randint(60, 240))
        )
        db.insert(
            "vouchers",
            {
                "id": db.next_id("vch"),
                "code": data.voucher_code(rng),
                "member_id": rng.choice(members),
                "campaign_id": campaigns[[0, 3, 4][n % 3]],
                "discount_type": "percent" if percent else "amount",
                "discount_value": rng.choice([10, 15, 20]) if percent else rng.choice([50_000, 100_000]),
                "min_spend_vnd": rng.choice([0, 200_000, 500_000]),
                "max_discount_vnd": 100_000 if percent else None,
                # the last one is past its expiry but not yet marked: work for voucher_expire_overdue
                "status": "issued" if n == len(statuses) - 1 else status,
                "issued_at": iso(issued),
                "expires_at": iso(expires),
                "redeemed_at": iso(issued + timedelta(days=2)) if status == "redeemed" else None,
                "order_ref": f"POS-V{n:03d}" if status == "redeemed" else None,
                "discount_applied_vnd": 50_000 if status == "redeemed" else None,
                "revoke_reason": "Issued by mistake" if status == "revoked" else None,
            },
        )


def _segments(db: Database, rng: random.Random, members: list[str], now: str) -> None:
    for name, description, criteria in data.DYNAMIC_SEGMENTS:
        segment_id = db.next_id("seg")
        checked = SegmentCriteria.model_validate(criteria)
        db.insert(
            "segments",
            {
                "id": segment_id,
                "name": name,
                "description": description,
                "kind": "dynamic",
                "criteria": dumps(checked.model_dump(mode="json", exclude_defaults=True)),
                "created_at": now,
                "updated_at": now,
            },
        )
        refresh_members(db, segment_id, checked, SEED_NOW)
    for (name, description), size in zip(data.STATIC_SEGMENTS, (5, 12), strict=True):
        segment_id = db.next_id("seg")
        db.insert(
            "segments",
            {
                "id": segment_id,
                "name": name,
                "description": description,
                "kind": "static",
                "criteria": None,
                "created_at": now,
                "updated_at": now,
            },
        )
        for member_id in sorted(rng.sample(members, size)):
            db.insert("segment_members", {"segment_id": segment_id, "member_id": member_id, "added_at": now})
