"""Saving an AI turn as a scenario file ("save as scenario" on the thread page) and the tenant's
saved scenarios. What goes into the file is ``humans/console/scenario_file.py``'s; this module reads the
conversation and the business from the store, masks the customer's details, and keeps the file
in the tenant's store until the owner downloads it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.business.files import document
from frontdesk.business.store import BusinessStore
from frontdesk.context.identity import IdentityPolicy
from frontdesk.errors import NotFoundError, PayloadError
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._render import audit
from frontdesk.humans.console.auth import Principal
from frontdesk.humans.console.masking import Masker
from frontdesk.humans.console.scenario_file import (
    Correction,
    NothingToCheck,
    Provenance,
    RecordedTurn,
    Saved,
    Tenancy,
    build,
)
from frontdesk.humans.console.threads import ThreadRow, get_thread
from frontdesk.output.blocks import blocks_adapter
from frontdesk.platform.store.schema import ClaimRejection, Message, Tenant, TurnTrace
from frontdesk.platform.store.schema_inbox import SavedScenario

MAX_TURNS = 12  # the flagged turn and up to eleven before it: the context that led to it
MAX_LISTED = 200
MAX_MESSAGES_READ = 2000  # of a thread's customer messages, for the details to mask


async def save_scenario(
    deps: ConsoleDeps, me: Principal, conversation_id: str, turn_id: int, correction: Correction
) -> SavedScenario:
    """The flagged turn (an AI turn of this tenant's thread, else 404) as a scenario file, kept
    once it is proven to do its job: played, it passes with the correction and fails with the
    reply that was sent. ``PayloadError`` (422, with the reason) when the correction changes
    nothing the file could check, or when the file would not do its job."""
    async with deps.db.read() as session:
        thread = await get_thread(session, me, conversation_id)
        turns = await _recorded_turns(session, conversation_id, turn_id)
        tenancy = await _tenancy(session, deps, thread)
        # Every detail the customer ever gave in the thread, not only in the turns replayed: an
        # earlier number can come back in a reply or a tool's arguments.
        given = list(
            await session.scalars(
                select(Message.content)
                .where(Message.conversation_id == conversation_id, Message.role == "user")
                .order_by(Message.id.desc())
                .limit(MAX_MESSAGES_READ)
            )
        )
    masker = Masker([*given, thread.contact.phone or "", thread.contact.email or ""])
    try:
        saved = build(turns, tenancy, correction, masker, Provenance(me.name, deps.clock.now(), conversation_id))
    except NothingToCheck as exc:
        raise PayloadError(str(exc), details=[f"reply: {exc}"]) from exc
    # Played before it is kept: green with the correction, red with the reply that was sent.
    problem = await deps.scenario_trial(saved.content, saved.replayed) if deps.scenario_trial else ""
    if problem:
        raise PayloadError(problem, details=[f"reply: {problem}"])
    return await _keep(deps, me, conversation_id, turn_id, saved)


async def flagged_turn(deps: ConsoleDeps, me: Principal, conversation_id: str, turn_id: int) -> RecordedTurn:
    """The AI turn an operator is saving (404 unless it is one of this tenant's thread's)."""
    async with deps.db.read() as session:
        await get_thread(session, me, conversation_id)
        return (await _recorded_turns(session, conversation_id, turn_id, limit=1))[-1]


async def _keep(deps: ConsoleDeps, me: Principal, conversation_id: str, turn_id: int, saved: Saved) -> SavedScenario:
    now = deps.clock.now()
    row = SavedScenario(
        tenant_id=me.tenant_id,
        conversation_id=conversation_id,
        turn_id=turn_id,
        note=saved.note,
        sent=saved.sent,
        checks={"must_say": saved.must_say, "must_not_say": saved.must_not_say},
        content=saved.content,
        saved_by=me.name,
        created_at=now,
    )
    async with deps.db.transaction() as session:
        session.add(row)
        await session.flush()
        audit(session, me, me.tenant_id, "scenario.saved", now, target=str(row.id), details={"turn": turn_id})
    return row


async def _recorded_turns(
    session: AsyncSession, conversation_id: str, turn_id: int, *, limit: int = MAX_TURNS
) -> list[RecordedTurn]:
    flagged = await session.get(TurnTrace, turn_id)
    if flagged is None or flagged.conversation_id != conversation_id:
        raise NotFoundError("no such AI turn in this conversation")
    traces = list(
        await session.scalars(
            select(TurnTrace)
            .where(TurnTrace.conversation_id == conversation_id, TurnTrace.id <= turn_id)
            .order_by(TurnTrace.id.desc())
            .limit(limit)
        )
    )[::-1]
    ids = [t.id for t in traces]
    messages = list(await session.scalars(select(Message).where(Message.turn_id.in_(ids)).order_by(Message.id)))
    refused = list(
        await session.scalars(select(ClaimRejection).where(ClaimRejection.turn_id.in_(ids)).order_by(ClaimRejection.id))
    )
    turns = [
        _turn(t, [m for m in messages if m.turn_id == t.id], [r for r in refused if r.turn_id == t.id]) for t in traces
    ]
    # A turn without the customer's words (a photo alone) cannot be replayed by a script that
    # matches on them; the flagged turn must have them.
    if not turns or not turns[-1].said or turns[-1].trace_id != turn_id:
        raise NotFoundError("this turn has no customer text to replay")
    if not turns[-1].blocks:
        raise NotFoundError("this turn sent no reply")
    return [t for t in turns[:-1] if t.said] + [turns[-1]]


def _turn(trace: TurnTrace, messages: Sequence[Message], refused: Sequence[ClaimRejection]) -> RecordedTurn:
    # What the model read of each message: a voice note's transcript and a photo's caption go as
    # text (the eval sends text); a photo without one has nothing to replay.
    said = [m.content for m in messages if m.role == "user" and (m.content or "").strip()]
    # The reply this turn sent (an operator's later message has no turn).
    reply = next((m for m in messages if m.role == "assistant" and m.content_type == "blocks"), None)
    blocks: list[dict[str, Any]] = (
        [b.model_dump(mode="json", exclude_none=True) for b in blocks_adapter.validate_json(reply.content)]
        if reply is not None
        else []
    )
    return RecordedTurn(
        trace_id=trace.id,
        started_at=trace.started_at,
        said=said,
        calls=[c for c in trace.tool_calls if isinstance(c, dict)],
        refused=[{"reply_text": r.reply_text or "", "claims": list(r.claims or [])} for r in refused],
        blocks=blocks,
        claims=[c for c in trace.claims if isinstance(c, dict)],
        outcome=trace.outcome,
    )


async def _tenancy(session: AsyncSession, deps: ConsoleDeps, thread: ThreadRow) -> Tenancy:
    tenant = await session.get(Tenant, thread.conversation.tenant_id)
    assert tenant is not None
    data = await BusinessStore(deps.db, deps.clock).read_in(session, tenant.id)
    identity = set(IdentityPolicy.model_fields)
    return Tenancy(
        pack=tenant.pack,
        channel=thread.account.channel,
        languages=list(tenant.languages or ["en"]),
        policy={k: v for k, v in (tenant.policy or {}).items() if k in identity},
        business=document(data.profile, list(data.items), {}),
    )


async def list_scenarios(deps: ConsoleDeps, me: Principal) -> list[SavedScenario]:
    async with deps.db.read() as session:
        return list(
            await session.scalars(
                select(SavedScenario)
                .where(SavedScenario.tenant_id == me.tenant_id)
                .order_by(SavedScenario.id.desc())
                .limit(MAX_LISTED)
            )
        )


async def get_scenario(deps: ConsoleDeps, me: Principal, scenario_id: int) -> SavedScenario:
    async with deps.db.read() as session:
        row = await session.get(SavedScenario, scenario_id)
    if row is None or row.tenant_id != me.tenant_id:
        raise NotFoundError("no such scenario")
    return row
