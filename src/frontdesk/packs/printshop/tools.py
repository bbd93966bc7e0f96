"""The print shop's tools: four retrievals, three actions and the hand-off, each a typed contract.

Retrievals report what they returned as evidence (service ids, price texts, photo URLs, the
business-info block) so the verification gate can check the reply against it. Actions commit in
one transaction each, and report the event that really happened.
"""

from __future__ import annotations

import re
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.capabilities.tools import Tool, ToolContext, ToolEvidence, ToolFailure, ToolResult
from frontdesk.humans import hand_off, notify, open_task, open_tasks
from frontdesk.packs._pack import PackDeps
from frontdesk.packs.printshop.catalog import Service, business, catalog, find, search, search_indexed
from frontdesk.platform.store.schema import Contact, Conversation, Task

_PHONE = re.compile(r"^\+?[\d\s().-]{7,25}$")
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]{2,}$")
CATEGORIES = sorted({s.category for s in catalog().services})


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


def _phone(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if not _PHONE.match(value) or sum(c.isdigit() for c in value) < 7:
        raise ValueError("not a phone number (digits, spaces, +, -, parentheses; at least 7 digits)")
    return value


def _email(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if not _EMAIL.match(value):
        raise ValueError("not an e-mail address")
    return value.lower()


# One definition of a contact's phone and e-mail for every tool that takes them.
Phone = Annotated[str | None, Field(max_length=40), AfterValidator(_phone)]
Email = Annotated[str | None, Field(max_length=200), AfterValidator(_email)]


class SearchServicesArgs(_Args):
    query: str = Field(default="", max_length=200, description="What the customer is looking for; empty lists all")
    category: str | None = Field(default=None, description=f"Optional category: one of {', '.join(CATEGORIES)}")


class ServiceIdArgs(_Args):
    service_id: str = Field(min_length=1, max_length=100, description="A service id returned by search_services")


class PhotoArgs(ServiceIdArgs):
    limit: int = Field(default=3, ge=1, le=10)


class NoArgs(_Args):
    pass


class CaptureLeadArgs(_Args):
    service: str = Field(min_length=1, max_length=200, description="The service id or name the customer wants")
    customer_name: str = Field(min_length=1, max_length=200)
    phone: Phone = None
    email: Email = None
    quantity: int | None = Field(default=None, ge=1, le=1_000_000)
    details: str = Field(default="", max_length=1000, description="Size, paper, deadline... as the customer said")
    summary_for_team: str = Field(
        min_length=1, max_length=600, description="One or two sentences for the team, in the operator's language"
    )

    @model_validator(mode="after")
    def _reachable(self) -> CaptureLeadArgs:
        if not (self.phone or self.email):
            raise ValueError("a lead needs a phone number or an e-mail address: ask the customer for one")
        return self


class UpdateFollowUpArgs(_Args):
    follow_up_id: str = Field(min_length=1, max_length=60, description="The follow_up_id capture_lead returned")
    quantity: int | None = Field(default=None, ge=1, le=1_000_000)
    details: str | None = Field(default=None, max_length=1000)
    note_for_team: str | None = Field(default=None, max_length=600, description="In the operator's language")
    cancel: bool = False


class UpdateCustomerInfoArgs(_Args):
    name: str | None = Field(default=None, max_length=200)
    phone: Phone = None
    email: Email = None
    notes: str | None = Field(default=None, max_length=600)

    @model_validator(mode="after")
    def _something(self) -> UpdateCustomerInfoArgs:
        if not any((self.name, self.phone, self.email, self.notes)):
            raise ValueError("give at least one of name, phone, email, notes")
        return self


class ReferToHumanArgs(_Args):
    reason_for_team: str = Field(
        min_length=1, max_length=600, description="Why a person should take over, in the operator's language"
    )


def _row(service: Service) -> dict[str, Any]:
    return {
        "id": service.id,
        "name": service.name,
        "summary": service.summary,
        "price": service.price_text if service.price_is_set else "not set: quoted on request",
        "turnaround_days": service.turnaround_days,
        "min_order_quantity": service.min_order_quantity,
    }


def _price_evidence(services: list[Service]) -> ToolEvidence:
    priced = [s for s in services if s.price_is_set]  # "quoted on request" proves no price
    return ToolEvidence(
        references=frozenset(s.id for s in services),
        prices=tuple(s.price_text for s in priced),
        prices_by_reference={s.id: (s.price_text,) for s in priced},
    )


def build_tools(deps: PackDeps) -> list[Tool]:
    db, clock = deps.db, deps.clock

    def photo_url(file: str) -> str:
        return f"{deps.media_base_url.rstrip('/')}/{file}"

    async def search_services(args: SearchServicesArgs, ctx: ToolContext) -> ToolResult:
        if deps.search is None:
            found = search(args.query, args.category)
        else:
            found = await search_indexed(deps.search, args.query, args.category, ctx.tenant_id)
        return ToolResult(
            output={"results": [_row(s) for s in found], "count": len(found)},
            evidence=_price_evidence(found),
            summary={"query": args.query, "found": [{"id": s.id, "name": s.name} for s in found]},
            state_key="search",
        )

    def service_or_fail(reference: str) -> Service:
        service = find(reference)
        if service is None:
            raise ToolFailure(f"No service matches {reference!r}. Use search_services to find its id.")
        return service

    async def get_service_detail(args: ServiceIdArgs, _ctx: ToolContext) -> ToolResult:
        service = service_or_fail(args.service_id)
        output = {**_row(service), "description": service.description, "photo_count": len(service.photos)}
        return ToolResult(
            output=output,
            evidence=_price_evidence([service]),
            summary={
                "service_id": service.id,
                "name": service.name,
                "price": output["price"],
                "price_is_set": service.price_is_set,
                "turnaround_days": service.turnaround_days,
                "min_order_quantity": service.min_order_quantity,
            },
            state_key=service.id,
        )

    async def get_service_photos(args: PhotoArgs, _ctx: ToolContext) -> ToolResult:
        service = service_or_fail(args.service_id)
        photos = service.photos[: args.limit]
        return ToolResult(
            output={
                "service_id": service.id,
                "photos": [{"id": p.id, "url": photo_url(p.file), "caption": p.caption} for p in photos],
            },
            evidence=ToolEvidence(references=frozenset({service.id}), photos={p.id: photo_url(p.file) for p in photos}),
            summary={"service_id": service.id, "photo_ids": [p.id for p in photos]},
            state_key=f"photos:{service.id}",
        )

    async def get_business_info(_args: NoArgs, _ctx: ToolContext) -> ToolResult:
        info = business()
        local = clock.now().astimezone(ZoneInfo(info.timezone))
        output = {**info.model_dump(), "local_time_now": local.strftime("%A %H:%M")}
        return ToolResult(
            output=output,
            evidence=ToolEvidence(facts=frozenset({"business_info"}), contacts=(info.phone, info.email, info.website)),
            summary={"address": info.address, "phone": info.phone, "hours": [h.model_dump() for h in info.hours]},
            state_key="business",
        )

    async def contact_of(session: AsyncSession, ctx: ToolContext) -> Contact:
        contact = await session.scalar(
            select(Contact)
            .join(Conversation, Conversation.contact_id == Contact.id)
            .where(Conversation.id == ctx.conversation_id)
        )
        if contact is None:
            raise ToolFailure("this conversation has no contact")
        return contact

    async def capture_lead(args: CaptureLeadArgs, ctx: ToolContext) -> ToolResult:
        service = service_or_fail(args.service)
        now = clock.now()
        async with db.transaction() as session:
            contact = await contact_of(session, ctx)
            contact.name = args.customer_name
            contact.phone = args.phone or contact.phone
            contact.email = args.email or contact.email
            same = [
                t
                for t in await open_tasks(session, ctx.conversation_id, "follow_up")
                if t.details.get("service_id") == service.id
            ]
            if same:  # a second capture of the same request updates nothing and opens nothing
                task, created = same[0], False
            else:
                task = await open_task(
                    session,
                    tenant_id=ctx.tenant_id,
                    conversation_id=ctx.conversation_id,
                    kind="follow_up",
                    priority="normal",
                    title=f"{service.name}: {args.summary_for_team}",
                    details={
                        "service_id": service.id,
                        "service_name": service.name,
                        "quantity": args.quantity,
                        "details": args.details,
                        "summary": args.summary_for_team,
                        "customer_name": args.customer_name,
                        "phone": args.phone,
                        "email": args.email,
                    },
                    now=now,
                )
                created = True
                await notify(
                    session,
                    tenant_id=ctx.tenant_id,
                    kind="lead",
                    text=f"New lead — {service.name}: {args.summary_for_team}",
                    now=now,
                    conversation_id=ctx.conversation_id,
                    task_id=task.id,
                    dedupe_key=f"lead:{task.id}",
                )
        saved_quantity = task.details.get("quantity")
        output: dict[str, Any] = {"follow_up_id": task.id, "service": service.name, "status": "saved", "new": created}
        if not created:
            output["note"] = (
                f"This request was already saved (quantity {saved_quantity}); nothing changed. "
                "Use update_follow_up to change it."
            )
        return ToolResult(
            output=output,
            evidence=ToolEvidence(
                references=frozenset({service.id}),
                events=(("lead_captured", task.id),),
                contacts=tuple(c for c in (contact.phone, contact.email) if c),  # saved: may be read back
            ),
            summary={"follow_up_id": task.id, "service": service.name, "quantity": saved_quantity},
            state_key=f"lead:{task.id}",
        )

    async def update_follow_up(args: UpdateFollowUpArgs, ctx: ToolContext) -> ToolResult:
        now = clock.now()
        async with db.transaction() as session:
            task = await session.get(Task, args.follow_up_id)
            if task is None or task.conversation_id != ctx.conversation_id or task.kind != "follow_up":
                raise ToolFailure(f"No follow-up {args.follow_up_id!r} in this conversation.")
            if task.status != "open":
                raise ToolFailure(f"Follow-up {args.follow_up_id!r} is already {task.status}.")
            details = dict(task.details)
            if args.quantity is not None:
                details["quantity"] = args.quantity
            if args.details is not None:
                details["details"] = args.details
            if args.note_for_team:
                details["notes"] = [*details.get("notes", []), args.note_for_team]
            task.details = details
            task.status = "cancelled" if args.cancel else task.status
            task.updated_at = now
        return ToolResult(
            output={"follow_up_id": task.id, "status": task.status, "quantity": details.get("quantity")},
            evidence=ToolEvidence(events=(("follow_up_updated", task.id),)),
            summary={"follow_up_id": task.id, "status": task.status, "quantity": details.get("quantity")},
            state_key=f"lead:{task.id}",
        )

    async def update_customer_info(args: UpdateCustomerInfoArgs, ctx: ToolContext) -> ToolResult:
        async with db.transaction() as session:
            contact = await contact_of(session, ctx)
            for field in ("name", "phone", "email", "notes"):
                value = getattr(args, field)
                if value:
                    setattr(contact, field, value)
            saved = {"name": contact.name, "phone": contact.phone, "email": contact.email}
        return ToolResult(
            output={"saved": saved},
            evidence=ToolEvidence(
                events=(("customer_info_updated", None),),
                contacts=tuple(c for c in (saved["phone"], saved["email"]) if c),
            ),
            summary={"saved": sorted(k for k, v in args.model_dump().items() if v)},
            state_key="customer",
        )

    async def refer_to_human(args: ReferToHumanArgs, ctx: ToolContext) -> ToolResult:
        async with db.transaction() as session:
            task = await hand_off(
                session,
                tenant_id=ctx.tenant_id,
                conversation_id=ctx.conversation_id,
                reason=args.reason_for_team,
                run_key=ctx.turn_key,
                now=clock.now(),
            )
        return ToolResult(
            output={
                "handoff": "done",
                "task_id": task.id,
                "note": "A person from the team now has this conversation. Tell the customer so, politely.",
            },
            evidence=ToolEvidence(events=(("handoff_triggered", task.id),)),
            summary={"task_id": task.id},
            state_key="handoff",
        )

    return [
        Tool(
            "search_services",
            "Find services the shop offers (name, price, turnaround, minimum quantity). Empty query lists all.",
            SearchServicesArgs,
            search_services,
        ),
        Tool("get_service_detail", "Full details and price of one service, by id.", ServiceIdArgs, get_service_detail),
        Tool("get_service_photos", "Photos of one service, by id (URLs you may show).", PhotoArgs, get_service_photos),
        Tool("get_business_info", "Opening hours, address, phone, e-mail and website.", NoArgs, get_business_info),
        Tool(
            "capture_lead",
            "Save the customer's request for the team: resolves the service, saves the contact, opens a "
            "follow-up and notifies the team, all at once. Needs a name and a phone or e-mail.",
            CaptureLeadArgs,
            capture_lead,
            kind="action",
        ),
        Tool(
            "update_follow_up",
            "Change or cancel a saved request (quantity, details, a note for the team).",
            UpdateFollowUpArgs,
            update_follow_up,
            kind="action",
        ),
        Tool(
            "update_customer_info",
            "Save the customer's name, phone, e-mail or a note about them.",
            UpdateCustomerInfoArgs,
            update_customer_info,
            kind="action",
        ),
        Tool(
            "refer_to_human",
            "Hand this conversation to a person from the team (AI stops answering this thread).",
            ReferToHumanArgs,
            refer_to_human,
            kind="handoff",
        ),
    ]
