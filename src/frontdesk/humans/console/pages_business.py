"""The business profile (``/console/business``): who the business is, where, how to reach it and
when it is open, as its tools tell customers. Everyone signed in reads it; an owner edits it.

One form saves everything, dated exceptions included (a new one is added, ticked ones removed),
as one ``BusinessStore.save_profile``: one audit row with each changed field before and after,
and nothing at all when the form comes back unchanged. A refused form is shown again (422) with
the owner's input and each problem next to its field; nothing is saved.
"""

from __future__ import annotations

from functools import cache
from typing import Any
from zoneinfo import available_timezones

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError

from frontdesk.business import BusinessData, BusinessProfile, SpecialDay
from frontdesk.business.profile import WEEKDAYS
from frontdesk.errors import PayloadError
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._forms import (
    FormProblems,
    Values,
    actor_of,
    business_store,
    form_list,
    form_values,
    grouped,
    nul_problems,
    refusal_lines,
    texts,
    validation_lines,
)
from frontdesk.humans.console._guard import actor, redirect, viewer
from frontdesk.humans.console._render import page
from frontdesk.humans.console.auth import Principal
from frontdesk.humans.console.csrf import read_form

PATH = "/console/business"
FIELDS = (
    "name",
    "description",
    "address",
    "phone",
    "email",
    "website",
    "timezone",
    "hours",
    *(f"hours.{day}" for day in WEEKDAYS),
    "exceptions",
    "new_exception",
    "notes",
    "hold_message",
)
NOTICES = ("saved", "unchanged")


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    @router.get(PATH, response_class=HTMLResponse)
    async def business_page(request: Request) -> Response:
        me = await viewer(deps, request)
        data = await business_store(deps, request).read(me.tenant_id)
        notice = request.query_params.get("notice", "")
        return _page(me, data, profile_values(data), notice=notice if notice in NOTICES else "")

    @router.post(PATH, response_class=HTMLResponse)
    async def business_save(request: Request) -> Response:
        me = await actor(deps, request, owner=True)
        form = await read_form(request)  # already read (and size-checked) by the CSRF check
        values, removed = form_values(form), form_list(form, "remove_exception")
        store = business_store(deps, request)
        data = await store.read(me.tenant_id)
        try:
            profile = profile_from(values, removed, data)
            changed = await store.save_profile(me.tenant_id, profile, actor_of(me))
        except FormProblems as exc:
            return _page(me, data, values, removed=removed, errors=exc.by_field, status=422)
        except PayloadError as exc:  # the store's own checks (the tenant's languages)
            errors = grouped(refusal_lines(exc), FIELDS)
            return _page(me, data, values, removed=removed, errors=errors, status=422)
        raise redirect(f"{PATH}?notice={'saved' if changed else 'unchanged'}")


def _page(
    me: Principal,
    data: BusinessData,
    values: Values,
    *,
    removed: list[str] | None = None,
    errors: dict[str, list[str]] | None = None,
    notice: str = "",
    status: int = 200,
) -> Response:
    return page(
        "business.html",
        me,
        data=data,
        values=values,
        exceptions=data.profile.exceptions if data.profile else [],
        removed=removed or [],
        errors=errors or {},
        notice=notice,
        weekdays=WEEKDAYS,
        zones=_zones(),
        status=status,
    )


@cache
def _zones() -> list[str]:
    """The IANA names offered as suggestions (any valid one is accepted)."""
    return sorted(z for z in available_timezones() if "/" in z and not z.startswith(("Etc/", "posix/", "right/")))


def profile_values(data: BusinessData) -> Values:
    """The stored profile as the form shows it (a business without one starts from its name)."""
    profile = data.profile
    if profile is None:
        return {"name": data.name, "timezone": data.timezone}
    values: Values = {
        "name": profile.name,
        "address": profile.address,
        "phone": profile.phone or "",
        "email": profile.email or "",
        "website": profile.website or "",
        "timezone": profile.timezone,
    }
    for field in ("description", "notes", "hold_message"):
        for language, text in getattr(profile, field).items():
            values[f"{field}.{language}"] = text
    for day in WEEKDAYS:
        values[f"hours.{day}"] = ", ".join(profile.hours.get(day, []))
    return values


def profile_from(values: Values, removed: list[str], data: BusinessData) -> BusinessProfile:
    """The posted form as a profile: the stored exceptions but the ticked ones, plus the new one
    if its fields were filled in; else ``FormProblems``."""
    languages = list(data.languages)
    lines = nul_problems(values)
    new_lines: list[str] = []
    kept: list[SpecialDay] = [
        day for day in (data.profile.exceptions if data.profile else []) if day.date.isoformat() not in removed
    ]
    new_day = _new_exception(values, languages, new_lines)
    fields: dict[str, Any] = {
        "name": values.get("name", ""),
        "description": texts(values, "description", languages),
        "address": values.get("address", ""),
        "phone": values.get("phone", ""),
        "email": values.get("email", ""),
        "website": values.get("website", ""),
        "timezone": values.get("timezone", ""),
        "hours": {day: values.get(f"hours.{day}", "") for day in WEEKDAYS},
        "exceptions": [*kept, *([new_day] if new_day else [])],
        "notes": texts(values, "notes", languages),
        "hold_message": texts(values, "hold_message", languages),
    }
    profile = None
    try:
        profile = BusinessProfile.model_validate(fields)
    except ValidationError as exc:
        lines += validation_lines(exc)
    else:
        lines += profile.language_problems(languages)
    by_field = grouped(lines, FIELDS)
    if new_lines:
        by_field.setdefault("new_exception", []).extend(new_lines)
    if profile is None or any(by_field.values()):
        raise FormProblems(by_field)
    return profile


def _new_exception(values: Values, languages: list[str], lines: list[str]) -> SpecialDay | None:
    """The dated exception being added, if any of its fields is filled in (problems go to ``lines``)."""
    day = values.get("new_exception.date", "")
    closed = values.get("new_exception.closed") == "true"
    hours = values.get("new_exception.hours", "")
    note = texts(values, "new_exception.note", languages)
    if not (day or closed or hours or note):
        return None
    try:
        return SpecialDay.model_validate({"date": day, "closed": closed, "hours": hours, "note": note})
    except ValidationError as exc:
        lines += validation_lines(exc)
        return None
