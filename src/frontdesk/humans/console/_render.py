"""Jinja2 rendering (autoescaped), the form parser and the audit writer shared by the pages."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape
from pydantic import BaseModel, ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.errors import PayloadError, TooLargeError
from frontdesk.humans.console.auth import Principal
from frontdesk.humans.console.csrf import read_form
from frontdesk.humans.console.i18n import translator
from frontdesk.platform.store.schema_console import AuditEntry

ENV = Environment(
    loader=PackageLoader("frontdesk.humans.console", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
Form = TypeVar("Form", bound=BaseModel)
HEADERS = {
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' https: data:; style-src 'self'; "
    "script-src 'self'; frame-ancestors 'none'; form-action 'self'",
}


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value else ""


ENV.filters["when"] = _when


def page(
    template: str,
    principal: Principal | None,
    *,
    language: str | None = None,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    lang = principal.language if principal else language
    html = ENV.get_template(template).render(t=translator(lang), me=principal, lang=lang or "en", **context)
    return HTMLResponse(html, status_code=status, headers=HEADERS)


async def parse_form(request: Request, model: type[Form]) -> Form:
    """A form post as a frozen model; anything else is a 4xx naming the field, never a 500."""
    try:
        form = await read_form(request)
    except TooLargeError:
        raise
    except Exception as exc:  # a malformed multipart body is the sender's fault
        raise PayloadError("the form could not be read", malformed=True) from exc
    values = {k: v for k, v in form.items() if isinstance(v, str) and k != "csrf"}
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        problems = [
            {"field": ".".join(map(str, e["loc"])), "problem": e["msg"]}
            for e in exc.errors(include_url=False, include_input=False)
        ]
        message = "invalid form: " + "; ".join(f"{p['field']}: {p['problem']}" for p in problems)
        raise PayloadError(message, details=problems) from exc


def audit(
    session: AsyncSession,
    principal: Principal | None,
    tenant_id: str,
    action: str,
    now: datetime,
    *,
    target: str | None = None,
    details: dict[str, Any] | None = None,
    operator_id: str | None = None,
) -> None:
    """Add an audit row to the caller's transaction (it commits with the action, or not at all).
    ``operator_id`` names the actor before they have a session (signing in)."""
    session.add(
        AuditEntry(
            tenant_id=tenant_id,
            operator_id=principal.operator_id if principal else operator_id,
            action=action,
            target=target,
            details=details or {},
            created_at=now,
        )
    )
