"""The suite-wide canary watch, database side: every INSERT or UPDATE into a table that records
what happened (turn traces, claim rejections, jobs' errors, receipts, delivery parts, notification
attempts, the console's audit trail, ledgers, memory) is scanned for the canary mark, in every
test, on SQLite and PostgreSQL. A secret that reached a trace row would reach an operator's
screen and every backup."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

WATCHED_TABLES = (
    "turn_traces",
    "claim_rejections",
    "jobs",
    "receipts",
    "delivery_parts",
    "notifications",
    "notification_events",
    "notification_attempts",
    "console_audit",
    "ledger_entries",
    "episodic_snapshots",
)
_WRITE = re.compile(r"^\s*(INSERT\s+INTO|UPDATE)\s+\"?(\w+)\"?", re.IGNORECASE)


def _text_of(parameters: Any) -> str:
    """Every value of a statement's parameters (one set, or many for executemany), as text."""
    if isinstance(parameters, dict):
        return " ".join(_text_of(v) for v in parameters.values())
    if isinstance(parameters, list | tuple):
        return " ".join(_text_of(v) for v in parameters)
    return parameters.decode(errors="replace") if isinstance(parameters, bytes) else str(parameters)


def watch_rows(mark: str, report: Callable[[str], None]) -> None:
    """Report each write of ``mark`` into a watched table (for every engine, now and later)."""

    def scan(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        write = _WRITE.match(statement)
        if write is None or write.group(2).lower() not in WATCHED_TABLES:
            return
        if mark in _text_of(parameters):
            verb = write.group(1).split()[0].lower()
            report(f"{'an insert' if verb == 'insert' else 'an update'} of {write.group(2)} row")

    event.listen(Engine, "before_cursor_execute", scan)
