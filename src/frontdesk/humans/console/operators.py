"""An operator's whole life, shared by ``frontdesk operators`` and the console's operators page:
add, deactivate / reactivate, change role, set a password, end sessions, delete.

Each change commits together with its audit row. ``actor`` is the signed-in owner making it, or
``None`` for the command line (audited with no operator).

Guard rails:

- a tenant keeps an active owner: its last one cannot be deactivated, deleted or demoted (the
  tenant row is locked for the check, so two owners demoting each other cannot both pass);
- from the console, an owner cannot deactivate, delete, re-role or reset the password of their
  own account: another owner (or the command line) can. Their own password they change with
  the current one (``change_own_password``).

At once: deactivating, deleting, a password set by someone else and "end sessions" delete the
operator's ``console_sessions`` rows in the same transaction, so the next request of any of
their browsers, on any instance, is sent to sign-in. A role change ends no session: the role is
read from the operators row on every request, so it applies on the next one. Open event streams
re-check their session whenever they wake; the caller wakes them by announcing
``revoked_key(operator_id)`` (the console on its ``ConversationSignals``, which NOTIFYs the other
instances on PostgreSQL; the command line with ``announce``), so they close now rather than at
their next poll.

Deleting keeps the operators row as a tombstone: audit rows keep pointing at it (``operator_id``
is a foreign key, and the trail must still say who did what), with the name kept. The rest goes:
the password hash (``DELETED_HASH`` matches no password), the e-mail (rewritten to an
``.invalid`` address, so the real one can be added again), the Telegram chat, the sessions, the
notification subscriptions and assignments, what they had read; tasks and threads assigned to
them are unassigned. A deleted operator is no longer listed and cannot be reactivated.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.errors import ConfigError, NotFoundError, PayloadError
from frontdesk.humans.console._render import audit
from frontdesk.humans.console.auth import ROLES, Principal, hash_password, password_matches
from frontdesk.humans.console.i18n import LANGUAGES
from frontdesk.platform.ids import new_id
from frontdesk.platform.signals import CONVERSATION_CHANNEL
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Conversation, Task, Tenant
from frontdesk.platform.store.schema_console import AuditEntry, ConsoleSession, Operator
from frontdesk.platform.store.schema_inbox import ThreadRead
from frontdesk.platform.store.schema_notifications import NotificationAssignment, NotificationSubscription

EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,189}\.[^@\s]{1,60}$")
DELETED_HASH = "!deleted"  # not an argon2 hash: ``password_matches`` is False for every password
DELETED_DOMAIN = "deleted.invalid"  # RFC 2606: never a real address

__all__ = [
    "DELETED_HASH",
    "OperatorChange",
    "OperatorRefused",
    "PasswordRefused",
    "add_operator",
    "announce",
    "change_own_password",
    "delete_operator",
    "end_sessions",
    "find_by_email",
    "is_deleted",
    "list_operators",
    "require_operator",
    "revoked_key",
    "set_active",
    "set_password",
    "set_role",
]


class OperatorRefused(PayloadError):
    """A change a guard rail refuses. ``key`` names the console's message (``values`` fill it);
    ``status`` is the console's answer (409: the state forbids it; 422/429: the form)."""

    code = "operator_refused"

    def __init__(self, key: str, message: str, *, status: int = 409, **values: str) -> None:
        super().__init__(message)
        self.key = key
        self.status = status
        self.values = values


class PasswordRefused(PayloadError):
    """A new password the rules refuse; the message is ``auth.hash_password``'s own."""

    code = "password_refused"


@dataclass(frozen=True)
class OperatorChange:
    """What a change did: ``changed`` is False when the operator already was that way."""

    operator_id: str
    email: str
    changed: bool
    sessions_ended: int = 0
    before: str = ""
    after: str = ""


def revoked_key(operator_id: str) -> str:
    """The signal that wakes this operator's open event streams (no conversation id has a colon)."""
    return f"operator:{operator_id}"


def is_deleted(operator: Operator) -> bool:
    return operator.password_hash == DELETED_HASH


async def announce(db: Database, key: str) -> None:
    """For a process without running signals (the command line): NOTIFY every instance on
    PostgreSQL. On SQLite there is nobody to tell; streams notice at their next poll."""
    if db.dialect != "postgresql":
        return
    async with db.transaction() as session:
        await session.execute(select(func.pg_notify(CONVERSATION_CHANNEL, key)))


async def add_operator(
    db: Database,
    *,
    tenant_id: str,
    email: str,
    name: str,
    role: str,
    password: str,
    language: str,
    now: datetime,
    actor: Principal | None = None,
) -> Operator:
    """Create an operator; every bad input is a ``ConfigError`` that names it."""
    email = email.strip().lower()
    if not EMAIL.fullmatch(email):
        raise ConfigError(f"{email!r} is not an e-mail address")
    if role not in ROLES:
        raise ConfigError(f"role must be one of {', '.join(ROLES)}")
    if language not in LANGUAGES:
        raise ConfigError(f"language must be one of {', '.join(LANGUAGES)}")
    if not name.strip() or len(name) > 120:
        raise ConfigError("name must be 1 to 120 characters")
    async with db.read() as session:  # the cheap checks first: a hash costs a tenth of a second
        await _tenant(session, tenant_id)
        await _email_free(session, email)
    try:
        password_hash = await asyncio.to_thread(hash_password, password, email=email, name=name.strip())
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    async with db.transaction() as session:
        await _tenant(session, tenant_id)
        await _email_free(session, email)
        operator = Operator(
            id=new_id("op"),
            tenant_id=tenant_id,
            email=email,
            name=name.strip(),
            role=role,
            password_hash=password_hash,
            language=language,
            active=True,
            created_at=now,
        )
        session.add(operator)
        await session.flush()
        audit(
            session, actor, tenant_id, "operator_added", now, target=operator.id, details={"email": email, "role": role}
        )
    return operator


async def list_operators(db: Database, tenant_id: str) -> list[Operator]:
    """The tenant's operators, deleted ones left out, by e-mail."""
    async with db.read() as session:
        rows = await session.scalars(
            select(Operator)
            .where(Operator.tenant_id == tenant_id, Operator.password_hash != DELETED_HASH)
            .order_by(Operator.email)
        )
        return list(rows)


async def find_by_email(db: Database, tenant_id: str, email: str) -> str:
    """The id of the tenant's operator with this e-mail; each miss says which name is unknown."""
    email = email.strip().lower()
    async with db.read() as session:
        await _tenant(session, tenant_id, missing=NotFoundError)
        operator_id = await session.scalar(
            select(Operator.id).where(
                Operator.tenant_id == tenant_id, Operator.email == email, Operator.password_hash != DELETED_HASH
            )
        )
    if operator_id is None:
        raise NotFoundError(f"no operator with e-mail {email} in tenant {tenant_id!r}")
    return operator_id


async def require_operator(db: Database, tenant_id: str, operator_id: str) -> None:
    """Refuse (404) an operator id this tenant does not have (another tenant's, a deleted one)."""
    async with db.read() as session:
        found = await session.scalar(
            select(Operator.id).where(
                Operator.id == operator_id, Operator.tenant_id == tenant_id, Operator.password_hash != DELETED_HASH
            )
        )
    if found is None:
        raise NotFoundError("no such operator")


async def set_active(
    db: Database, *, tenant_id: str, operator_id: str, active: bool, actor: Principal | None, now: datetime
) -> OperatorChange:
    """Deactivate (signed out everywhere, cannot sign in) or reactivate an operator."""
    async with db.transaction() as session:
        operator = await _target(session, tenant_id, operator_id)
        if not active:
            _not_yourself(actor, operator, "deactivate")
            await _keeps_an_owner(session, operator)
        changed = operator.active != active
        operator.active = active
        ended = 0 if active else await _end_sessions(session, operator.id)
        if changed or ended:
            action = "operator_reactivated" if active else "operator_deactivated"
            details = {"email": operator.email, "sessions_ended": ended}
            audit(session, actor, tenant_id, action, now, target=operator.id, details=details)
    return OperatorChange(operator.id, operator.email, changed, ended)


async def set_role(
    db: Database, *, tenant_id: str, operator_id: str, role: str, actor: Principal | None, now: datetime
) -> OperatorChange:
    """Make an operator an owner or an agent; it applies from their next request."""
    if role not in ROLES:
        raise PayloadError(f"role must be one of {', '.join(ROLES)}")
    async with db.transaction() as session:
        operator = await _target(session, tenant_id, operator_id)
        _not_yourself(actor, operator, "change the role of")
        before = operator.role
        if before == "owner" and role != "owner":
            await _keeps_an_owner(session, operator)
        if before != role:
            operator.role = role
            details = {"email": operator.email, "role": [before, role]}
            audit(session, actor, tenant_id, "operator_role_changed", now, target=operator.id, details=details)
    return OperatorChange(operator.id, operator.email, before != role, before=before, after=role)


async def set_password(
    db: Database, *, tenant_id: str, operator_id: str, password: str, actor: Principal | None, now: datetime
) -> OperatorChange:
    """Give an operator a new password (an owner's reset, or the command line); every session
    they had ends."""
    async with db.read() as session:  # refuse before hashing: a hash costs a tenth of a second
        operator = await _target(session, tenant_id, operator_id)
    _not_yourself(actor, operator, "reset the password of")
    password_hash = await _hash(password, operator)
    async with db.transaction() as session:
        operator = await _target(session, tenant_id, operator_id)
        operator.password_hash = password_hash
        ended = await _end_sessions(session, operator.id)
        details = {"email": operator.email, "sessions_ended": ended}
        audit(session, actor, tenant_id, "operator_password_reset", now, target=operator.id, details=details)
    return OperatorChange(operator.id, operator.email, True, ended)


async def change_own_password(
    db: Database,
    me: Principal,
    *,
    current: str,
    password: str,
    now: datetime,
    max_failures: int,
    window_s: float,
) -> OperatorChange:
    """The signed-in operator's own change, proven with the current password. Their other
    sessions end; this one stays. A wrong current password is audited, and ``max_failures`` of
    them within ``window_s`` refuse further tries until the window passes (a stolen session
    must not become a way to guess the password)."""
    since = now - timedelta(seconds=window_s)
    async with db.read() as session:
        operator = await _target(session, me.tenant_id, me.operator_id)
        failures = await session.scalar(
            select(func.count()).where(
                AuditEntry.tenant_id == me.tenant_id,
                AuditEntry.operator_id == me.operator_id,
                AuditEntry.action == "password_change_refused",
                AuditEntry.created_at > since,
            )
        )
    if int(failures or 0) >= max_failures:
        raise OperatorRefused("operators.error.too_many", "too many wrong passwords: try again later", status=429)
    if not await asyncio.to_thread(password_matches, operator.password_hash, current):
        async with db.transaction() as session:
            audit(session, me, me.tenant_id, "password_change_refused", now, target=me.operator_id)
        raise OperatorRefused("operators.error.current_password", "the current password is wrong", status=422)
    password_hash = await _hash(password, operator)
    async with db.transaction() as session:
        operator = await _target(session, me.tenant_id, me.operator_id)
        operator.password_hash = password_hash
        ended = await _end_sessions(session, operator.id, keep=me.session_id)
        details = {"sessions_ended": ended}
        audit(session, me, me.tenant_id, "password_changed", now, target=operator.id, details=details)
    return OperatorChange(operator.id, operator.email, True, ended)


async def end_sessions(
    db: Database, *, tenant_id: str, operator_id: str, actor: Principal | None, now: datetime
) -> OperatorChange:
    """Sign an operator out of every browser (the actor's own included, if it is them)."""
    async with db.transaction() as session:
        operator = await _target(session, tenant_id, operator_id)
        ended = await _end_sessions(session, operator.id)
        details = {"email": operator.email, "sessions_ended": ended}
        audit(session, actor, tenant_id, "operator_sessions_ended", now, target=operator.id, details=details)
    return OperatorChange(operator.id, operator.email, ended > 0, ended)


async def delete_operator(
    db: Database, *, tenant_id: str, operator_id: str, actor: Principal | None, now: datetime
) -> OperatorChange:
    """Delete an operator, keeping a tombstone for the audit trail (see the module's docstring)."""
    async with db.transaction() as session:
        operator = await _target(session, tenant_id, operator_id)
        _not_yourself(actor, operator, "delete")
        await _keeps_an_owner(session, operator)
        email = operator.email
        ended = await _end_sessions(session, operator.id)
        unassigned = []
        # An indexed JSON read on both backends; only this tenant's tasks.
        assigned = await session.scalars(
            select(Task).where(Task.tenant_id == tenant_id, Task.details["assignee"].as_string() == operator.id)
        )
        for task in assigned:
            task.details = {k: v for k, v in (task.details or {}).items() if k != "assignee"}
            task.updated_at = now
            unassigned.append(task.id)
        await session.execute(
            delete(NotificationSubscription).where(NotificationSubscription.operator_id == operator.id)
        )
        await session.execute(delete(NotificationAssignment).where(NotificationAssignment.operator_id == operator.id))
        threads = await session.scalars(
            update(Conversation)
            .where(Conversation.tenant_id == tenant_id, Conversation.assignee_id == operator.id)
            .values(assignee_id=None)
            .returning(Conversation.id)
        )
        threads_unassigned = sorted(threads)
        await session.execute(delete(ThreadRead).where(ThreadRead.operator_id == operator.id))
        operator.active = False
        operator.password_hash = DELETED_HASH
        operator.email = f"{operator.id}@{DELETED_DOMAIN}"
        operator.telegram_chat_id = None
        details = {
            "email": email,
            "role": operator.role,
            "sessions_ended": ended,
            "tasks_unassigned": unassigned,
            "threads_unassigned": threads_unassigned,
        }
        audit(session, actor, tenant_id, "operator_deleted", now, target=operator.id, details=details)
    return OperatorChange(operator.id, email, True, ended)


async def _tenant(session: AsyncSession, tenant_id: str, *, missing: type[Exception] = ConfigError) -> None:
    if await session.get(Tenant, tenant_id) is None:
        raise missing(f"no tenant {tenant_id!r}")


async def _email_free(session: AsyncSession, email: str) -> None:
    if await session.scalar(select(Operator.id).where(Operator.email == email)) is not None:
        raise ConfigError(f"an operator with e-mail {email} already exists")


async def _target(session: AsyncSession, tenant_id: str, operator_id: str) -> Operator:
    """The operator, locked for this transaction, if this tenant has them (else 404, as for any
    id of another tenant). Locking the tenant row first serialises changes to one tenant's
    operators on PostgreSQL (SQLite has one writer anyway), so the owner count cannot race."""
    await session.execute(select(Tenant.id).where(Tenant.id == tenant_id).with_for_update())
    operator = await session.scalar(
        select(Operator)
        .where(Operator.id == operator_id, Operator.tenant_id == tenant_id, Operator.password_hash != DELETED_HASH)
        .with_for_update()
    )
    if operator is None:
        raise NotFoundError("no such operator")
    return operator


def _not_yourself(actor: Principal | None, operator: Operator, what: str) -> None:
    if actor is not None and actor.operator_id == operator.id:
        raise OperatorRefused(
            "operators.error.yourself", f"you cannot {what} your own account: another owner (or the command line) can"
        )


async def _keeps_an_owner(session: AsyncSession, operator: Operator) -> None:
    """Refuse to take away the tenant's last active owner."""
    if not (operator.active and operator.role == "owner"):
        return
    others = await session.scalar(
        select(func.count()).where(
            Operator.tenant_id == operator.tenant_id,
            Operator.id != operator.id,
            Operator.role == "owner",
            Operator.active.is_(True),
        )
    )
    if not others:
        raise OperatorRefused(
            "operators.error.last_owner",
            f"{operator.email} is the last active owner of tenant {operator.tenant_id!r}: "
            "make another operator owner first",
            email=operator.email,
        )


async def _end_sessions(session: AsyncSession, operator_id: str, *, keep: str | None = None) -> int:
    """Delete the operator's sessions (all, or all but ``keep``); returns how many there were."""
    where = [ConsoleSession.operator_id == operator_id]
    if keep is not None:
        where.append(ConsoleSession.id != keep)
    count = await session.scalar(select(func.count()).select_from(ConsoleSession).where(*where))
    await session.execute(delete(ConsoleSession).where(*where))
    return int(count or 0)


async def _hash(password: str, operator: Operator) -> str:
    """The new password's hash, off the event loop (argon2 takes a tenth of a second of CPU).
    The rules' refusal (too short, guessable, the operator's own e-mail or name) is the user's
    to read, word for word."""
    try:
        return await asyncio.to_thread(hash_password, password, email=operator.email, name=operator.name)
    except ValueError as exc:
        raise PasswordRefused(str(exc)) from exc
