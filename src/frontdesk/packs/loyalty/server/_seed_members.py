"""Demo members and their histories: purchases, earn entries, a few redemptions and goodwill adjustments,
adding up to a balance and lifetime points that match each member's tier."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta

from frontdesk.packs.loyalty.server import _seed_data as data
from frontdesk.packs.loyalty.server._seed_data import SEED_NOW
from frontdesk.packs.loyalty.server.db import Database, dumps, fold, iso

TIER_BANDS = {"bronze": (0, 999), "silver": (1_000, 4_999), "gold": (5_000, 14_999), "platinum": (15_000, 40_000)}


def members(db: Database, rng: random.Random) -> list[str]:
    ids: list[str] = []
    phones: set[str] = set()
    tiers = rng.choices(list(TIER_BANDS), weights=[45, 35, 28, 12], k=120)
    for n, tier in enumerate(tiers):
        name = data.english_name(rng) if n % 7 == 3 else data.vietnamese_name(rng)
        phone = f"09{rng.randrange(10**7, 10**8)}"
        while phone in phones:
            phone = f"09{rng.randrange(10**7, 10**8)}"
        phones.add(phone)
        member_id = db.next_id("mem")
        joined = date(2023, 1, 1) + timedelta(days=rng.randrange(0, 1_390))
        fresh = n % 20 == 7  # a few new members who have never bought anything
        db.insert(
            "members",
            {
                "id": member_id,
                "name": name,
                "phone": phone,
                "email": None if n % 5 == 0 else f"{fold(name).replace(' ', '.')}{n}@{rng.choice(data.MAIL)}",
                "birthday": (date(1965, 1, 1) + timedelta(days=rng.randrange(0, 14_600))).isoformat(),
                "city": rng.choice(data.CITIES),
                "tier": "bronze" if fresh else tier,
                "status": "inactive" if n % 40 == 11 else "active",
                "joined_at": iso(datetime.combine(joined, datetime.min.time(), UTC) + timedelta(hours=9)),
                "points_balance": 0,
                "lifetime_points": 0,
                "lifetime_spend_vnd": 0,
            },
        )
        if not fresh:
            ids.append(member_id)
    return ids


def history(
    db: Database, rng: random.Random, member_id: str, base_rule: str, base_campaign: str, rewards: list[str]
) -> None:
    """Purchases and ledger entries that add up to the member's tier: earn, a few redemptions, an adjustment."""
    member = db.row("SELECT tier, joined_at FROM members WHERE id = ?", (member_id,))
    assert member is not None
    low, high = TIER_BANDS[member["tier"]]
    target = rng.randint(max(low, 40), high)
    joined = datetime.fromisoformat(member["joined_at"])
    count = rng.randint(3, 9)
    cuts = sorted(rng.sample(range(1, target), count - 1)) if target > count else []
    shares = [b - a for a, b in zip([0, *cuts], [*cuts, target], strict=True)]
    span = max(int((SEED_NOW - joined).total_seconds()), 3_600)
    moments = sorted(joined + timedelta(seconds=rng.randrange(0, span)) for _ in shares)
    balance = lifetime = spend = 0
    for points, moment in zip(shares, moments, strict=True):
        amount = points * 10_000 + rng.randrange(0, 10) * 1_000
        category = rng.choice(data.CATEGORIES)
        purchase_id = db.next_id("pur", 6)
        db.insert(
            "purchases",
            {
                "id": purchase_id,
                "member_id": member_id,
                "order_ref": f"POS-{purchase_id[4:]}",
                "amount_vnd": amount,
                "channel": rng.choice(["store", "store", "app", "online", "zalo"]),
                "items": dumps([{"category": category, "amount_vnd": amount}]),
                "occurred_at": iso(moment),
                "points_awarded": points,
            },
        )
        balance, lifetime, spend = balance + points, lifetime + points, spend + amount
        _ledger(db, member_id, "earn", points, balance, "Purchase", moment, base_rule, base_campaign, purchase_id)
        if rng.random() < 0.25 and balance >= 500:
            reward = db.row("SELECT id, points_cost FROM rewards WHERE id = ?", (rng.choice(rewards[:5]),))
            assert reward is not None
            if reward["points_cost"] <= balance:
                redemption_id = db.next_id("rdm")
                db.insert(
                    "redemptions",
                    {
                        "id": redemption_id,
                        "member_id": member_id,
                        "reward_id": reward["id"],
                        "points": reward["points_cost"],
                        "status": "completed",
                        "created_at": iso(moment + timedelta(days=1)),
                    },
                )
                balance -= reward["points_cost"]
                later = moment + timedelta(days=1)
                cost = reward["points_cost"]
                _ledger(
                    db, member_id, "redeem", -cost, balance, "Reward redemption", later, redemption_id=redemption_id
                )
    if rng.random() < 0.15:
        balance += 100
        _ledger(
            db, member_id, "adjust", 100, balance, "Goodwill: late delivery (CSKH)", moments[-1] + timedelta(days=2)
        )
    db.update(
        "members",
        member_id,
        {
            "points_balance": balance,
            "lifetime_points": lifetime,
            "lifetime_spend_vnd": spend,
            "last_purchase_at": iso(moments[-1]),
        },
    )
    db.insert(
        "tier_history",
        {
            "member_id": member_id,
            "from_tier": None,
            "to_tier": member["tier"],
            "reason": "seed",
            "created_at": iso(joined),
        },
    )


def _ledger(
    db: Database,
    member_id: str,
    kind: str,
    points: int,
    balance: int,
    reason: str,
    moment: datetime,
    rule_id: str | None = None,
    campaign_id: str | None = None,
    purchase_id: str | None = None,
    redemption_id: str | None = None,
) -> None:
    db.insert(
        "ledger",
        {
            "id": db.next_id("led", 6),
            "member_id": member_id,
            "kind": kind,
            "points": points,
            "balance_after": balance,
            "reason": reason,
            "rule_id": rule_id,
            "campaign_id": campaign_id,
            "purchase_id": purchase_id,
            "redemption_id": redemption_id,
            "created_at": iso(moment),
        },
    )
