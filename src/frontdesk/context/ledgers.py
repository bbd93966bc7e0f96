"""Working state: the tool ledger and the action ledger (ARCHITECTURE.md §4).

The tool ledger is a short sliding window of compact tool summaries per conversation; a result
with the same tool name and ``state_key`` as an earlier entry replaces it, and entries older than
the window (by count or age) fall out, which forces a re-fetch instead of a stale quote. The
action ledger holds ``__action__<event>`` entries, one per side effect that really happened, in a
separate, longer window that tool-ledger pruning never touches: "I've saved your order" can be
proven several turns after the capture.

``WorkingState`` is the in-memory view one turn works with (loaded at the start, updated after
every tool step); ``LedgerStore`` loads and saves it (saving applies the same window rules).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import bindparam, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from frontdesk.capabilities.tools import ToolEvidence, ToolResult, output_texts
from frontdesk.platform.store.schema import LedgerEntry

ACTION_PREFIX = "__action__"
LedgerName = Literal["tool", "action"]


@dataclass(frozen=True)
class LedgerWindows:
    tool_entries: int = 8
    tool_max_age: timedelta = timedelta(hours=24)
    action_entries: int = 20
    action_max_age: timedelta = timedelta(days=30)


@dataclass(frozen=True)
class Entry:
    ledger: LedgerName
    tool_name: str
    state_key: str | None
    summary: dict[str, Any]
    evidence: ToolEvidence
    created_at: datetime

    def replaces(self, other: Entry) -> bool:
        return (
            self.ledger == other.ledger == "tool"
            and self.state_key is not None
            and (self.tool_name, self.state_key) == (other.tool_name, other.state_key)
        )


def _window(entries: Sequence[Entry], size: int, max_age: timedelta, now: datetime) -> list[Entry]:
    """The newest ``size`` entries younger than ``max_age``, oldest first, replacements applied."""
    kept: list[Entry] = []
    for entry in reversed(entries):  # newest first: a newer entry shadows what it replaces
        if now - entry.created_at > max_age or any(newer.replaces(entry) for newer in kept):
            continue
        kept.append(entry)
        if len(kept) == size:
            break
    return list(reversed(kept))


@dataclass
class WorkingState:
    """One turn's ledgers: the windows as loaded, plus what this turn's tool calls added."""

    now: datetime
    windows: LedgerWindows = field(default_factory=LedgerWindows)
    tool: list[Entry] = field(default_factory=list)
    action: list[Entry] = field(default_factory=list)
    added: list[Entry] = field(default_factory=list)
    turn_evidence: list[ToolEvidence] = field(default_factory=list)
    # Ids of the conversation's open tasks: an earlier action proves a claim only while its
    # follow-up or hand-off is still open.
    open_references: frozenset[str] = frozenset()
    # Where the customer's own phone numbers and e-mails are (this turn's messages, the saved
    # profile): a reply may repeat them back ("we'll call you at ...") though no tool returned them.
    customer_contacts: tuple[str, ...] = ()
    # What else a reply may state besides tool results (the closed world of the gate): the
    # owner's own policy text, the business's time zone (today's date and weekday are facts),
    # each item's names (a caption naming an item must show that item), the tools' names.
    policy_texts: tuple[str, ...] = ()
    timezone: str = "UTC"
    item_words: Mapping[str, Sequence[str]] = field(default_factory=dict)
    tool_names: frozenset[str] = frozenset()
    # The reply's language and the languages the business's own data is written in: words of a
    # reply can be compared with the data's words only when they share a language.
    language: str | None = None
    data_languages: frozenset[str] = frozenset()
    # This turn's message(s) from the customer, for a small model's turn: its reply must answer
    # them, not say them back (empty: not checked).
    customer_message: str = ""

    def record(self, tool_name: str, result: ToolResult) -> None:
        """After a tool step: keep its evidence for this turn and update both windows."""
        evidence = result.evidence
        if not evidence.texts:
            evidence = replace(evidence, texts=output_texts(result.output))
        self.turn_evidence.append(evidence)
        summary = dict(result.summary) if result.summary is not None else {}
        entries = [Entry("tool", tool_name, result.state_key, summary, evidence, self.now)]
        for event, reference in evidence.events:
            action_summary = {"reference": reference, "by": tool_name}
            action_evidence = ToolEvidence(events=((event, reference),))
            entries.append(Entry("action", f"{ACTION_PREFIX}{event}", None, action_summary, action_evidence, self.now))
        for entry in entries:
            self.added.append(entry)
            if entry.ledger == "tool":
                self.tool = _window([*self.tool, entry], self.windows.tool_entries, self.windows.tool_max_age, self.now)
            else:
                self.action = _window(
                    [*self.action, entry], self.windows.action_entries, self.windows.action_max_age, self.now
                )

    # -- what the verification gate reads

    def earlier_evidence(self) -> Iterator[ToolEvidence]:
        """Evidence from the tool ledger window (earlier turns and this one)."""
        return (e.evidence for e in self.tool)

    def recent_events(self) -> set[tuple[str, str | None]]:
        return {event for e in self.action for event in e.evidence.events}

    def turn_events(self) -> set[tuple[str, str | None]]:
        return {event for evidence in self.turn_evidence for event in evidence.events}

    def lines(self) -> list[str]:
        """The tool ledger as the prompt shows it: one compact line per entry."""
        return [
            f"{e.tool_name}: {json.dumps(e.summary, ensure_ascii=False, separators=(',', ':'))}"
            for e in self.tool
            if e.summary
        ]


# Every turn reads its conversation's entries: the statement is built once.
_ENTRIES_OF = (
    select(LedgerEntry).where(LedgerEntry.conversation_id == bindparam("conversation")).order_by(LedgerEntry.id)
)


class LedgerStore:
    def __init__(self, windows: LedgerWindows | None = None) -> None:
        self.windows = windows or LedgerWindows()

    async def load(
        self, session: AsyncSession, conversation_id: str, now: datetime, revision: int | None = None
    ) -> WorkingState:
        """The windows as stored. ``revision``: the tenant's business data now; a tool entry read
        at another revision is left out (neither evidence nor a prompt line), so a price or an
        opening hour the owner has changed since must be fetched again."""
        rows = list(await session.scalars(_ENTRIES_OF, {"conversation": conversation_id}))
        entries = [e for e in map(_entry, rows) if revision is None or e.evidence.revision in (None, revision)]
        w = self.windows
        return WorkingState(
            now=now,
            windows=w,
            tool=_window([e for e in entries if e.ledger == "tool"], w.tool_entries, w.tool_max_age, now),
            action=_window([e for e in entries if e.ledger == "action"], w.action_entries, w.action_max_age, now),
        )

    async def save(self, session: AsyncSession, conversation_id: str, state: WorkingState) -> None:
        """Write this turn's entries, then drop every row that fell out of its window. A turn that
        added nothing prunes nothing: ``load`` applies the windows anyway, and the next turn that
        adds an entry drops what aged out meanwhile."""
        if not state.added:
            return
        for entry in state.added:
            session.add(
                LedgerEntry(
                    conversation_id=conversation_id,
                    ledger=entry.ledger,
                    tool_name=entry.tool_name,
                    state_key=entry.state_key,
                    summary={"summary": entry.summary, "evidence": entry.evidence.as_json()},
                    created_at=entry.created_at,
                )
            )
        await session.flush()
        rows = list(await session.scalars(_ENTRIES_OF, {"conversation": conversation_id}))
        w = self.windows
        keep: set[int] = set()
        for name, size, age in (
            ("tool", w.tool_entries, w.tool_max_age),
            ("action", w.action_entries, w.action_max_age),
        ):
            mine = [(r.id, _entry(r)) for r in rows if r.ledger == name]
            kept = _window([e for _, e in mine], size, age, state.now)
            kept_ids = {id(e) for e in kept}
            keep.update(row_id for row_id, e in mine if id(e) in kept_ids)
        stale = [r.id for r in rows if r.id not in keep]
        if stale:
            await session.execute(delete(LedgerEntry).where(LedgerEntry.id.in_(stale)))


def _entry(row: LedgerEntry) -> Entry:
    stored = row.summary or {}
    return Entry(
        ledger="action" if row.ledger == "action" else "tool",
        tool_name=row.tool_name,
        state_key=row.state_key,
        summary=dict(stored.get("summary", {})),
        evidence=ToolEvidence.from_json(stored.get("evidence", {})),
        created_at=row.created_at,
    )
