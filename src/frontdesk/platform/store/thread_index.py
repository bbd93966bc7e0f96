"""The words the console's search finds a thread by: its messages and its contact.

Every message and every contact has a row in ``thread_terms`` with its words folded (no accents,
lower case), so an operator typing "chu nhat" finds "Chủ nhật" on SQLite and PostgreSQL alike. A
phone number is also kept as one run of digits and its endings, so "2125550199", "212-555-0199"
and "+1 (212) 555 0199" find each other.

Writers: the webhook path and the delivery stage insert messages with SQLAlchemy Core and call
``index_message`` in their transaction; rows written through the ORM (a contact's name and phone
saved by a tool, a message added by a fixture) are indexed by the mapper events at the bottom, in
the same flush. Reading is ``matching_threads``: one statement the inbox's list query uses as a
filter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from typing import Any, cast

from sqlalchemy import (
    Connection,
    Insert,
    String,
    Table,
    Text,
    TextClause,
    bindparam,
    event,
    inspect,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.orm import Mapper

from frontdesk.platform.store.schema import Contact, Conversation, Message
from frontdesk.platform.store.schema_inbox import (
    CONTACT_SOURCE,
    THREAD_FTS_TABLE,
    THREAD_TSVECTOR,
    ThreadTerm,
)
from frontdesk.platform.text import fold

_TERMS = cast(Table, ThreadTerm.__table__)
_WORD = re.compile(r"[a-z0-9]+")
# A phone as people write it: digits with spaces, dots, dashes or brackets between them.
_PHONE = re.compile(r"\+?\d[\d ().-]{5,}\d")
MIN_PHONE_DIGITS = 7
MAX_PHONE_DIGITS = 15  # E.164
MAX_TERMS_CHARS = 8000  # a message longer than this is found by its beginning
MAX_QUERY_WORDS = 8
MESSAGE_SOURCE = "message:"  # + the message's id: a message's row in ``thread_terms``


def _phone_runs(text: str) -> list[str]:
    """Each phone-like span's digits, and the endings of 7 digits or more (a number saved with its
    country code is found by the local number)."""
    runs: list[str] = []
    for span in _PHONE.findall(text):
        digits = re.sub(r"\D", "", span)
        if MIN_PHONE_DIGITS <= len(digits) <= MAX_PHONE_DIGITS:
            runs.extend(digits[start:] for start in range(len(digits) - MIN_PHONE_DIGITS + 1))
    return runs


def terms_of(*texts: str | None) -> str:
    """The folded words of ``texts`` and their phone numbers, space-separated, unique, in order."""
    found: dict[str, None] = {}
    for piece in texts:
        if piece:
            found.update(dict.fromkeys(_WORD.findall(fold(piece))))
            found.update(dict.fromkeys(_phone_runs(piece)))
    return " ".join(found)[:MAX_TERMS_CHARS]


def message_text(content_type: str, content: str | None) -> str:
    """What a person reads in a stored message: the text itself, or a reply's texts and captions."""
    if content_type != "blocks":
        return content or ""
    try:
        blocks = json.loads(content or "[]")
    except ValueError:
        return ""
    parts = [block.get(key) for block in blocks if isinstance(block, dict) for key in ("text", "caption")]
    return " ".join(p for p in parts if isinstance(p, str))


def query_words(query: str) -> list[str]:
    """The words a search looks for, each matched as the start of a word. A query that is a phone
    number (digits and the marks people write between them) is one run of digits."""
    stripped = query.strip()
    digits = re.sub(r"\D", "", stripped)
    if len(digits) >= MIN_PHONE_DIGITS and _PHONE.fullmatch(stripped.lstrip("+") or "x"):
        # A local number's leading 0 ("0912 345 678") is the trunk prefix, which "+84 912 345 678"
        # does not have: every number is indexed with its endings, so look for the rest.
        local = digits.lstrip("0")
        return [(local if len(local) >= MIN_PHONE_DIGITS else digits)[-MAX_PHONE_DIGITS:]]
    return list(dict.fromkeys(_WORD.findall(fold(query))))[:MAX_QUERY_WORDS]


def matching_threads(dialect: str, tenant_id: str, words: list[str], *, within: list[str] | None = None) -> Any:
    """A ``SELECT conversation_id, source`` of the tenant's messages and contacts holding every
    word (each as a word's beginning); ``within``: only these threads'. ``words`` come from
    ``query_words``: ``[a-z0-9]+`` only, so they cannot inject query syntax."""
    if dialect == "sqlite":
        match = " ".join(f'"{w}"*' for w in words)
        # CROSS JOIN keeps the full-text match as the outer loop: with a plain join SQLite's
        # planner walked the tenant's rows by index and ran the match once per row (3 s, not 3 ms,
        # at 2,000 threads).
        sql = (
            f"SELECT t.conversation_id, t.source FROM {THREAD_FTS_TABLE} CROSS JOIN thread_terms AS t "
            f"ON t.id = {THREAD_FTS_TABLE}.rowid WHERE {THREAD_FTS_TABLE} MATCH :match AND t.tenant_id = :tenant"
        )
    else:
        match = " & ".join(f"{w}:*" for w in words)
        sql = (
            f"SELECT t.conversation_id, t.source FROM thread_terms AS t "
            f"WHERE {THREAD_TSVECTOR} @@ to_tsquery('simple'::regconfig, :match) AND t.tenant_id = :tenant"
        )
    params: dict[str, Any] = {"match": match, "tenant": tenant_id}
    if within is not None:
        sql += " AND t.conversation_id IN :within"
        params["within"] = within
    statement: TextClause = text(sql).bindparams(*([bindparam("within", expanding=True)] if within is not None else []))
    return statement.bindparams(**params).columns(conversation_id=String, source=String)


def message_id_of(source: str) -> int | None:
    """The message a ``thread_terms`` row holds the words of (None: the contact's row)."""
    return int(source.removeprefix(MESSAGE_SOURCE)) if source.startswith(MESSAGE_SOURCE) else None


# The statements of the webhook path and the delivery stage are built once per dialect and run
# with their values: building one cost more CPU than the database took to run it (as in
# ``ingestion/ingest.py``).
@cache
def _upsert(dialect: str) -> Insert:
    build = sqlite_insert if dialect == "sqlite" else postgresql_insert
    statement = build(_TERMS)
    return statement.on_conflict_do_update(
        index_elements=["conversation_id", "source"], set_={"terms": statement.excluded.terms}
    )


@cache
def _message_insert(dialect: str) -> Insert:
    """One statement, the tenant read from the thread (the delivery stage does not carry it); a
    message indexed again (a voice note's transcript replacing its placeholder) gets its new words.
    (SQLite parses ``INSERT ... SELECT ... ON CONFLICT`` only after a WHERE: there is one.)"""
    words = select(
        Conversation.tenant_id,
        bindparam("conversation_id", type_=String),
        bindparam("source", type_=String),
        bindparam("terms", type_=Text),
    ).where(Conversation.id == bindparam("conversation_id"))
    statement = (sqlite_insert if dialect == "sqlite" else postgresql_insert)(_TERMS)
    return statement.from_select(["tenant_id", "conversation_id", "source", "terms"], words).on_conflict_do_update(
        index_elements=["conversation_id", "source"], set_={"terms": statement.excluded.terms}
    )


def _message_values(conversation_id: str, message_id: int, content_type: str, content: str | None) -> dict[str, str]:
    """A message's row of ``thread_terms`` but its tenant."""
    terms = terms_of(message_text(content_type, content))
    return {"conversation_id": conversation_id, "source": f"{MESSAGE_SOURCE}{message_id}", "terms": terms}


async def index_message(
    connection: AsyncConnection, conversation_id: str, message_id: int, content_type: str, content: str | None
) -> None:
    """Index a message a Core writer has just inserted, in its transaction."""
    values = _message_values(conversation_id, message_id, content_type, content)
    await connection.execute(_message_insert(connection.dialect.name), values)


def message_row(
    tenant_id: str, conversation_id: str, message_id: int, content_type: str, content: str | None
) -> dict[str, Any]:
    return {"tenant_id": tenant_id, **_message_values(conversation_id, message_id, content_type, content)}


def contact_row(tenant_id: str, conversation_id: str, *names: str | None) -> dict[str, Any]:
    """``names``: what identifies the contact (name, channel name, phone, e-mail, channel id)."""
    return {
        "tenant_id": tenant_id,
        "conversation_id": conversation_id,
        "source": CONTACT_SOURCE,
        "terms": terms_of(*names),
    }


_CONTACT_FIELDS = ("name", "display_name", "phone", "email", "external_id")


def _contact_names(contact: Any) -> tuple[str | None, ...]:
    return tuple(getattr(contact, field) for field in _CONTACT_FIELDS)


async def index_rows(connection: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    """Write (or rewrite) these rows' words, in the caller's transaction."""
    if rows:
        await connection.execute(_upsert(connection.dialect.name), rows)


def _index_now(connection: Connection, rows: list[dict[str, Any]]) -> None:
    if rows:
        connection.execute(_upsert(connection.dialect.name), rows)


# ORM writes, indexed in the flush that writes them (Core writers call ``index_rows``).
@event.listens_for(Message, "after_insert")
@event.listens_for(Message, "after_update")
def _message_written(mapper: Mapper[Any], connection: Connection, message: Message) -> None:
    if inspect(message).attrs.content.history.has_changes():
        values = _message_values(message.conversation_id, message.id, message.content_type, message.content)
        connection.execute(_message_insert(connection.dialect.name), values)


@event.listens_for(Contact, "after_insert")
@event.listens_for(Contact, "after_update")
def _contact_written(mapper: Mapper[Any], connection: Connection, contact: Contact) -> None:
    state = inspect(contact)
    if not any(state.attrs[field].history.has_changes() for field in _CONTACT_FIELDS):
        return
    threads = connection.scalars(select(Conversation.id).where(Conversation.contact_id == contact.id))
    names = _contact_names(contact)
    _index_now(connection, [contact_row(contact.tenant_id, thread, *names) for thread in threads])


def backfill(connection: Connection, batch: int = 2000) -> None:
    """Index every thread that exists (migration 0012), a batch of messages at a time."""
    contacts = connection.execute(
        select(
            Conversation.tenant_id,
            Conversation.id,
            Contact.name,
            Contact.display_name,
            Contact.phone,
            Contact.email,
            Contact.external_id,
        ).join(Contact, Contact.id == Conversation.contact_id)
    ).all()
    _index_now(connection, [contact_row(c.tenant_id, c.id, *_contact_names(c)) for c in contacts])
    last = 0
    while True:
        rows = connection.execute(
            select(Message.id, Message.conversation_id, Message.content_type, Message.content, Conversation.tenant_id)
            .join(Conversation, Conversation.id == Message.conversation_id)
            .where(Message.id > last)
            .order_by(Message.id)
            .limit(batch)
        ).all()
        if not rows:
            return
        _index_now(connection, list(_message_rows(rows)))
        last = rows[-1].id


def _message_rows(rows: Iterable[Any]) -> Iterable[dict[str, Any]]:
    for r in rows:
        yield message_row(r.tenant_id, r.conversation_id, r.id, r.content_type, r.content)
