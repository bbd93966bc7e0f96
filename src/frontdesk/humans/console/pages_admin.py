"""Configure and review: identity & policy (with the prompt prefix hash), tasks and the audit
trail. (Channel accounts and their write-only credentials: ``pages_credentials``.)"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select

from frontdesk.context.identity import IdentityPolicy, merge_policy, prefix_hash, static_prefix, tenant_playbooks
from frontdesk.errors import ConfigError, NotFoundError, PayloadError
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._guard import actor, redirect, viewer
from frontdesk.humans.console._render import audit, page, parse_form
from frontdesk.humans.console.auth import Principal
from frontdesk.humans.console.csrf import read_form
from frontdesk.platform.store.schema import Task, Tenant
from frontdesk.platform.store.schema_console import AuditEntry, Operator

POLICY_FIELDS = ("business_description", "lead_capture_when", "escalate_when", "out_of_scope", "tone")
TaskPath = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,40}$")]
AUDIT_LIMIT = 200


class TaskForm(BaseModel):
    model_config = ConfigDict(frozen=True)
    status: str = Field(default="", pattern=r"^(|open|done)$")
    assignee: str = Field(default="", max_length=40, pattern=r"^(|[A-Za-z0-9_-]+)$")


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
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
                    select(Operator.id).where(Operator.id == form.assignee, Operator.tenant_id == me.tenant_id)
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
