"""Segment tools: static segments (members added by hand) and dynamic ones (members matching criteria,
recomputed by ``segment_refresh``). Rules and vouchers target segments by id."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal, Self

from pydantic import Field, model_validator

from frontdesk.packs.loyalty.server._tool import JsonObject, Registrar, loads, paged, require, where
from frontdesk.packs.loyalty.server.db import Database, Row, dumps, fold, iso
from frontdesk.packs.loyalty.server.errors import NotFoundError, StateError
from frontdesk.packs.loyalty.server.models import Idempotent, Input, MemberId, Page, SegmentCriteria, SegmentId

tool = Registrar()
TOOLS = tool.tools


class SegmentListInput(Page):
    kind: Literal["static", "dynamic"] | None = Field(default=None, description="Only this kind")


class SegmentRef(Input):
    segment_id: SegmentId


class SegmentCreateInput(Idempotent):
    name: str = Field(min_length=3, max_length=120, description="Segment name")
    description: str = Field(default="", max_length=1000, description="Who it is for")
    kind: Literal["static", "dynamic"] = Field(description="static = members added by hand; dynamic = by criteria")
    criteria: SegmentCriteria | None = Field(default=None, description="Required for dynamic segments")

    @model_validator(mode="after")
    def _criteria(self) -> Self:
        if (self.kind == "dynamic") != (self.criteria is not None):
            raise ValueError("dynamic segments need criteria; static segments take none")
        return self


class SegmentUpdateInput(SegmentRef):
    name: str | None = Field(default=None, min_length=3, max_length=120, description="New name")
    description: str | None = Field(default=None, max_length=1000, description="New description")
    criteria: SegmentCriteria | None = Field(default=None, description="New criteria (dynamic segments only)")


class MembersInput(SegmentRef):
    member_ids: list[MemberId] = Field(min_length=1, max_length=500, description="Members to add or remove")


class SegmentMembersInput(SegmentRef, Page):
    pass


class PreviewInput(Input):
    criteria: SegmentCriteria = Field(description="Criteria to try")
    sample: int = Field(default=5, ge=0, le=50, description="How many matching members to show")


class CheckInput(SegmentRef):
    member_id: MemberId


def matching(db: Database, criteria: SegmentCriteria, now: datetime) -> list[str]:
    """Ids of the members that meet the criteria at ``now``."""

    def day(days: int | None) -> str | None:
        return None if days is None else iso(now - timedelta(days=days))

    conditions: list[tuple[str, object]] = [
        ("status = ?", criteria.status),
        ("points_balance >= ?", criteria.min_points_balance),
        ("points_balance <= ?", criteria.max_points_balance),
        ("lifetime_spend_vnd >= ?", criteria.min_lifetime_spend_vnd),
        ("CAST(substr(birthday, 6, 2) AS INTEGER) = ?", criteria.birthday_month),
        ("joined_at >= ?", criteria.joined_after and criteria.joined_after.isoformat()),
        ("joined_at < ?", criteria.joined_before and criteria.joined_before.isoformat()),
        ("(last_purchase_at IS NULL OR last_purchase_at < ?)", day(criteria.inactive_days)),
        ("last_purchase_at >= ?", day(criteria.active_within_days)),
    ]
    clause, params = where(conditions)
    rows = db.rows(f"SELECT id, tier, city FROM members{clause} ORDER BY id", params)
    cities = {fold(city) for city in criteria.cities}
    return [
        row["id"]
        for row in rows
        if (not criteria.tiers or row["tier"] in criteria.tiers) and (not cities or fold(row["city"]) in cities)
    ]


def refresh_members(db: Database, segment_id: str, criteria: SegmentCriteria, now: datetime) -> JsonObject:
    before = {
        row["member_id"] for row in db.rows("SELECT member_id FROM segment_members WHERE segment_id = ?", (segment_id,))
    }
    after = set(matching(db, criteria, now))
    for member_id in sorted(before - after):
        db.execute("DELETE FROM segment_members WHERE segment_id = ? AND member_id = ?", (segment_id, member_id))
    for member_id in sorted(after - before):
        db.insert("segment_members", {"segment_id": segment_id, "member_id": member_id, "added_at": iso(now)})
    return {
        "segment_id": segment_id,
        "members": len(after),
        "added": len(after - before),
        "removed": len(before - after),
    }


def _segment(db: Database, segment_id: str) -> Row:
    segment = loads(require(db, "segments", "segment", segment_id), "criteria")
    segment["members"] = db.scalar("SELECT COUNT(*) FROM segment_members WHERE segment_id = ?", (segment_id,))
    return segment


def _static(db: Database, segment_id: str) -> Row:
    segment = _segment(db, segment_id)
    if segment["kind"] != "static":
        raise StateError(f"segment {segment_id} is dynamic: its members come from its criteria (segment_refresh)")
    return segment


@tool(SegmentListInput, read_only=True)
def segment_list(db: Database, p: SegmentListInput) -> JsonObject:
    """List segments with their kind and member count."""
    clause, params = where([("kind = ?", p.kind)])
    sql = (
        "SELECT id, name, kind, (SELECT COUNT(*) FROM segment_members m WHERE m.segment_id = s.id) AS members "
        f"FROM segments s{clause}"
    )
    return paged(db, sql, params, p, "id")


@tool(SegmentRef, read_only=True)
def segment_get(db: Database, p: SegmentRef) -> JsonObject:
    """Read one segment: kind, criteria and member count."""
    return {"segment": _segment(db, p.segment_id)}


@tool(SegmentCreateInput)
def segment_create(db: Database, p: SegmentCreateInput) -> JsonObject:
    """Create a static segment, or a dynamic one whose members are computed from its criteria right away."""
    segment_id = db.next_id("seg")
    now = db.now_iso()
    criteria = p.criteria and p.criteria.model_dump(mode="json", exclude_defaults=True)
    db.insert(
        "segments",
        {
            "id": segment_id,
            "name": p.name,
            "description": p.description,
            "kind": p.kind,
            "criteria": None if criteria is None else dumps(criteria),
            "created_at": now,
            "updated_at": now,
        },
    )
    if p.criteria is not None:
        refresh_members(db, segment_id, p.criteria, db.now())
    return {"segment": _segment(db, segment_id)}


@tool(SegmentUpdateInput)
def segment_update(db: Database, p: SegmentUpdateInput) -> JsonObject:
    """Rename a segment or change its description; a dynamic segment's new criteria re-compute its members."""
    segment = _segment(db, p.segment_id)
    changes = p.model_dump(exclude={"segment_id", "criteria"}, exclude_none=True)
    if p.criteria is not None:
        if segment["kind"] != "dynamic":
            raise StateError(f"segment {p.segment_id} is static; it has no criteria")
        changes["criteria"] = dumps(p.criteria.model_dump(mode="json", exclude_defaults=True))
    if not changes:
        raise StateError("nothing to update: give at least one field")
    db.update("segments", p.segment_id, {**changes, "updated_at": db.now_iso()})
    if p.criteria is not None:
        refresh_members(db, p.segment_id, p.criteria, db.now())
    return {"segment": _segment(db, p.segment_id), "changed": sorted(changes)}


@tool(SegmentRef, destructive=True)
def segment_delete(db: Database, p: SegmentRef) -> JsonObject:
    """Delete a segment that no rule refers to (its membership goes with it)."""
    _segment(db, p.segment_id)
    used = db.rows(
        "SELECT id FROM rules WHERE EXISTS (SELECT 1 FROM json_each(criteria, '$.segment_ids') WHERE value = ?) "
        "OR EXISTS (SELECT 1 FROM json_each(criteria, '$.exclude_segment_ids') WHERE value = ?)",
        (p.segment_id, p.segment_id),
    )
    if used:
        raise StateError(f"segment {p.segment_id} is used by rules {[row['id'] for row in used]}; change them first")
    removed = db.execute("DELETE FROM segment_members WHERE segment_id = ?", (p.segment_id,))
    db.execute("DELETE FROM segments WHERE id = ?", (p.segment_id,))
    return {"deleted": p.segment_id, "memberships_removed": removed}


@tool(SegmentMembersInput, read_only=True)
def segment_list_members(db: Database, p: SegmentMembersInput) -> JsonObject:
    """List a segment's members (id, name, tier, balance)."""
    _segment(db, p.segment_id)
    sql = (
        "SELECT m.id, m.name, m.tier, m.points_balance FROM members m "
        "JOIN segment_members s ON s.member_id = m.id WHERE s.segment_id = ?"
    )
    return {"segment_id": p.segment_id, **paged(db, sql, [p.segment_id], p, "m.id")}


@tool(MembersInput)
def segment_add_members(db: Database, p: MembersInput) -> JsonObject:
    """Add members to a static segment (members already in it are skipped)."""
    _static(db, p.segment_id)
    added = []
    for member_id in dict.fromkeys(p.member_ids):
        require(db, "members", "member", member_id)
        if db.scalar("SELECT 1 FROM segment_members WHERE segment_id = ? AND member_id = ?", (p.segment_id, member_id)):
            continue
        db.insert("segment_members", {"segment_id": p.segment_id, "member_id": member_id, "added_at": db.now_iso()})
        added.append(member_id)
    return {"segment_id": p.segment_id, "added": added, "members": _segment(db, p.segment_id)["members"]}


@tool(MembersInput)
def segment_remove_members(db: Database, p: MembersInput) -> JsonObject:
    """Remove members from a static segment."""
    _static(db, p.segment_id)
    removed = [
        member_id
        for member_id in dict.fromkeys(p.member_ids)
        if db.execute("DELETE FROM segment_members WHERE segment_id = ? AND member_id = ?", (p.segment_id, member_id))
    ]
    return {"segment_id": p.segment_id, "removed": removed, "members": _segment(db, p.segment_id)["members"]}


@tool(SegmentRef)
def segment_refresh(db: Database, p: SegmentRef) -> JsonObject:
    """Re-compute a dynamic segment's members from its criteria, now."""
    segment = _segment(db, p.segment_id)
    if segment["kind"] != "dynamic":
        raise StateError(f"segment {p.segment_id} is static; add or remove its members instead")
    return refresh_members(db, p.segment_id, SegmentCriteria.model_validate(segment["criteria"]), db.now())


@tool(PreviewInput, read_only=True)
def segment_preview(db: Database, p: PreviewInput) -> JsonObject:
    """Count the members that would match segment criteria, with a few examples, without saving anything."""
    ids = matching(db, p.criteria, db.now())
    sample = [
        db.row("SELECT id, name, tier, city FROM members WHERE id = ?", (member_id,)) for member_id in ids[: p.sample]
    ]
    return {"matching": len(ids), "sample": sample}


@tool(CheckInput, read_only=True)
def segment_check_member(db: Database, p: CheckInput) -> JsonObject:
    """Tell whether a member is in a segment."""
    _segment(db, p.segment_id)
    if db.scalar("SELECT 1 FROM members WHERE id = ?", (p.member_id,)) is None:
        raise NotFoundError("member", p.member_id)
    found = db.row(
        "SELECT added_at FROM segment_members WHERE segment_id = ? AND member_id = ?", (p.segment_id, p.member_id)
    )
    return {
        "segment_id": p.segment_id,
        "member_id": p.member_id,
        "is_member": found is not None,
        "added_at": found and found["added_at"],
    }
