"""What happened to every customer message, from the database and the platform fakes.

A reply's first block is ``got: <the batch's texts>`` (crash.py adds a second, ``(2/2) ...``),
and every customer message ends with its token, so each token can be followed: stored (how many
rows), processed, quoted by which assistant messages (the database), and shown to whom (the
platform fakes).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from fakes import Shown
from payloads import tokens_in
from queries import Reply, UserRow

ANSWER = "got: "
TAIL = "(2/2) "


@dataclass(frozen=True)
class Expected:
    """A customer message the bench sent: its token, and who sent it."""

    token: str
    platform: str
    customer: str


@dataclass
class Outcome:
    duplicate_rows: int = 0
    not_stored: list[str] = field(default_factory=list)
    unprocessed: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)  # processed, but no reply quotes it
    answered_twice: list[str] = field(default_factory=list)  # quoted by two or more replies (database)
    duplicate_sends: list[Shown] = field(default_factory=list)  # a platform showed it again
    wrong_customer: list[Shown] = field(default_factory=list)
    not_shown: list[str] = field(default_factory=list)  # a reply quotes it; no platform showed it
    undelivered: list[Reply] = field(default_factory=list)  # receipt not ``sent``
    replies_per_conversation: list[int] = field(default_factory=list)
    receipts: Counter[str] = field(default_factory=Counter)
    rows: int = 0
    shown: int = 0

    @property
    def lost(self) -> int:
        """Messages the system dropped: never stored, never processed, or processed without a reply."""
        return len(self.not_stored) + len(self.unprocessed) + len(self.unanswered)


def analyse(expected: list[Expected], rows: list[UserRow], replies: list[Reply], shown: list[Shown]) -> Outcome:
    out = Outcome(rows=len(rows), shown=len(shown))
    rows_of: dict[str, list[UserRow]] = defaultdict(list)
    for row in rows:
        for token in tokens_in(row.text):
            rows_of[token].append(row)
    out.duplicate_rows = sum(len(found) - 1 for found in rows_of.values() if len(found) > 1)

    quoted_by: dict[str, list[Reply]] = defaultdict(list)
    for reply in replies:
        first = reply.texts[0] if reply.texts else ""
        if first.startswith(ANSWER):
            for token in tokens_in(first):
                quoted_by[token].append(reply)

    owner = {e.token: (e.platform, e.customer) for e in expected}
    seen: dict[str, Counter[str]] = {ANSWER: Counter(), TAIL: Counter()}
    for message in shown:
        quoted = tokens_in(message.text)
        if any(owner.get(t) != (message.platform, message.customer) for t in quoted):
            out.wrong_customer.append(message)
        kind = next((k for k in seen if message.text.startswith(k)), None)
        if kind is None:
            continue
        if any(seen[kind][t] for t in quoted):
            out.duplicate_sends.append(message)
        seen[kind].update(quoted)

    for e in expected:
        found = rows_of.get(e.token, [])
        if not found:
            out.not_stored.append(e.token)
        elif not all(r.processed for r in found):
            out.unprocessed.append(e.token)
        elif not quoted_by.get(e.token):
            out.unanswered.append(e.token)
        else:
            if len({r.message_id for r in quoted_by[e.token]}) > 1:
                out.answered_twice.append(e.token)
            if not seen[ANSWER][e.token]:
                out.not_shown.append(e.token)

    conversations = {row.conversation_id for row in rows}
    per_conversation = Counter(r.conversation_id for r in replies)
    out.replies_per_conversation = [per_conversation.get(c, 0) for c in sorted(conversations)]
    out.receipts = Counter(r.receipt_status or "none" for r in replies)
    out.undelivered = [r for r in replies if r.receipt_status != "sent"]
    return out


def counts(counter: Counter[str]) -> str:
    """``a 2, b 1``: a counter's entries, sorted by name."""
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items())) or "none"


def listing(label: str, items: list[str], limit: int = 20) -> str:
    more = f" ... ({len(items) - limit} more)" if len(items) > limit else ""
    return f"  {label}: {', '.join(items[:limit])}{more}"


def describe(reply: Reply) -> str:
    """One interrupted or failed delivery, for a listing."""
    errors = "; ".join(e for e in reply.receipt_errors if e)[:300]
    return (
        f"receipt {reply.receipt_id} {reply.receipt_status} ({reply.parts_sent}/{reply.parts_total} parts sent), "
        f"message {reply.message_id}, {reply.account} customer {reply.customer}, conversation {reply.conversation_id}"
        f"{f': {errors}' if errors else ''}"
    )
