"""The fixed part of the demo data: tiers, campaigns, rules, rewards, segments and name pools."""

from __future__ import annotations

import random
import string
from datetime import UTC, datetime
from typing import Any

from frontdesk.packs.loyalty.server.models import RuleDefinition

# The demo data's "today": dates in it are relative to this, never to the real clock.
SEED_NOW = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)

TIERS = [
    ("bronze", "Bronze (Đồng)", 1, 0, 1.0, ["1 điểm / 10.000đ", "Birthday voucher 50.000đ"]),
    ("silver", "Silver (Bạc)", 2, 1_000, 1.1, ["+10% điểm", "Free shipping on app orders", "Birthday gift"]),
    ("gold", "Gold (Vàng)", 3, 5_000, 1.25, ["+25% điểm", "Ưu tiên hotline", "Weekend bonus 100 điểm"]),
    ("platinum", "Platinum (Bạch kim)", 4, 15_000, 1.5, ["+50% điểm", "Lounge access", "Personal concierge"]),
]

CampaignRow = tuple[str, str, str, str | None, str | None, int | None, list[str]]
CAMPAIGNS: list[CampaignRow] = [
    ("Tích điểm cơ bản / Base earn", "Always-on earning on every purchase.", "active", "2025-01-01", None, None, []),
    (
        "Tết 2027 - Lộc Xuân",
        "Triple points and Tết gift bonuses.",
        "draft",
        "2027-01-20",
        "2027-02-20",
        2_000_000,
        ["store", "app", "online"],
    ),
    (
        "Weekend Double Points",
        "Double points on Saturdays and Sundays.",
        "active",
        "2026-09-01",
        "2027-03-31",
        5_000_000,
        ["store", "app"],
    ),
    (
        "Mừng sinh nhật thành viên / Birthday club",
        "Birthday bonuses for every tier.",
        "active",
        "2025-01-01",
        None,
        None,
        [],
    ),
    (
        "Back to School 2026",
        "Stationery and books bonus for the new school year.",
        "ended",
        "2026-08-01",
        "2026-09-15",
        1_000_000,
        ["store", "online"],
    ),
    (
        "Cà phê sáng - Morning Coffee Streak",
        "Rewards for a coffee every week.",
        "paused",
        "2026-10-01",
        "2026-12-31",
        800_000,
        ["store", "app"],
    ),
]


def _rule(name: str, formula: dict[str, Any], **rest: Any) -> RuleDefinition:
    return RuleDefinition.model_validate({"name": name, "formula": formula, **rest})


RULES: list[tuple[int, RuleDefinition]] = [
    (
        0,
        _rule(
            "Base: 1 điểm / 10.000đ",
            {"type": "points_per_amount", "points": 1, "per_amount_vnd": 10_000},
            priority=10,
            stackable=False,
            description="Base earn rate; weekend x2 replaces it.",
        ),
    ),
    (
        0,
        _rule(
            "Welcome - đơn hàng đầu tiên",
            {"type": "first_purchase_bonus", "points": 200, "within_days_of_joining": 30},
            priority=50,
        ),
    ),
    (
        0,
        _rule(
            "App orders +50",
            {"type": "fixed_points", "points": 50},
            criteria={"channels": ["app"], "min_spend_vnd": 200_000},
        ),
    ),
    (
        0,
        _rule(
            "Big basket bands",
            {
                "type": "tiered_spend",
                "bands": [
                    {"min_spend_vnd": 500_000, "points": 50},
                    {"min_spend_vnd": 1_000_000, "points": 120},
                    {"min_spend_vnd": 3_000_000, "points": 400},
                ],
            },
        ),
    ),
    (
        1,
        _rule(
            "Lộc Xuân x3",
            {"type": "multiplier", "factor": 3},
            priority=300,
            stackable=False,
            criteria={"start_date": "2027-01-20", "end_date": "2027-02-20"},
        ),
    ),
    (
        1,
        _rule(
            "Quà Tết bánh kẹo & trà",
            {"type": "category_bonus", "categories": ["confectionery", "tea"], "points": 2, "per_amount_vnd": 10_000},
        ),
    ),
    (
        2,
        _rule(
            "Weekend x2",
            {"type": "multiplier", "factor": 2},
            priority=200,
            stackable=False,
            criteria={"days_of_week": ["sat", "sun"], "channels": ["store", "app"]},
        ),
    ),
    (
        2,
        _rule(
            "Gold+ weekend bonus",
            {"type": "fixed_points", "points": 100},
            criteria={"tiers": ["gold", "platinum"], "days_of_week": ["sat", "sun"], "max_awards_per_member": 4},
        ),
    ),
    (3, _rule("Birthday month bonus", {"type": "birthday_bonus", "points": 500, "window": "month"})),
    (
        3,
        _rule(
            "Platinum birthday day",
            {"type": "birthday_bonus", "points": 1_000, "window": "day"},
            criteria={"tiers": ["platinum"]},
        ),
    ),
    (
        4,
        _rule(
            "Stationery & books x3",
            {"type": "category_bonus", "categories": ["stationery", "books"], "points": 3},
            criteria={"start_date": "2026-08-01", "end_date": "2026-09-15"},
        ),
    ),
    (
        4,
        _rule(
            "School spend bands",
            {
                "type": "tiered_spend",
                "bands": [{"min_spend_vnd": 300_000, "points": 30}, {"min_spend_vnd": 800_000, "points": 100}],
            },
            status="inactive",
        ),
    ),
    (
        5,
        _rule(
            "Coffee streak 4 weeks",
            {"type": "streak", "period": "week", "periods": 4, "bonus_points": 300},
            criteria={"categories": ["coffee"]},
        ),
    ),
    (
        5,
        _rule(
            "Morning coffee +20",
            {"type": "fixed_points", "points": 20},
            criteria={"categories": ["coffee"], "hour_from": 6, "hour_to": 10, "max_awards_per_member": 30},
        ),
    ),
    (
        5,
        _rule(
            "Coffee & bakery lovers",
            {"type": "category_bonus", "categories": ["coffee", "bakery"], "points": 1, "per_amount_vnd": 5_000},
        ),
    ),
]

RewardRow = tuple[str, str, str, int, int, int | None, str, str, int | None]
REWARDS: list[RewardRow] = [
    ("Voucher 50.000đ", "Giảm 50.000đ cho đơn từ 200.000đ", "voucher", 500, 50_000, None, "bronze", "active", None),
    ("Túi vải canvas / Tote bag", "Canvas tote, limited print", "physical", 600, 80_000, 100, "bronze", "active", None),
    ("Vé xem phim CGV 2D", "One 2D ticket, any CGV cinema", "experience", 900, 110_000, 50, "bronze", "active", None),
    ("Ly giữ nhiệt / Tumbler", "Stainless tumbler 500ml", "physical", 1_200, 150_000, 40, "silver", "active", None),
    ("Free coffee", "Một ly cà phê bất kỳ size M", "voucher", 250, 45_000, None, "bronze", "active", None),
    ("Voucher 200.000đ", "Giảm 200.000đ, no minimum", "voucher", 1_800, 200_000, None, "silver", "active", None),
    (
        "Quyên góp Quỹ Hy vọng / Donation",
        "300 points = 30.000đ donated",
        "donation",
        300,
        30_000,
        None,
        "bronze",
        "active",
        None,
    ),
    ("Bộ quà Tết 2027", "Hộp quà Tết: trà, bánh, mứt", "physical", 2_500, 350_000, 0, "silver", "inactive", 1),
    ("Spa voucher 500k (Platinum)", "Spa day voucher", "voucher", 4_500, 500_000, None, "platinum", "active", None),
    ("Lounge pass Tân Sơn Nhất", "One airport lounge visit", "experience", 6_000, 700_000, 10, "gold", "active", None),
]

DYNAMIC_SEGMENTS: list[tuple[str, str, dict[str, Any]]] = [
    ("Khách VIP / VIP customers", "Gold and Platinum members", {"tiers": ["gold", "platinum"]}),
    ("Sinh nhật tháng 11 / November birthdays", "Members born in November", {"birthday_month": 11}),
    ("Khách Hà Nội", "Members living in Hà Nội", {"cities": ["Hà Nội"]}),
    ("At-risk: no purchase in 90 days", "Win-back target list", {"inactive_days": 90}),
]
STATIC_SEGMENTS = [
    ("Nhân viên nội bộ / Staff", "Employees; excluded from some promotions"),
    ("Coffee lovers beta", "Hand-picked testers of the coffee streak"),
]

CITIES = ["Hà Nội", "TP. Hồ Chí Minh", "TP. Hồ Chí Minh", "Đà Nẵng", "Hải Phòng", "Cần Thơ", "Nha Trang", "Huế"]
MAIL = ["gmail.com", "gmail.com", "yahoo.com.vn", "outlook.com"]
CATEGORIES = ["coffee", "bakery", "tea", "grocery", "beauty", "fashion", "books", "stationery", "electronics"]
_SURNAMES = ["Nguyễn", "Trần", "Lê", "Phạm", "Hoàng", "Huỳnh", "Phan", "Vũ", "Võ", "Đặng", "Bùi", "Đỗ", "Hồ", "Ngô"]
_MIDDLE = ["Văn", "Thị", "Minh", "Thanh", "Ngọc", "Quốc", "Hữu", "Thu", "Gia", "Bảo", "Đức", "Anh"]
_GIVEN = [
    "An",
    "Bình",
    "Châu",
    "Dũng",
    "Hà",
    "Hải",
    "Hạnh",
    "Hiếu",
    "Hương",
    "Khánh",
    "Lan",
    "Linh",
    "Long",
    "Mai",
    "Nam",
    "Nga",
    "Phúc",
    "Phương",
    "Quân",
    "Quỳnh",
    "Sơn",
    "Tâm",
    "Thảo",
    "Trang",
    "Trung",
    "Tuấn",
    "Vy",
    "Yến",
]
_ENGLISH = ["Emily", "David", "Sarah", "Michael", "Jessica", "Kevin", "Anna", "Tom", "Linda", "Peter", "Sophie"]
_ENGLISH_SURNAMES = ["Tran", "Nguyen", "Le", "Pham", "Vo", "Hoang", "Dang", "Bui", "Do", "Ngo", "Smith", "Miller"]


def vietnamese_name(rng: random.Random) -> str:
    return f"{rng.choice(_SURNAMES)} {rng.choice(_MIDDLE)} {rng.choice(_GIVEN)}"


def english_name(rng: random.Random) -> str:
    return f"{rng.choice(_ENGLISH)} {rng.choice(_ENGLISH_SURNAMES)}"


def voucher_code(rng: random.Random) -> str:
    alphabet = string.ascii_uppercase.replace("O", "").replace("I", "") + "23456789"
    return (
        "FD-" + "".join(rng.choice(alphabet) for _ in range(4)) + "-" + "".join(rng.choice(alphabet) for _ in range(4))
    )
