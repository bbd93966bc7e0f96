"""The catalog pack's tools: four retrievals, three actions and the hand-off, each a typed contract.

Retrievals read the tenant's own business data from the store (``frontdesk.business``) at every
call, so an owner's edit is what the next turn quotes, and report what they returned as evidence
(item ids, price texts made from the structured prices, photo URLs, the business-info block,
stamped with the data revision they were read at) so the verification gate can check the reply
against it. Actions commit in one transaction each, and report the event that really happened.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.business import BusinessData, BusinessStore, CatalogItem, Photo
from frontdesk.business.profile import EMAIL, WEEKDAYS, BusinessProfile, spoken_range, weekly_lines
from frontdesk.business.text import pick
from frontdesk.capabilities.tools import BindKind, Tool, ToolContext, ToolEvidence, ToolFailure, ToolResult
from frontdesk.humans import hand_off, notify, open_task, open_tasks
from frontdesk.packs._pack import PackDeps
from frontdesk.packs.catalog.answers import (
    DAY_WORDS,
    ENGLISH_DAYS,
    DayWords,
    detail_answer,
    hours_answer,
    listing_answer,
)
from frontdesk.packs.catalog.items import find, search, search_indexed
from frontdesk.platform.store.schema import Contact, Conversation, Task
from frontdesk.verification.facts import day_words, relative_days

_PHONE = re.compile(r"^\+?[\d\s().-]{7,25}$")


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
    if not EMAIL.fullmatch(value):
        raise ValueError("not an e-mail address")
    return value.lower()


# One definition of a contact's phone and e-mail for every tool that takes them.
Phone = Annotated[str | None, Field(max_length=40), AfterValidator(_phone)]
Email = Annotated[str | None, Field(max_length=200), AfterValidator(_email)]


# Fields bound to the conversation (``reasoning.binding``): a contact only as the customer gave
# it, an item only by one of the business's ids.
CONTACT_BOUND: dict[str, BindKind] = {"phone": "phone", "email": "email"}
ITEM_BOUND: dict[str, BindKind] = {"service_id": "item"}


class SearchServicesArgs(_Args):
    query: str = Field(default="", max_length=200, description="What the customer is looking for; empty lists all")
    category: str | None = Field(default=None, max_length=60, description="Optional category of the catalog")


class ServiceIdArgs(_Args):
    service_id: str = Field(min_length=1, max_length=100, description="An item id returned by search_services")


class PhotoArgs(ServiceIdArgs):
    limit: int = Field(default=3, ge=1, le=10)


class NoArgs(_Args):
    pass


class CaptureLeadArgs(_Args):
    service: str = Field(min_length=1, max_length=200, description="The item id or name the customer wants")
    customer_name: str = Field(min_length=1, max_length=200)
    phone: Phone = None
    email: Email = None
    quantity: int | None = Field(default=None, ge=1, le=1_000_000)
    details: str = Field(default="", max_length=1000, description="Size, options, deadline... as the customer said")
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


# More search results than this are listed by name and price only.
LISTING_ROWS = 6


def _row(item: CatalogItem, language: str, default: str) -> dict[str, Any]:
    prices = item.price_texts(language, default)
    return {
        "id": item.id,
        "name": item.display_name(language, default),
        "summary": item.summary.get(language) or item.summary.get(default, ""),
        "price": ", ".join(prices) if prices else "not set: quoted on request",
        "turnaround_days": item.turnaround_days,
        "min_order_quantity": item.min_quantity,
    }


def _price_evidence(items: list[CatalogItem], data: BusinessData, language: str) -> ToolEvidence:
    """Each tier's text, made from its amount and currency ("quoted on request" proves no price)."""
    default = data.default_language
    by_item = {i.id: tuple(i.price_texts(language, default)) for i in items if i.priced}
    return ToolEvidence(
        references=frozenset(i.id for i in items),
        prices=tuple(t for texts in by_item.values() for t in texts),
        prices_by_reference=by_item,
        turnaround_days={i.id: i.turnaround_days for i in items if i.turnaround_days is not None},
        minimums={i.id: i.min_quantity for i in items},
        revision=data.revision,
    )


def _schedule(profile: BusinessProfile, today: date) -> dict[str, tuple[str, ...]]:
    """The hours the tool returned, for the gate: each weekday's ranges, then each upcoming
    special day's by its date (none: closed)."""
    weekly = {day: tuple(profile.hours.get(day, [])) for day in WEEKDAYS}
    special = {
        day.date.isoformat(): () if day.closed else tuple(day.hours) for day in profile.upcoming_exceptions(today)
    }
    return {**weekly, **special}


def _photo_url(base: str, tenant_id: str, photo: Photo) -> str:
    return f"{base.rstrip('/')}/{tenant_id}/{photo.file_name}"


def _days_named(message: str, today: date) -> list[tuple[date, int | None]]:
    """Each day the customer named, once, in order: the next such weekday ("open on Sunday?", "chủ
    nhật", "el sábado"), or today/tomorrow (with how many days ahead it is)."""
    named: list[tuple[date, int | None]] = [
        (today + timedelta(days=(WEEKDAYS.index(key) - today.weekday()) % 7), None) for _, key in day_words(message)
    ]
    named += [(today + timedelta(days=ahead), ahead) for _, ahead in relative_days(message)]
    return list(dict.fromkeys(named))


def _hours_of(
    profile: BusinessProfile, named: list[tuple[date, int | None]], language: str, words: DayWords = ENGLISH_DAYS
) -> dict[str, str]:
    """The hours of each day named (``_days_named``), a special day's if it is one, first in the
    tool's output: a 1.5B model read the week's lines and stated another day's. ``words``: how the
    days are named (English for the model to read; the customer's language for the tool's own answer)."""
    relative_words = {0: words.today, 1: words.tomorrow}
    asked: dict[str, str] = {}
    for day, ahead in named:
        ranges, special = profile.hours_on(day)
        label = words.weekdays[day.weekday()] + (f" {day.isoformat()}" if special else "")
        relative = relative_words.get(ahead, "") if ahead is not None else ""
        label += f" ({relative})" if relative else ""
        asked[label] = ", ".join(spoken_range(r, language) for r in ranges) or words.closed
    return asked


def _business_output(data: BusinessData, language: str, now: datetime, asked: dict[str, str]) -> dict[str, Any]:
    """``asked``: the hours of the days the customer named, as the model reads them (``_hours_of``)."""
    profile = data.profile
    assert profile is not None
    default = data.default_language
    local = now.astimezone(profile.zone)
    today, special = profile.hours_on(local.date())
    output: dict[str, Any] = {
        "hours_of_the_days_asked": asked,
        "name": profile.name,
        "description": pick(profile.description, language, default),
        "address": profile.address,
        "phone": profile.phone,
        "email": profile.email,
        "website": profile.website,
        "timezone": profile.timezone,
        "local_time_now": local.strftime("%A %Y-%m-%d %H:%M"),
        "open_now": profile.open_at(now),
        "today": {
            "hours": [spoken_range(r, language) for r in today] or "closed",
            **({"note": pick(special.note, language, default)} if special else {}),
        },
        # Asked about some days, the customer gets those: the week besides only gave a small
        # model other days' hours to state.
        "weekly_hours": [] if asked else weekly_lines(profile, language),
        "special_days": [
            {
                "date": day.date.isoformat(),
                "hours": "closed" if day.closed else [spoken_range(r, language) for r in day.hours],
                "note": pick(day.note, language, default),
            }
            for day in profile.upcoming_exceptions(local.date())
        ],
        "notes": pick(profile.notes, language, default),
    }
    return {k: v for k, v in output.items() if v not in (None, "", [], {})}


def build_tools(deps: PackDeps) -> list[Tool]:
    db, clock = deps.db, deps.clock
    store = BusinessStore(db, clock)

    async def catalog_of(ctx: ToolContext) -> BusinessData:
        return await store.read(ctx.tenant_id)

    async def search_services(args: SearchServicesArgs, ctx: ToolContext) -> ToolResult:
        data = await catalog_of(ctx)
        # A category the catalog does not have ("all", a guess) is no filter: searched with it,
        # a small model told a customer browsing the catalog that nothing was on offer.
        categories = sorted({i.category for i in data.active_items if i.category})
        known = {c.lower(): c for c in categories}
        category = known.get((args.category or "").strip().lower())
        if deps.search is None:
            found = search(data.active_items, args.query, category)
        else:
            found = await search_indexed(deps.search, data, args.query, category)
        language, default = ctx.customer_language, data.default_language
        unknown = {"categories": categories} if args.category and category is None else {}
        rows = [_row(i, language, default) for i in found]
        if len(rows) > LISTING_ROWS:
            # A listing (what do you print?) names and prices each item; its details are one call
            # away. Whole, the print shop's 15 rows were ~1,500 tokens: 11 s for a small model to read.
            rows = [{k: row[k] for k in ("id", "name", "price")} for row in rows]
        return ToolResult(
            output={"results": rows, "count": len(found), **unknown},
            evidence=_price_evidence(found, data, language),
            # A listing answers "what do you print?"; a few rows answer a search the model should read.
            answer=listing_answer([row["name"] for row in rows], language) if len(rows) > LISTING_ROWS else None,
            summary={
                "query": args.query,
                "found": [{"id": i.id, "name": i.display_name(default, default)} for i in found],
            },
            state_key="search",
        )

    def item_or_fail(data: BusinessData, reference: str) -> CatalogItem:
        item = find(data.active_items, reference)
        if item is None:
            raise ToolFailure(f"Nothing in the catalog matches {reference!r}. Use search_services to find its id.")
        return item

    async def get_service_detail(args: ServiceIdArgs, ctx: ToolContext) -> ToolResult:
        data = await catalog_of(ctx)
        item = item_or_fail(data, args.service_id)
        language, default = ctx.customer_language, data.default_language
        row = _row(item, language, default)
        description = item.description.get(language) or item.description.get(default, "")
        output = {**row, "description": description, "photo_count": len(item.photos)}
        return ToolResult(
            output=output,
            evidence=_price_evidence([item], data, language),
            answer=detail_answer(
                row["name"], item.price_texts(language, default), item.turnaround_days, item.min_quantity, language
            ),
            summary={
                "service_id": item.id,
                "name": item.display_name(default, default),
                "price": row["price"],
                "price_is_set": item.priced,
                "turnaround_days": item.turnaround_days,
                "min_order_quantity": item.min_quantity,
            },
            state_key=item.id,
        )

    async def get_service_photos(args: PhotoArgs, ctx: ToolContext) -> ToolResult:
        data = await catalog_of(ctx)
        item = item_or_fail(data, args.service_id)
        photos = item.photos[: args.limit]
        urls = {p.id: _photo_url(deps.media_base_url, data.tenant_id, p) for p in photos}
        language, default = ctx.customer_language, data.default_language
        captions = {urls[p.id]: caption for p in photos if (caption := pick(p.caption, language, default))}
        return ToolResult(
            output={
                "service_id": item.id,
                "photos": [{"id": p.id, "url": urls[p.id], "caption": captions.get(urls[p.id], "")} for p in photos],
            },
            evidence=ToolEvidence(
                references=frozenset({item.id}), photos=urls, captions=captions, revision=data.revision
            ),
            summary={"service_id": item.id, "photo_ids": [p.id for p in photos]},
            state_key=f"photos:{item.id}",
        )

    async def get_business_info(_args: NoArgs, ctx: ToolContext) -> ToolResult:
        data = await catalog_of(ctx)
        if data.profile is None:
            raise ToolFailure("The business has not filled in its profile yet: offer to have the team answer.")
        profile = data.profile
        language, now = ctx.customer_language, clock.now()
        today = now.astimezone(profile.zone).date()
        named = _days_named(ctx.customer_message, today)
        output = _business_output(data, language, now, _hours_of(profile, named, language))
        words = DAY_WORDS.get(language)
        said = _hours_of(profile, named, language, words) if words else {}
        contacts = tuple(c for c in (profile.phone, profile.email, profile.website) if c)
        return ToolResult(
            output=output,
            evidence=ToolEvidence(
                facts=frozenset({"business_info"}),
                contacts=contacts,
                schedule=_schedule(profile, today),
                revision=data.revision,
            ),
            summary={"address": profile.address, "phone": profile.phone, "hours": weekly_lines(profile)},
            state_key="business",
            answer=hours_answer(list(said.items()), language),
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
        data = await catalog_of(ctx)
        item = item_or_fail(data, args.service)
        name = item.display_name(data.default_language, data.default_language)  # the operators' words
        now = clock.now()
        async with db.transaction() as session:
            contact = await contact_of(session, ctx)
            contact.name = args.customer_name
            contact.phone = args.phone or contact.phone
            contact.email = args.email or contact.email
            same = [
                t
                for t in await open_tasks(session, ctx.conversation_id, "follow_up")
                if t.details.get("service_id") == item.id
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
                    title=f"{name}: {args.summary_for_team}",
                    details={
                        "service_id": item.id,
                        "service_name": name,
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
                    text=f"New lead — {name}: {args.summary_for_team}",
                    now=now,
                    conversation_id=ctx.conversation_id,
                    task_id=task.id,
                    dedupe_key=f"lead:{task.id}",
                )
        saved_quantity = task.details.get("quantity")
        output: dict[str, Any] = {"follow_up_id": task.id, "service": name, "status": "saved", "new": created}
        if not created:
            output["note"] = (
                f"This request was already saved (quantity {saved_quantity}); nothing changed. "
                "Use update_follow_up to change it."
            )
        return ToolResult(
            output=output,
            evidence=ToolEvidence(
                references=frozenset({item.id}),
                events=(("lead_captured", task.id),),
                contacts=tuple(c for c in (contact.phone, contact.email) if c),  # saved: may be read back
            ),
            summary={"follow_up_id": task.id, "service": name, "quantity": saved_quantity},
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
        # What the request now says, so the reply (and the gate) can tell what really changed.
        recorded = {"quantity": details.get("quantity"), "details": details.get("details")}
        return ToolResult(
            output={"follow_up_id": task.id, "status": task.status, **recorded},
            # A cancellation is its own event: "your request is cancelled" needs one, not any update.
            evidence=ToolEvidence(
                events=(("follow_up_updated", task.id), *((("follow_up_cancelled", task.id),) if args.cancel else ()))
            ),
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
        # Facts only: an instruction in a result can be copied out to the customer word for word
        # (how to answer after a hand-off is the playbook's business).
        return ToolResult(
            output={
                "handoff": "done",
                "task_id": task.id,
                "status": "a person from the team now has this conversation",
            },
            evidence=ToolEvidence(events=(("handoff_triggered", task.id),)),
            summary={"task_id": task.id},
            state_key="handoff",
        )

    return [
        Tool(
            "search_services",
            "Find what the business offers, products and services (name, price, turnaround, minimum "
            "quantity). Empty query lists all.",
            SearchServicesArgs,
            search_services,
        ),
        Tool(
            "get_service_detail",
            "Full details and price of one item, by id.",
            ServiceIdArgs,
            get_service_detail,
            binds=ITEM_BOUND,
        ),
        Tool(
            "get_service_photos",
            "Photos of one item, by id (URLs you may show).",
            PhotoArgs,
            get_service_photos,
            binds=ITEM_BOUND,
        ),
        Tool(
            "get_business_info",
            "Opening hours (today, weekly, holidays), address, phone, e-mail and website.",
            NoArgs,
            get_business_info,
        ),
        Tool(
            "capture_lead",
            "Save the customer's request for the team: resolves the item, saves the contact, opens a "
            "follow-up and notifies the team, all at once. Needs a name and a phone or e-mail.",
            CaptureLeadArgs,
            capture_lead,
            kind="action",
            binds={"service": "item", **CONTACT_BOUND},
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
            binds=CONTACT_BOUND,
        ),
        Tool(
            "refer_to_human",
            "Hand this conversation to a person from the team (AI stops answering this thread).",
            ReferToHumanArgs,
            refer_to_human,
            kind="handoff",
        ),
    ]
