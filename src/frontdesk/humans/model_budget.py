"""When a tenant's chat-model budget is spent (``platform/model_budget.py``): each held
conversation gets its "needs a reply" task, and the owners hear of it once per window, not once
per customer (a busy hour past the limit would otherwise page them for every thread).

The notice goes to the tenant's active owners, who set the budget with their deployer; a tenant
that subscribed someone to ``model_budget_spent`` has it routed as it chose.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.humans.notifications import Event, ModelBudgetSpent, Recipient, notify
from frontdesk.humans.tasks import hold_for_team
from frontdesk.platform.model_budget import Spent
from frontdesk.platform.store.schema import Tenant
from frontdesk.platform.store.schema_console import Operator
from frontdesk.platform.store.schema_notifications import NotificationSubscription

KIND = "model_budget_spent"

BUDGET_TITLES = {
    "en": "Reply to this customer: the assistant's model budget is spent",
    "es": "Responder a este cliente: se agotó el presupuesto de modelo del asistente",
    "vi": "Trả lời khách này: trợ lý đã dùng hết hạn mức mô hình",
}
PERIODS = {
    "en": {"hour": "this hour", "day": "today"},
    "es": {"hour": "en esta hora", "day": "hoy"},
    "vi": {"hour": "trong giờ này", "day": "hôm nay"},
}
SUMMARIES = {
    "en": (
        "The assistant has answered {limit} turns {period}, the limit set for this business. Until "
        "{resets}, customers get the hold message and a reply task each. To lift it, ask whoever runs "
        "frontdesk to raise model_turns_per_{unit}."
    ),
    "es": (
        "El asistente ya respondió {limit} turnos {period}, el límite fijado para este negocio. Hasta "
        "las {resets}, los clientes reciben el mensaje de espera y una tarea de respuesta cada uno. Para "
        "subirlo, pida a quien administra frontdesk que aumente model_turns_per_{unit}."
    ),
    "vi": (
        "Trợ lý đã trả lời {limit} lượt {period}, mức giới hạn của doanh nghiệp này. Đến {resets}, "
        "khách hàng nhận tin nhắn chờ và mỗi người một việc cần trả lời. Để nâng mức, hãy nhờ người quản "
        "lý frontdesk tăng model_turns_per_{unit}."
    ),
}


async def hold_for_budget(
    session: AsyncSession,
    *,
    tenant_id: str,
    conversation_id: str,
    spent: Spent,
    turn_id: int,
    now: datetime,
) -> None:
    tenant = await session.get(Tenant, tenant_id)
    policy = (tenant.policy or {}) if tenant is not None else {}
    language = str(policy.get("operator_language", "en"))
    language = language if language in SUMMARIES else "en"
    await hold_for_team(
        session,
        tenant_id=tenant_id,
        conversation_id=conversation_id,
        operator_language=language,
        draft="",
        reasons=[f"model budget spent: {spent.limit} turns per {spent.period}"],
        turn_id=turn_id,
        now=now,
        titles=BUDGET_TITLES,
        tell_team=False,
    )
    resets = spent.window.end.astimezone(spent.window.zone)
    summary = SUMMARIES[language].format(
        limit=spent.limit,
        period=PERIODS[language][spent.period],
        resets=resets.strftime("%H:%M %Z" if spent.period == "hour" else "%Y-%m-%d %H:%M %Z"),
        unit=spent.period,
    )
    payload = ModelBudgetSpent(period=spent.period, limit=spent.limit, resets_at=spent.window.end, summary=summary)
    event = Event(
        tenant_id=tenant_id,
        payload=payload,
        dedupe_key=f"{KIND}:{tenant_id}:{spent.period}:{spent.window.start.isoformat()}",
        recipients=await _owners(session, tenant_id),
    )
    await notify(session, event, now=now)


async def _owners(session: AsyncSession, tenant_id: str) -> tuple[Recipient, ...]:
    """The tenant's active owners, unless it routes this kind itself (then: its routing)."""
    routed = await session.scalar(
        select(NotificationSubscription.id).where(
            NotificationSubscription.tenant_id == tenant_id, NotificationSubscription.kind == KIND
        )
    )
    if routed is not None:
        return ()
    owners = await session.scalars(
        select(Operator.id).where(Operator.tenant_id == tenant_id, Operator.role == "owner", Operator.active.is_(True))
    )
    return tuple(Recipient(operator_id=operator_id) for operator_id in owners)
