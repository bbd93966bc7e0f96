"""The typed notification events: one payload model per kind, discriminated by ``kind``.

An ``Event`` is what callers hand to ``notify``: the tenant, the payload, an optional dedupe key
(a second event with the same key records and sends nothing) and optional explicit recipients,
which win over every other way of choosing who is told (``resolution``).
"""

from __future__ import annotations

from abc import abstractmethod
from datetime import datetime
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

# ``lead`` rather than ``new_lead``: rows recorded before routing existed (and the print shop's
# tests) already say ``lead``, and a kind is stored, subscribed to and sent to webhooks verbatim.
Kind = Literal["handoff", "lead", "needs_reply", "delivery_failed", "claim_rejected_spike", "model_budget_spent"]
KINDS: tuple[Kind, ...] = get_args(Kind)

RouteName = Literal["email", "telegram", "webhook"]
ROUTES: tuple[RouteName, ...] = get_args(RouteName)


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    conversation_id: str | None = None
    task_id: str | None = None

    @abstractmethod
    def text(self) -> str:
        """The line stored on the ``notifications`` row (written in the operator's language by
        whoever raised the event)."""


class Handoff(_Payload):
    """The agent gave a conversation to a person (``humans.tasks.hand_off``)."""

    kind: Literal["handoff"] = "handoff"
    conversation_id: str
    task_id: str
    reason: str = Field(max_length=2000)

    def text(self) -> str:
        return self.reason


class NewLead(_Payload):
    """A lead was captured and a follow-up task opened."""

    kind: Literal["lead"] = "lead"
    conversation_id: str
    summary: str = Field(max_length=2000)

    def text(self) -> str:
        return self.summary


class NeedsReply(_Payload):
    """The assistant could not prove an answer: the customer was told a person will reply, and a
    "needs a reply" task holds the refused draft and the reasons (``humans.tasks.hold_for_team``)."""

    kind: Literal["needs_reply"] = "needs_reply"
    conversation_id: str
    task_id: str
    summary: str = Field(max_length=2000)

    def text(self) -> str:
        return self.summary


class DeliveryFailed(_Payload):
    """A reply could not be delivered to the customer (receipt ``failed`` or ``partial``)."""

    kind: Literal["delivery_failed"] = "delivery_failed"
    conversation_id: str
    message_id: int | None = None
    channel: str = ""
    detail: str = Field(default="", max_length=2000)

    def text(self) -> str:
        return self.detail or f"delivery failed on {self.channel or 'the channel'}"


class ClaimRejectedSpike(_Payload):
    """The verification gate rejected unusually many replies in a short window."""

    kind: Literal["claim_rejected_spike"] = "claim_rejected_spike"
    count: int = Field(ge=1)
    window_minutes: int = Field(ge=1)
    claim_types: tuple[str, ...] = ()

    def text(self) -> str:
        return f"{self.count} replies rejected by the verification gate in {self.window_minutes} min"


class ModelBudgetSpent(_Payload):
    """The tenant's chat-model turns for the hour or the day are used up: until ``resets_at``,
    customers get the hold message and each conversation a "needs a reply" task. Raised once per
    tenant and window."""

    kind: Literal["model_budget_spent"] = "model_budget_spent"
    period: Literal["hour", "day"]
    limit: int = Field(ge=1)
    resets_at: datetime
    summary: str = Field(max_length=2000)

    def text(self) -> str:
        return self.summary


Payload = Annotated[
    Handoff | NewLead | NeedsReply | DeliveryFailed | ClaimRejectedSpike | ModelBudgetSpent,
    Field(discriminator="kind"),
]


class Recipient(BaseModel):
    """An explicit recipient: one operator (on ``route``, or every route they can receive) or one
    outgoing webhook."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    operator_id: str | None = None
    webhook_id: str | None = None
    route: RouteName | None = None

    @model_validator(mode="after")
    def _one_subscriber(self) -> Recipient:
        if (self.operator_id is None) == (self.webhook_id is None):
            raise ValueError("a recipient is exactly one of operator_id or webhook_id")
        if self.webhook_id is not None and self.route not in (None, "webhook"):
            raise ValueError("a webhook is only reached by the webhook route")
        if self.operator_id is not None and self.route == "webhook":
            raise ValueError("operators are reached by e-mail or Telegram")
        return self


class Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str
    payload: Payload
    dedupe_key: str | None = Field(default=None, max_length=200)
    recipients: tuple[Recipient, ...] = ()

    @property
    def kind(self) -> Kind:
        return self.payload.kind
