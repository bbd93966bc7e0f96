"""Member tools: list, search, read, enrol, update, deactivate/reactivate, and what a member holds
(vouchers, segments, redemptions). Point operations live in ``points.py``."""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from frontdesk.packs.loyalty.server._tool import JsonObject, Registrar, contains, paged, require, where
from frontdesk.packs.loyalty.server.db import Database, Row, fold
from frontdesk.packs.loyalty.server.errors import ConflictError, NotFoundError, StateError
from frontdesk.packs.loyalty.server.models import Idempotent, Input, MemberId, Page, Query, Reason, TierCode

tool = Registrar()
TOOLS = tool.tools


def _phone(value: str) -> str:
    digits = re.sub(r"[\s.()-]", "", value)
    if digits.startswith("+84"):
        digits = "0" + digits[3:]
    if not re.fullmatch(r"0\d{9,10}", digits):
        raise ValueError("not a Vietnamese phone number (10-11 digits starting with 0, or +84)")
    return digits


Phone = Annotated[
    str,
    Field(min_length=9, max_length=20, description="Phone, e.g. 0901234567 or +84 90 123 4567"),
    AfterValidator(_phone),
]
Email = Annotated[str, Field(pattern=r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]{2,}$", max_length=200, description="E-mail")]


class MemberListInput(Page):
    tier: TierCode | None = Field(default=None, description="Only members of this tier")
    status: Literal["active", "inactive"] | None = Field(default=None, description="Only members in this state")
    city: str | None = Field(default=None, max_length=60, description="Only members in this city")


class MemberSearchInput(Page):
    query: Query = Field(description="Part of a name, phone or e-mail; accents optional")


class MemberRef(Input):
    member_id: MemberId


class PhoneInput(Input):
    phone: Phone


class MemberCreateInput(Idempotent):
    name: str = Field(min_length=2, max_length=120, description="Full name")
    phone: Phone
    email: Email | None = None
    birthday: date | None = Field(default=None, description="Date of birth")
    city: str | None = Field(default=None, max_length=60, description="City, e.g. Hà Nội")


class MemberUpdateInput(MemberRef):
    name: str | None = Field(default=None, min_length=2, max_length=120, description="New full name")
    phone: Phone | None = None
    email: Email | None = None
    birthday: date | None = Field(default=None, description="New date of birth")
    city: str | None = Field(default=None, max_length=60, description="New city")


class DeactivateInput(MemberRef):
    reason: Reason


class MemberVouchersInput(MemberRef):
    status: Literal["issued", "redeemed", "revoked", "expired"] | None = Field(default=None, description="Only these")


PUBLIC = "id, name, phone, email, birthday, city, tier, tier_locked, status, joined_at, points_balance, lifetime_points"


def member_json(db: Database, member_id: str) -> Row:
    row = db.row(f"SELECT {PUBLIC}, lifetime_spend_vnd, last_purchase_at FROM members WHERE id = ?", (member_id,))
    if row is None:
        raise NotFoundError("member", member_id)
    row["tier_locked"] = bool(row["tier_locked"])
    return row


def _unique_phone(db: Database, phone: str, member_id: str = "") -> None:
    owner = db.scalar("SELECT id FROM members WHERE phone = ? AND id != ?", (phone, member_id))
    if owner:
        raise ConflictError(f"phone {phone} already belongs to member {owner}")


@tool(MemberListInput, read_only=True)
def member_list(db: Database, p: MemberListInput) -> JsonObject:
    """List members (id, name, tier, balance), optionally filtered by tier, status or city."""
    clause, params = where(
        [("tier = ?", p.tier), ("status = ?", p.status), ("fold(city) = ?", p.city and fold(p.city))]
    )
    sql = f"SELECT id, name, phone, tier, status, city, points_balance FROM members{clause}"
    return paged(db, sql, params, p, "id")


@tool(MemberSearchInput, read_only=True)
def member_search(db: Database, p: MemberSearchInput) -> JsonObject:
    """Find members by part of their name, phone or e-mail (accents optional)."""
    sql = (
        "SELECT id, name, phone, email, tier, points_balance FROM members "
        "WHERE fold(name || ' ' || phone || ' ' || COALESCE(email, '')) LIKE ?"
    )
    return paged(db, sql, [contains(p.query)], p, "name, id")


@tool(MemberRef, read_only=True)
def member_get(db: Database, p: MemberRef) -> JsonObject:
    """Read a member's profile, balance, tier, segments and count of usable vouchers."""
    member = member_json(db, p.member_id)
    segments = db.rows(
        "SELECT s.id, s.name FROM segments s JOIN segment_members m ON m.segment_id = s.id WHERE m.member_id = ?",
        (p.member_id,),
    )
    vouchers = db.scalar(
        "SELECT COUNT(*) FROM vouchers WHERE member_id = ? AND status = 'issued' AND expires_at >= ?",
        (p.member_id, db.now_iso()),
    )
    return {"member": member, "segments": segments, "usable_vouchers": vouchers}


@tool(PhoneInput, read_only=True)
def member_get_by_phone(db: Database, p: PhoneInput) -> JsonObject:
    """Find the member with this phone number."""
    member = require(db, "members", "member with phone", p.phone, column="phone")
    return {"member": member_json(db, member["id"])}


@tool(MemberCreateInput)
def member_create(db: Database, p: MemberCreateInput) -> JsonObject:
    """Enrol a new member in the Bronze tier with a zero balance."""
    _unique_phone(db, p.phone)
    member_id = db.next_id("mem")
    now = db.now_iso()
    db.insert(
        "members",
        {
            "id": member_id,
            "name": p.name,
            "phone": p.phone,
            "email": p.email,
            "birthday": p.birthday and p.birthday.isoformat(),
            "city": p.city,
            "tier": "bronze",
            "status": "active",
            "joined_at": now,
            "points_balance": 0,
            "lifetime_points": 0,
            "lifetime_spend_vnd": 0,
        },
    )
    db.insert("tier_history", {"member_id": member_id, "to_tier": "bronze", "reason": "enrolment", "created_at": now})
    return {"member": member_json(db, member_id)}


@tool(MemberUpdateInput)
def member_update(db: Database, p: MemberUpdateInput) -> JsonObject:
    """Change a member's name, phone, e-mail, birthday or city."""
    member_json(db, p.member_id)
    changes = p.model_dump(exclude={"member_id"}, exclude_none=True, mode="json")
    if not changes:
        raise StateError("nothing to update: give at least one field")
    if "phone" in changes:
        _unique_phone(db, changes["phone"], p.member_id)
    db.update("members", p.member_id, changes)
    return {"member": member_json(db, p.member_id), "changed": sorted(changes)}


@tool(DeactivateInput, destructive=True)
def member_deactivate(db: Database, p: DeactivateInput) -> JsonObject:
    """Deactivate a member: they keep their points but cannot earn or redeem until reactivated."""
    if member_json(db, p.member_id)["status"] == "inactive":
        raise StateError(f"member {p.member_id} is already inactive")
    db.update("members", p.member_id, {"status": "inactive"})
    return {"member_id": p.member_id, "status": "inactive", "reason": p.reason}


@tool(MemberRef)
def member_reactivate(db: Database, p: MemberRef) -> JsonObject:
    """Reactivate an inactive member."""
    if member_json(db, p.member_id)["status"] == "active":
        raise StateError(f"member {p.member_id} is already active")
    db.update("members", p.member_id, {"status": "active"})
    return {"member_id": p.member_id, "status": "active"}


@tool(MemberVouchersInput, read_only=True)
def member_list_vouchers(db: Database, p: MemberVouchersInput) -> JsonObject:
    """List a member's vouchers (code, discount, status, expiry)."""
    member_json(db, p.member_id)
    clause, params = where([("member_id = ?", p.member_id), ("status = ?", p.status)])
    vouchers = db.rows(
        "SELECT id, code, discount_type, discount_value, min_spend_vnd, status, expires_at "
        f"FROM vouchers{clause} ORDER BY expires_at",
        params,
    )
    return {"member_id": p.member_id, "vouchers": vouchers}


@tool(MemberRef, read_only=True)
def member_list_segments(db: Database, p: MemberRef) -> JsonObject:
    """List the segments a member belongs to."""
    member_json(db, p.member_id)
    segments = db.rows(
        "SELECT s.id, s.name, s.kind, m.added_at FROM segments s JOIN segment_members m ON m.segment_id = s.id "
        "WHERE m.member_id = ? ORDER BY s.id",
        (p.member_id,),
    )
    return {"member_id": p.member_id, "segments": segments}


@tool(MemberRef, read_only=True)
def member_list_redemptions(db: Database, p: MemberRef) -> JsonObject:
    """List a member's reward redemptions, newest first."""
    member_json(db, p.member_id)
    redemptions = db.rows(
        "SELECT d.id, d.reward_id, r.name AS reward_name, d.points, d.status, d.voucher_id, d.created_at "
        "FROM redemptions d JOIN rewards r ON r.id = d.reward_id WHERE d.member_id = ? ORDER BY d.created_at DESC",
        (p.member_id,),
    )
    return {"member_id": p.member_id, "redemptions": redemptions}
