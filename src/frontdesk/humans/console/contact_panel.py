"""The contact panel beside an open thread: who the customer is (name, phone, e-mail, the ids
their channels know them by, the same person's threads on other channels), what they asked the
business to follow up and where that stands, the open tasks, and who works the thread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import or_, select

from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console.auth import Principal
from frontdesk.humans.console.threads import ThreadRow
from frontdesk.platform.store.schema import ChannelAccount, Contact, Conversation, Task
from frontdesk.platform.store.schema_console import Operator

MAX_REQUESTS = 20
MAX_OTHER_THREADS = 10


@dataclass(frozen=True)
class Identity:
    channel: str
    external_id: str
    conversation_id: str  # the same person's thread there ("" for this thread)


@dataclass(frozen=True)
class ContactPanel:
    requests: list[Task]  # saved requests (follow-ups), every status, newest first
    open_tasks: list[Task]  # hand-offs, replies owed...
    identities: list[Identity]  # this thread's first, then other channels sharing a phone or e-mail
    assignee_id: str | None
    operators: list[tuple[str, str]]  # (id, name) of the tenant's active operators


async def contact_panel(deps: ConsoleDeps, me: Principal, thread: ThreadRow) -> ContactPanel:
    contact = thread.contact
    async with deps.db.read() as session:
        tasks = list(
            await session.scalars(
                select(Task)
                .where(Task.conversation_id == thread.conversation.id)
                .order_by(Task.created_at.desc())
                .limit(MAX_REQUESTS * 2)
            )
        )
        same_person = [
            clause
            for clause in (
                Contact.phone == contact.phone if contact.phone else None,
                Contact.email == contact.email if contact.email else None,
            )
            if clause is not None
        ]
        others: Sequence[Any] = ()
        if same_person:
            others = (
                await session.execute(
                    select(ChannelAccount.channel, Contact.external_id, Conversation.id)
                    .join(Contact, Contact.id == Conversation.contact_id)
                    .join(ChannelAccount, ChannelAccount.id == Conversation.channel_account_id)
                    .where(Conversation.tenant_id == me.tenant_id, Contact.id != contact.id, or_(*same_person))
                    .limit(MAX_OTHER_THREADS)
                )
            ).all()
        operators = (
            await session.execute(
                select(Operator.id, Operator.name)
                .where(Operator.tenant_id == me.tenant_id, Operator.active.is_(True))
                .order_by(Operator.name)
            )
        ).all()
    return ContactPanel(
        requests=[t for t in tasks if t.kind == "follow_up"][:MAX_REQUESTS],
        open_tasks=[t for t in tasks if t.kind != "follow_up" and t.status == "open"],
        identities=[
            Identity(thread.account.channel, contact.external_id, ""),
            *(Identity(channel, external, conversation) for channel, external, conversation in others),
        ],
        assignee_id=thread.conversation.assignee_id,
        operators=[(o.id, o.name) for o in operators],
    )
