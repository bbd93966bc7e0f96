"""The typed events, their texts in each operator language, and the legacy ``humans.notify``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import TypeAdapter, ValidationError
from sqlalchemy import select
from test_notification_kit import CLOCK, world

from frontdesk.humans import notify as notify_legacy
from frontdesk.humans.notifications import (
    DISPATCH_NOTIFICATION,
    KINDS,
    ClaimRejectedSpike,
    DeliveryFailed,
    Event,
    Handoff,
    ModelBudgetSpent,
    NeedsReply,
    NewLead,
    Recipient,
)
from frontdesk.humans.notifications.events import Payload
from frontdesk.humans.notifications.templates import SUBJECTS, render
from frontdesk.platform.store.schema import Job, Notification
from frontdesk.platform.store.schema_notifications import NotificationEvent

SAMPLES = [
    Handoff(conversation_id="c1", task_id="t1", reason="wants a person"),
    NewLead(conversation_id="c1", task_id="t2", summary="500 flyers"),
    NeedsReply(conversation_id="c1", task_id="t3", summary="time: '9 pm' is not a time the hours gave"),
    DeliveryFailed(conversation_id="c1", message_id=9, channel="telegram", detail="HTTP 403: bot was blocked"),
    ClaimRejectedSpike(count=12, window_minutes=10, claim_types=("price",)),
    ModelBudgetSpent(
        period="hour", limit=300, resets_at=datetime(2026, 12, 2, 8, tzinfo=UTC), summary="300 turns this hour"
    ),
]


def test_every_kind_has_a_payload_model_that_round_trips_through_json():
    adapter: TypeAdapter[Payload] = TypeAdapter(Payload)

    assert sorted(p.kind for p in SAMPLES) == sorted(KINDS)
    for payload in SAMPLES:
        assert adapter.validate_python(payload.model_dump(mode="json")) == payload


@pytest.mark.parametrize("language", sorted(SUBJECTS))
@pytest.mark.parametrize("payload", SAMPLES, ids=lambda p: p.kind)
def test_every_kind_reads_in_every_operator_language(payload, language):
    rendered = render(
        payload.kind, payload.model_dump(mode="json"), payload.text(), language=language, business="Shop", link=None
    )

    assert rendered.subject.startswith("Shop: ")
    assert "{" not in rendered.subject
    assert rendered.body.startswith(payload.text())


def test_an_unknown_operator_language_reads_english():
    assert render("lead", {}, "x", language="fr", business="Shop", link=None).subject == "Shop: new lead"


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"operator_id": "op", "webhook_id": "wh"},
        {"webhook_id": "wh", "route": "email"},
        {"operator_id": "op", "route": "webhook"},
    ],
)
def test_a_recipient_is_one_operator_or_one_webhook_on_a_route_it_can_use(fields):
    with pytest.raises(ValidationError):
        Recipient(**fields)


def test_an_event_takes_its_kind_from_the_payload():
    assert Event(tenant_id="t", payload=SAMPLES[-1]).kind == "model_budget_spent"


async def test_the_legacy_notify_records_a_typed_lead_and_one_dispatch_job(db):
    w = await world(db)

    for _ in range(2):
        async with db.transaction() as session:
            await notify_legacy(
                session,
                tenant_id=w.tenant_id,
                kind="lead",
                text="New lead — Flyers: 500 A5",
                now=CLOCK.now(),
                conversation_id=w.conversation_id,
                task_id=w.task_id,
                dedupe_key=f"lead:{w.task_id}",
            )

    async with db.read() as session:
        (note,) = await session.scalars(select(Notification))
        (event,) = await session.scalars(select(NotificationEvent))
        (job,) = await session.scalars(select(Job).where(Job.kind == DISPATCH_NOTIFICATION))
    assert (note.kind, note.text, note.task_id) == ("lead", "New lead — Flyers: 500 A5", w.task_id)
    assert event.payload == {
        "kind": "lead",
        "conversation_id": w.conversation_id,
        "task_id": w.task_id,
        "summary": "New lead — Flyers: 500 A5",
    }
    assert job.payload == {"notification_id": note.id}
