"""Configure and review: identity & policy (with the prompt prefix hash), tasks, the operators
(their lifecycle is ``operators``'s, shared with the command line) and the audit trail. (Channel
accounts and their write-only credentials: ``pages_credentials``.)"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import func, select

from frontdesk.context.identity import IdentityPolicy, merge_policy, prefix_hash, static_prefix, tenant_playbooks
from frontdesk.errors import ConfigError, NotFoundError, PayloadError
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._guard import actor, redirect, viewer
from frontdesk.humans.console._render import audit, page, parse_form
from frontdesk.humans.console.auth import ROLES, Principal
from frontdesk.humans.console.csrf import read_form
from frontdesk.humans.console.i18n import LANGUAGES
from frontdesk.humans.console.operators import (
    OperatorChange,
    OperatorRefused,
    PasswordRefused,
    add_operator,
    change_own_password,
    delete_operator,
    end_sessions,
    list_operators,
    require_operator,
    revoked_key,
    set_active,
    set_password,
    set_role,
)
from frontdesk.platform.store.schema import Task, Tenant
from frontdesk.platform.store.schema_console import AuditEntry, ConsoleSession, Operator

POLICY_FIELDS = ("business_description", "lead_capture_when", "escalate_when", "out_of_scope", "tone")
TaskPath = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,40}$")]
OperatorPath = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,40}$")]
AUDIT_LIMIT = 200
OPERATORS = "/console/operators"
# What a finished change says on the operators page (``operators.notice.<name>``).
NOTICES = ("added", "deactivated", "reactivated", "role", "password", "sessions", "deleted", "own_password")
Problem = tuple[str, dict[str, str]]  # a message key of the catalogs and its values


class TaskForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    status: str = Field(default="", pattern=r"^(|open|done)$")
    assignee: str = Field(default="", max_length=40, pattern=r"^(|[A-Za-z0-9_-]+)$")


class RoleForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    role: Literal["owner", "agent"]


class ActiveForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    active: bool


class PasswordForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    password: str = Field(max_length=1024)
    confirm: str = Field(max_length=1024)


class OwnPasswordForm(PasswordForm):
    current: str = Field(min_length=1, max_length=1024)


class NewOperatorForm(PasswordForm):
    email: str = Field(min_length=3, max_length=254)
    name: str = Field(min_length=1, max_length=120)
    role: Literal["owner", "agent"]
    language: str = Field(pattern=r"^[a-z]{2}$")


class DeleteForm(BaseModel):
    """The page's checkbox: a delete is never one stray click."""

    model_config = ConfigDict(frozen=True)
    confirm: Literal["yes"]


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    _operator_routes(router, deps)

    @router.get("/console/policy", response_class=HTMLResponse)
    async def policy_page(request: Request) -> Response:
        me = await viewer(deps, request)
        tenant, policy, digest = await _policy_of(deps, me)
        return page("policy.html", me, tenant=tenant, policy=policy, prefix_hash=digest, errors=[])

    @router.post("/console/policy", response_class=HTMLResponse)
    async def policy_save(request: Request) -> Response:
        me = await actor(deps, request, owner=True)
        form = await read_form(request)  # already read (and size-checked) by the CSRF check
        submitted = {k: _text(form.get(k)) for k in IdentityPolicy.model_fields}
        try:
            new = IdentityPolicy.model_validate(submitted)
        except ValidationError as exc:
            tenant, policy, digest = await _policy_of(deps, me)
            errors = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False)]
            return page("policy.html", me, tenant=tenant, policy=policy, prefix_hash=digest, errors=errors, status=422)
        tenant, old_policy, old_hash = await _policy_of(deps, me)
        lines = (await _shape(deps, tenant))[1]
        async with deps.db.transaction() as session:
            stored = await session.get(Tenant, me.tenant_id)
            if stored is None:
                raise NotFoundError("no such tenant")
            stored.policy = new.model_dump()
            new_hash = _hash(deps, stored, new, lines)
            changed = sorted(k for k in submitted if getattr(old_policy, k) != getattr(new, k))
            audit(
                session,
                me,
                me.tenant_id,
                "policy_changed",
                deps.clock.now(),
                target=me.tenant_id,
                details={"fields": changed, "prefix_hash_before": old_hash, "prefix_hash_after": new_hash},
            )
        raise redirect("/console/policy")

    @router.get("/console/tasks", response_class=HTMLResponse)
    async def tasks_page(request: Request) -> Response:
        me = await viewer(deps, request)
        async with deps.db.read() as session:
            tasks = list(
                await session.scalars(
                    select(Task)
                    .where(Task.tenant_id == me.tenant_id)
                    .order_by(Task.status.desc(), Task.priority, Task.created_at.desc())
                    .limit(200)
                )
            )
            operators = list(
                await session.scalars(
                    select(Operator).where(Operator.tenant_id == me.tenant_id, Operator.active.is_(True))
                )
            )
        return page("tasks.html", me, tasks=tasks, operators={o.id: o.name for o in operators})

    @router.post("/console/tasks/{task_id}")
    async def task_update(request: Request, task_id: TaskPath) -> Response:
        me = await actor(deps, request)
        form = await parse_form(request, TaskForm)
        async with deps.db.transaction() as session:
            task = await session.scalar(select(Task).where(Task.id == task_id, Task.tenant_id == me.tenant_id))
            if task is None:
                raise NotFoundError("no such task")
            details: dict[str, Any] = dict(task.details or {})
            if form.assignee:
                assignee = await session.scalar(
                    select(Operator.id).where(
                        Operator.id == form.assignee, Operator.tenant_id == me.tenant_id, Operator.active.is_(True)
                    )
                )
                if assignee is None:
                    raise PayloadError("invalid form: assignee: no such operator")
                details["assignee"] = assignee  # the tasks table has no column for it (yet)
            if form.status:
                task.status = form.status
            task.details = details
            task.updated_at = deps.clock.now()
            audit(
                session,
                me,
                me.tenant_id,
                "task_updated",
                deps.clock.now(),
                target=task_id,
                details={"status": form.status, "assignee": form.assignee},
            )
        raise redirect("/console/tasks")

    @router.get("/console/audit", response_class=HTMLResponse)
    async def audit_page(request: Request) -> Response:
        me = await viewer(deps, request)
        async with deps.db.read() as session:
            rows = (
                await session.execute(
                    select(AuditEntry, Operator.name)
                    .outerjoin(Operator, Operator.id == AuditEntry.operator_id)
                    .where(AuditEntry.tenant_id == me.tenant_id)
                    .order_by(AuditEntry.id.desc())
                    .limit(AUDIT_LIMIT)
                )
            ).all()
        return page("audit.html", me, rows=rows)


def _operator_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    """The operators page: everyone reads the list and changes their own password; owners add,
    deactivate, re-role, reset, sign out and delete the others (``operators`` keeps the rules)."""

    @router.get(OPERATORS, response_class=HTMLResponse)
    async def operators_page(request: Request) -> Response:
        me = await viewer(deps, request)
        notice = request.query_params.get("notice", "")
        return await _operators_page(deps, me, notice=notice if notice in NOTICES else "")

    @router.post(OPERATORS, response_class=HTMLResponse)
    async def operator_add(request: Request) -> Response:
        me = await actor(deps, request, owner=True)
        form = await parse_form(request, NewOperatorForm)
        if form.password != form.confirm:
            return await _operators_page(deps, me, error=("operators.error.mismatch", {}), status=422)
        try:
            await add_operator(
                deps.db,
                tenant_id=me.tenant_id,
                email=form.email,
                name=form.name,
                role=form.role,
                password=form.password,
                language=form.language,
                now=deps.clock.now(),
                actor=me,
            )
        except ConfigError as exc:  # a taken e-mail, a refused password: the form's fault here
            return await _operators_page(deps, me, error=("operators.error.add", {"message": exc.message}), status=422)
        raise redirect(f"{OPERATORS}?notice=added")

    @router.post(OPERATORS + "/{operator_id}/active", response_class=HTMLResponse)
    async def operator_active(request: Request, operator_id: OperatorPath) -> Response:
        me = await _owner_on(deps, request, operator_id)
        form = await parse_form(request, ActiveForm)
        change = set_active(
            deps.db, tenant_id=me.tenant_id, operator_id=operator_id, active=form.active, actor=me, now=deps.clock.now()
        )
        return await _apply(
            deps, me, change, "reactivated" if form.active else "deactivated", signs_out=not form.active
        )

    @router.post(OPERATORS + "/{operator_id}/role", response_class=HTMLResponse)
    async def operator_role(request: Request, operator_id: OperatorPath) -> Response:
        me = await _owner_on(deps, request, operator_id)
        form = await parse_form(request, RoleForm)
        change = set_role(
            deps.db, tenant_id=me.tenant_id, operator_id=operator_id, role=form.role, actor=me, now=deps.clock.now()
        )
        # No session ends: the role is read on every request, so the next one has the new one.
        return await _apply(deps, me, change, "role", signs_out=False)

    @router.post(OPERATORS + "/{operator_id}/password", response_class=HTMLResponse)
    async def operator_password(request: Request, operator_id: OperatorPath) -> Response:
        me = await _owner_on(deps, request, operator_id)
        form = await parse_form(request, PasswordForm)
        if form.password != form.confirm:
            return await _operators_page(deps, me, error=("operators.error.mismatch", {}), status=422)
        change = set_password(
            deps.db,
            tenant_id=me.tenant_id,
            operator_id=operator_id,
            password=form.password,
            actor=me,
            now=deps.clock.now(),
        )
        return await _apply(deps, me, change, "password", signs_out=True)

    @router.post(OPERATORS + "/{operator_id}/sign-out", response_class=HTMLResponse)
    async def operator_sign_out(request: Request, operator_id: OperatorPath) -> Response:
        me = await _owner_on(deps, request, operator_id)
        change = end_sessions(deps.db, tenant_id=me.tenant_id, operator_id=operator_id, actor=me, now=deps.clock.now())
        return await _apply(deps, me, change, "sessions", signs_out=True)

    @router.post(OPERATORS + "/{operator_id}/delete", response_class=HTMLResponse)
    async def operator_delete(request: Request, operator_id: OperatorPath) -> Response:
        me = await _owner_on(deps, request, operator_id)
        await parse_form(request, DeleteForm)
        change = delete_operator(
            deps.db, tenant_id=me.tenant_id, operator_id=operator_id, actor=me, now=deps.clock.now()
        )
        return await _apply(deps, me, change, "deleted", signs_out=True)

    @router.post("/console/password", response_class=HTMLResponse)
    async def own_password(request: Request) -> Response:
        me = await actor(deps, request)
        form = await parse_form(request, OwnPasswordForm)
        if form.password != form.confirm:
            return await _operators_page(deps, me, error=("operators.error.mismatch", {}), status=422)
        change = change_own_password(
            deps.db,
            me,
            current=form.current,
            password=form.password,
            now=deps.clock.now(),
            max_failures=deps.config.login_max_attempts,
            window_s=deps.config.login_window_s,
        )
        # This browser stays signed in; the streams of the others close.
        return await _apply(deps, me, change, "own_password", signs_out=True)


async def _owner_on(deps: ConsoleDeps, request: Request, operator_id: str) -> Principal:
    """An owner's post about one operator: another tenant's (or no) operator is 404 before the
    form's fields are looked at, as on every console route."""
    me = await actor(deps, request, owner=True)
    await require_operator(deps.db, me.tenant_id, operator_id)
    return me


async def _apply(
    deps: ConsoleDeps, me: Principal, change: Awaitable[OperatorChange], notice: str, *, signs_out: bool
) -> Response:
    """Make the change, wake the operator's open event streams if it signed them out (they
    re-check their session and close), and go back to the list; a refusal is shown on it."""
    try:
        done = await change
    except OperatorRefused as exc:
        return await _operators_page(deps, me, error=(exc.key, exc.values), status=exc.status)
    except PasswordRefused as exc:
        return await _operators_page(deps, me, error=("operators.error.password", {"message": exc.message}), status=422)
    if signs_out:
        deps.signals.publish(revoked_key(done.operator_id))
    raise redirect(f"{OPERATORS}?notice={notice}")


async def _operators_page(
    deps: ConsoleDeps, me: Principal, *, notice: str = "", error: Problem | None = None, status: int = 200
) -> Response:
    operators = await list_operators(deps.db, me.tenant_id)
    async with deps.db.read() as session:
        live = await session.execute(
            select(ConsoleSession.operator_id, func.count())
            .where(ConsoleSession.tenant_id == me.tenant_id, ConsoleSession.expires_at > deps.clock.now())
            .group_by(ConsoleSession.operator_id)
        )
        sessions = {operator_id: int(count) for operator_id, count in live.all()}
    return page(
        "operators.html",
        me,
        operators=operators,
        sessions=sessions,
        roles=ROLES,
        languages=LANGUAGES,
        notice=notice,
        error=error,
        status=status,
    )


def _text(value: object) -> str:
    """A form field as text; an uploaded file where text belongs counts as empty."""
    return value.replace("\r\n", "\n").strip() if isinstance(value, str) else ""


async def _policy_of(deps: ConsoleDeps, me: Principal) -> tuple[Tenant, IdentityPolicy, str]:
    async with deps.db.read() as session:
        tenant = await session.get(Tenant, me.tenant_id)
    if tenant is None:
        raise NotFoundError("no such tenant")
    defaults, lines = await _shape(deps, tenant)
    try:
        policy = merge_policy(defaults, tenant.policy or {})
    except ConfigError:  # a stored policy that no longer validates: show the pack's defaults to fix it
        policy = merge_policy(defaults, {})
    return tenant, policy, _hash(deps, tenant, policy, lines)


async def _shape(deps: ConsoleDeps, tenant: Tenant) -> tuple[dict[str, Any], str]:
    """As the agent builds a prompt: the pack's default policy under what the tenant's own data
    adds (the profile's description), and the lines its playbook gains (the item index)."""
    pack = deps.packs.get(tenant.pack)
    revision = tenant.data_revision
    shape = await pack.for_tenant(tenant.id, revision) if pack is not None and pack.for_tenant is not None else None
    defaults = {**(pack.default_policy if pack else {}), **(shape.policy_defaults if shape else {})}
    return defaults, shape.playbook_lines if shape else ""


def _hash(deps: ConsoleDeps, tenant: Tenant, policy: IdentityPolicy, tenant_lines: str) -> str:
    """The prefix hash the agent will record on its next turn (same inputs as ``reasoning.agent``)."""
    pack = deps.packs.get(tenant.pack)
    playbook, compact_playbook = (pack.playbook, pack.compact_playbook) if pack else ("", None)
    playbook, compact_playbook = tenant_playbooks(playbook, compact_playbook, tenant_lines)
    prefix = static_prefix(
        tenant.name, policy, playbook, compact=deps.compact_prompt, compact_playbook=compact_playbook
    )
    return prefix_hash(prefix)
