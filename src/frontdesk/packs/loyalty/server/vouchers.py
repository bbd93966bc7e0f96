"""Voucher tools: issue (to a member, a segment, or as a bearer code), validate, redeem, revoke, extend, expire.

A voucher is ``issued`` until it is ``redeemed`` or ``revoked``; an issued voucher past its expiry is
reported as ``expired`` (and ``voucher_expire_overdue`` stores that).
"""

from __future__ import annotations

import secrets
import string
from datetime import datetime, timedelta
from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from frontdesk.packs.loyalty.server._tool import JsonObject, Registrar, paged, require, where
from frontdesk.packs.loyalty.server.db import Database, Row, iso
from frontdesk.packs.loyalty.server.errors import ConflictError, StateError
from frontdesk.packs.loyalty.server.models import (
    AmountVnd,
    CampaignId,
    Idempotent,
    Input,
    MemberId,
    Page,
    Reason,
    SegmentId,
    VoucherId,
)

tool = Registrar()
TOOLS = tool.tools

VoucherCode = Annotated[str, Field(pattern=r"^[A-Za-z0-9-]{4,30}$", description="Voucher code, e.g. FD-7KQ2-M9XA")]
_ALPHABET = string.ascii_uppercase.replace("O", "").replace("I", "") + "23456789"


class VoucherTerms(Input):
    discount_type: Literal["percent", "amount"] = Field(description="percent of the bill, or a fixed VND amount")
    discount_value: int = Field(ge=1, le=100_000_000, description="Percent (1-100) or VND amount")
    min_spend_vnd: AmountVnd = Field(default=0, description="Minimum bill in VND")
    max_discount_vnd: AmountVnd | None = Field(default=None, description="Cap on a percent discount, in VND")
    valid_days: int = Field(default=30, ge=1, le=730, description="Days until it expires")
    campaign_id: CampaignId | None = Field(default=None, description="Campaign it belongs to (optional)")

    @model_validator(mode="after")
    def _percent(self) -> Self:
        if self.discount_type == "percent" and self.discount_value > 100:
            raise ValueError("a percent discount_value must be 1-100")
        return self


class VoucherIssueInput(VoucherTerms, Idempotent):
    member_id: MemberId | None = Field(default=None, description="Owner; none = a bearer voucher anyone may use")
    code: VoucherCode | None = Field(default=None, description="Custom code (optional); default: generated")


class SegmentIssueInput(VoucherTerms, Idempotent):
    segment_id: SegmentId = Field(description="Every active member of this segment gets a voucher")


class VoucherListInput(Page):
    status: Literal["issued", "redeemed", "revoked", "expired"] | None = Field(default=None, description="Only these")
    member_id: MemberId | None = Field(default=None, description="Only this member's vouchers")
    campaign_id: CampaignId | None = Field(default=None, description="Only this campaign's vouchers")


class VoucherRef(Input):
    voucher_id: VoucherId


class CodeInput(Input):
    code: VoucherCode


class ValidateInput(CodeInput):
    amount_vnd: int = Field(ge=1, le=10_000_000_000, description="Bill amount in VND")
    member_id: MemberId | None = Field(default=None, description="Member using it (owned vouchers need it)")


class RedeemInput(ValidateInput, Idempotent):
    order_ref: str = Field(min_length=1, max_length=60, description="Order the voucher is used on")


class RevokeInput(VoucherRef):
    reason: Reason


class ExtendInput(VoucherRef):
    days: int = Field(ge=1, le=365, description="Days to add to the expiry")


class NoInput(Input):
    pass


def voucher_json(db: Database, row: Row) -> Row:
    if row["status"] == "issued" and row["expires_at"] < db.now_iso():
        row["status"] = "expired"
    return row


def voucher_row(db: Database, voucher_id: str) -> Row:
    return voucher_json(db, require(db, "vouchers", "voucher", voucher_id))


def issue_voucher(db: Database, terms: VoucherTerms, member_id: str | None, code: str | None = None) -> Row:
    """Write one voucher (shared with reward redemption); a custom code must be unused."""
    if code is None:
        code = "FD-" + "".join(secrets.choice(_ALPHABET) for _ in range(4)) + "-"
        code += "".join(secrets.choice(_ALPHABET) for _ in range(4))
    code = code.upper()
    if db.scalar("SELECT id FROM vouchers WHERE code = ?", (code,)):
        raise ConflictError(f"voucher code {code} is already used")
    if member_id:
        require(db, "members", "member", member_id)
    if terms.campaign_id:
        require(db, "campaigns", "campaign", terms.campaign_id)
    voucher_id = db.next_id("vch")
    now = db.now()
    db.insert(
        "vouchers",
        {
            "id": voucher_id,
            "code": code,
            "member_id": member_id,
            "campaign_id": terms.campaign_id,
            "discount_type": terms.discount_type,
            "discount_value": terms.discount_value,
            "min_spend_vnd": terms.min_spend_vnd,
            "max_discount_vnd": terms.max_discount_vnd,
            "status": "issued",
            "issued_at": iso(now),
            "expires_at": iso(now + timedelta(days=terms.valid_days)),
        },
    )
    return voucher_row(db, voucher_id)


def _check(db: Database, p: ValidateInput) -> tuple[Row, int, list[str]]:
    voucher = voucher_json(db, require(db, "vouchers", "voucher code", p.code.upper(), column="code"))
    problems: list[str] = []
    if voucher["status"] != "issued":
        problems.append(f"voucher is {voucher['status']}")
    if voucher["member_id"] and voucher["member_id"] != p.member_id:
        problems.append(f"voucher belongs to member {voucher['member_id']}")
    if p.amount_vnd < voucher["min_spend_vnd"]:
        problems.append(f"bill {p.amount_vnd} VND is below the minimum {voucher['min_spend_vnd']} VND")
    if voucher["discount_type"] == "percent":
        discount = p.amount_vnd * voucher["discount_value"] // 100
        discount = min(discount, voucher["max_discount_vnd"] or discount)
    else:
        discount = min(voucher["discount_value"], p.amount_vnd)
    return voucher, discount, problems


@tool(VoucherListInput, read_only=True)
def voucher_list(db: Database, p: VoucherListInput) -> JsonObject:
    """List vouchers (newest first), optionally by status, member or campaign."""
    now = db.now_iso()
    status = {
        "issued": ("status = 'issued' AND expires_at >= ?", now),
        "expired": ("(status = 'expired' OR (status = 'issued' AND expires_at < ?))", now),
        "redeemed": ("status = ?", "redeemed"),
        "revoked": ("status = ?", "revoked"),
    }
    clause, params = where(
        [
            status[p.status] if p.status else ("", None),
            ("member_id = ?", p.member_id),
            ("campaign_id = ?", p.campaign_id),
        ]
    )
    columns = "id, code, member_id, campaign_id, discount_type, discount_value, status, expires_at"
    sql = f"SELECT {columns} FROM vouchers{clause}"
    result = paged(db, sql, params, p, "issued_at DESC, id DESC")
    result["items"] = [voucher_json(db, row) for row in result["items"]]
    return result


@tool(VoucherRef, read_only=True)
def voucher_get(db: Database, p: VoucherRef) -> JsonObject:
    """Read one voucher by id."""
    return {"voucher": voucher_row(db, p.voucher_id)}


@tool(CodeInput, read_only=True)
def voucher_get_by_code(db: Database, p: CodeInput) -> JsonObject:
    """Read one voucher by its code."""
    return {"voucher": voucher_json(db, require(db, "vouchers", "voucher code", p.code.upper(), column="code"))}


@tool(VoucherIssueInput)
def voucher_issue(db: Database, p: VoucherIssueInput) -> JsonObject:
    """Issue a voucher to a member (or a bearer voucher) with a discount, minimum spend and validity."""
    return {"voucher": issue_voucher(db, p, p.member_id, p.code)}


@tool(SegmentIssueInput)
def voucher_issue_to_segment(db: Database, p: SegmentIssueInput) -> JsonObject:
    """Issue the same voucher terms to every active member of a segment (one code each)."""
    require(db, "segments", "segment", p.segment_id)
    members = db.rows(
        "SELECT m.id FROM members m JOIN segment_members s ON s.member_id = m.id "
        "WHERE s.segment_id = ? AND m.status = 'active' ORDER BY m.id",
        (p.segment_id,),
    )
    if len(members) > 1000:
        raise StateError(f"segment {p.segment_id} has {len(members)} members; at most 1000 per call")
    issued = [issue_voucher(db, p, row["id"]) for row in members]
    return {
        "segment_id": p.segment_id,
        "issued": len(issued),
        "vouchers": [{"id": v["id"], "code": v["code"], "member_id": v["member_id"]} for v in issued],
    }


@tool(ValidateInput, read_only=True)
def voucher_validate(db: Database, p: ValidateInput) -> JsonObject:
    """Check whether a voucher code can be used on a bill, and the discount it would give."""
    voucher, discount, problems = _check(db, p)
    return {
        "voucher_id": voucher["id"],
        "code": voucher["code"],
        "valid": not problems,
        "discount_vnd": 0 if problems else discount,
        "problems": problems,
    }


@tool(RedeemInput)
def voucher_redeem(db: Database, p: RedeemInput) -> JsonObject:
    """Use a voucher on an order: checks it, applies the discount and marks it redeemed."""
    voucher, discount, problems = _check(db, p)
    if problems:
        raise StateError(f"voucher {voucher['code']} cannot be used: " + "; ".join(problems))
    db.update(
        "vouchers",
        voucher["id"],
        {"status": "redeemed", "redeemed_at": db.now_iso(), "order_ref": p.order_ref, "discount_applied_vnd": discount},
    )
    return {
        "voucher": voucher_row(db, voucher["id"]),
        "discount_vnd": discount,
        "amount_due_vnd": p.amount_vnd - discount,
    }


@tool(RevokeInput, destructive=True)
def voucher_revoke(db: Database, p: RevokeInput) -> JsonObject:
    """Cancel an unused voucher so it can no longer be redeemed."""
    voucher = voucher_row(db, p.voucher_id)
    if voucher["status"] in ("redeemed", "revoked"):
        raise StateError(f"voucher {p.voucher_id} is already {voucher['status']}")
    db.update("vouchers", p.voucher_id, {"status": "revoked", "revoke_reason": p.reason})
    return {"voucher": voucher_row(db, p.voucher_id), "previous_status": voucher["status"]}


@tool(ExtendInput)
def voucher_extend(db: Database, p: ExtendInput) -> JsonObject:
    """Push an unused voucher's expiry later by some days (also revives one that just expired)."""
    voucher = require(db, "vouchers", "voucher", p.voucher_id)
    if voucher["status"] in ("redeemed", "revoked"):
        raise StateError(f"voucher {p.voucher_id} is {voucher['status']}; only unused vouchers can be extended")
    base = max(voucher["expires_at"], db.now_iso())
    expires = iso(datetime.fromisoformat(base) + timedelta(days=p.days))
    db.update("vouchers", p.voucher_id, {"status": "issued", "expires_at": expires})
    return {"voucher": voucher_row(db, p.voucher_id), "previous_expires_at": voucher["expires_at"]}


@tool(NoInput)
def voucher_expire_overdue(db: Database, p: NoInput) -> JsonObject:
    """Mark every issued voucher past its expiry as expired; returns how many changed."""
    overdue = db.rows("SELECT id FROM vouchers WHERE status = 'issued' AND expires_at < ?", (db.now_iso(),))
    db.execute("UPDATE vouchers SET status = 'expired' WHERE status = 'issued' AND expires_at < ?", (db.now_iso(),))
    return {"expired": len(overdue), "voucher_ids": [row["id"] for row in overdue]}
