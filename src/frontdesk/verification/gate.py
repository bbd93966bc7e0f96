"""The verification gate (invariant 3): a reply ships only if everything it asserts is proven.

``verify`` audits the claims the model filed and the companion rules that catch what it did not
declare: every money amount in the text must be a price of a row a tool returned (this turn or
in the tool ledger window), and every image URL must be a photo fetched this turn. The loop
turns a rejection into one hinted retry, then a safe fallback; the gate only judges.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from frontdesk.context.ledgers import WorkingState
from frontdesk.verification.claims import (
    BusinessInfoStated,
    Claim,
    CustomerInfoUpdated,
    FollowUpUpdated,
    HandoffTriggered,
    ImagesShown,
    LeadCaptured,
    ServicePresented,
)
from frontdesk.verification.money import money_amounts

_IMAGE_URL = re.compile(r"https?://\S+?\.(?:png|jpe?g|gif|webp)\b", re.IGNORECASE)


@dataclass(frozen=True)
class ReplyContent:
    """What the customer would see, as the gate reads it: all visible text (bubbles and captions)
    and the URLs of the images sent."""

    text: str
    image_urls: tuple[str, ...] = ()


@dataclass(frozen=True)
class Failure:
    """One reason a reply was refused. ``claim`` is the failed claim, None for a companion rule."""

    rule: str
    reason: str
    claim: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "reason": self.reason, "claim": self.claim}


@dataclass(frozen=True)
class Verdict:
    failures: tuple[Failure, ...] = field(default_factory=tuple)

    @property
    def accepted(self) -> bool:
        return not self.failures

    def hint(self) -> str:
        """What the model is told on its one retry: each failed claim or rule, and why."""
        lines = "\n".join(f"- {f.rule}: {f.reason}" for f in self.failures)
        return (
            "Your reply was NOT sent, because it asserts things no tool proved this turn:\n"
            f"{lines}\n"
            "Fetch what you need with a tool first, or remove the unproven statement and its claim, "
            "then call `reply` again."
        )


def verify(reply: ReplyContent, claims: Sequence[Claim], state: WorkingState) -> Verdict:
    failures = [f for claim in claims if (f := _check_claim(claim, state)) is not None]
    failures.extend(companion_failures(reply, state))
    return Verdict(tuple(failures))


def companion_failures(reply: ReplyContent, state: WorkingState) -> list[Failure]:
    """The rules that hold whether or not the model declared anything (salvaged prose too)."""
    return [*_price_failures(reply, state), *_image_failures(reply, state)]


def _check_claim(claim: Claim, state: WorkingState) -> Failure | None:
    turn_events = state.turn_events()
    recent_events = state.recent_events()
    described = claim.model_dump()

    def fail(reason: str) -> Failure:
        return Failure(claim.type, reason, described)

    if isinstance(claim, LeadCaptured):
        captured = {ref for event, ref in turn_events | recent_events if event == "lead_captured"}
        if not captured:
            return fail("no lead was captured: capture_lead did not run successfully")
        if claim.follow_up_id is not None and claim.follow_up_id not in captured:
            return fail(f"follow-up {claim.follow_up_id!r} is not a lead that was captured")
        return None
    if isinstance(claim, HandoffTriggered):
        if not any(event == "handoff_triggered" for event, _ in turn_events | recent_events):
            return fail("no hand-off happened: refer_to_human did not run successfully")
        return None
    if isinstance(claim, ServicePresented):
        known = _references(state)
        if claim.service_id not in known:
            return fail(f"service id {claim.service_id!r} was not returned by any tool (known: {_list(known)})")
        return None
    if isinstance(claim, BusinessInfoStated):
        if not any("business_info" in e.facts for e in (*state.turn_evidence, *state.earlier_evidence())):
            return fail("business information was not loaded: call get_business_info first")
        return None
    if isinstance(claim, FollowUpUpdated):
        updated = {ref for event, ref in turn_events if event == "follow_up_updated"}
        if claim.follow_up_id not in updated:
            return fail(f"follow-up {claim.follow_up_id!r} was not updated this turn")
        return None
    if isinstance(claim, CustomerInfoUpdated):
        if not any(event == "customer_info_updated" for event, _ in turn_events):
            return fail("the customer's details were not saved this turn")
        return None
    if isinstance(claim, ImagesShown):
        fetched = _turn_photos(state)
        missing = [p for p in claim.photo_ids if p not in fetched]
        if missing:
            return fail(f"photos {_list(missing)} were not fetched this turn (fetched: {_list(fetched)})")
        return None
    return fail("unknown claim type")  # pragma: no cover - the union is closed


def _price_failures(reply: ReplyContent, state: WorkingState) -> list[Failure]:
    fetched: set[Decimal] = set()
    for evidence in (*state.turn_evidence, *state.earlier_evidence()):
        for price_text in evidence.prices:
            fetched.update(value for _, value in money_amounts(price_text))
    failures: list[Failure] = []
    for written, value in money_amounts(reply.text):
        if value not in fetched:
            failures.append(
                Failure("price", f"the price {written} does not match any price a tool returned; never invent prices")
            )
    return failures


def _image_failures(reply: ReplyContent, state: WorkingState) -> list[Failure]:
    allowed = set(_turn_photos(state).values())
    urls = [*reply.image_urls, *_IMAGE_URL.findall(reply.text)]
    return [
        Failure("image", f"the image {url} is not a photo fetched this turn; show only photos a tool returned")
        for url in dict.fromkeys(urls)
        if url not in allowed
    ]


def _references(state: WorkingState) -> set[str]:
    return {r for e in (*state.turn_evidence, *state.earlier_evidence()) for r in e.references}


def _turn_photos(state: WorkingState) -> dict[str, str]:
    return {pid: url for e in state.turn_evidence for pid, url in e.photos.items()}


def _list(values: Any) -> str:
    items = sorted(values)
    return ", ".join(map(str, items[:10])) or "none"
