"""The claims a reply files about itself: one typed object per evidence-requiring assertion.

Event claims ("I did X") are proven by what this turn's tools really did, or by a recent
action-ledger entry; reference claims ("I'm showing/quoting X") by what retrieval returned.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Claim(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LeadCaptured(_Claim):
    """The customer's request was saved for follow-up (``capture_lead`` ran)."""

    type: Literal["lead_captured"] = "lead_captured"
    follow_up_id: str | None = None


class HandoffTriggered(_Claim):
    """A person from the team was asked to take over (``refer_to_human`` ran)."""

    type: Literal["handoff_triggered"] = "handoff_triggered"


class ServicePresented(_Claim):
    """The reply presents or quotes this service (its id came from a retrieval tool)."""

    type: Literal["service_presented"] = "service_presented"
    service_id: str = Field(min_length=1, max_length=200)


class BusinessInfoStated(_Claim):
    """The reply states hours, address or contact details (``get_business_info`` was loaded)."""

    type: Literal["business_info_stated"] = "business_info_stated"


class FollowUpUpdated(_Claim):
    """An existing follow-up was changed this turn."""

    type: Literal["follow_up_updated"] = "follow_up_updated"
    follow_up_id: str = Field(min_length=1, max_length=200)


class CustomerInfoUpdated(_Claim):
    """The customer's contact details were saved this turn."""

    type: Literal["customer_info_updated"] = "customer_info_updated"


class ImagesShown(_Claim):
    """The reply shows these photos (each fetched this turn)."""

    type: Literal["images_shown"] = "images_shown"
    photo_ids: list[str] = Field(min_length=1, max_length=10)


Claim = Annotated[
    LeadCaptured
    | HandoffTriggered
    | ServicePresented
    | BusinessInfoStated
    | FollowUpUpdated
    | CustomerInfoUpdated
    | ImagesShown,
    Field(discriminator="type"),
]

CLAIM_TYPES = (
    "lead_captured",
    "handoff_triggered",
    "service_presented",
    "business_info_stated",
    "follow_up_updated",
    "customer_info_updated",
    "images_shown",
)
