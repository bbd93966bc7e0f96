"""The service's storage: one SQLite file (stdlib ``sqlite3``), its schema, and a small access object.

Every tool call runs in one ``BEGIN IMMEDIATE`` transaction (see ``registry.run_tool``), so a tool
that fails half-way changes nothing. Calls arrive on worker threads, hence one connection guarded
by a lock rather than a connection per thread: the service is small and writes are short.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

Row = dict[str, Any]
Clock = Callable[[], datetime]

SCHEMA = """
CREATE TABLE IF NOT EXISTS sequences (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS campaigns (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL CHECK (status IN ('draft', 'active', 'paused', 'ended')),
    start_date TEXT, end_date TEXT, budget_points INTEGER, channels TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rules (
    id TEXT PRIMARY KEY, campaign_id TEXT NOT NULL REFERENCES campaigns(id), name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '', status TEXT NOT NULL CHECK (status IN ('active', 'inactive')),
    priority INTEGER NOT NULL, stackable INTEGER NOT NULL, formula_type TEXT NOT NULL,
    formula TEXT NOT NULL, criteria TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tiers (
    code TEXT PRIMARY KEY, name TEXT NOT NULL, rank INTEGER NOT NULL UNIQUE, min_points INTEGER NOT NULL,
    earn_multiplier REAL NOT NULL, benefits TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS members (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, phone TEXT NOT NULL UNIQUE, email TEXT, birthday TEXT,
    city TEXT, tier TEXT NOT NULL REFERENCES tiers(code), tier_locked INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL CHECK (status IN ('active', 'inactive')), joined_at TEXT NOT NULL,
    points_balance INTEGER NOT NULL CHECK (points_balance >= 0), lifetime_points INTEGER NOT NULL,
    lifetime_spend_vnd INTEGER NOT NULL, last_purchase_at TEXT);
CREATE TABLE IF NOT EXISTS purchases (
    id TEXT PRIMARY KEY, member_id TEXT NOT NULL REFERENCES members(id), order_ref TEXT UNIQUE,
    amount_vnd INTEGER NOT NULL, channel TEXT NOT NULL, items TEXT NOT NULL, occurred_at TEXT NOT NULL,
    points_awarded INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (
    id TEXT PRIMARY KEY, member_id TEXT NOT NULL REFERENCES members(id),
    kind TEXT NOT NULL CHECK (kind IN ('earn', 'redeem', 'adjust', 'refund')), points INTEGER NOT NULL,
    balance_after INTEGER NOT NULL CHECK (balance_after >= 0), reason TEXT NOT NULL, rule_id TEXT,
    campaign_id TEXT, purchase_id TEXT, redemption_id TEXT, created_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS ledger_member ON ledger (member_id, created_at);
CREATE INDEX IF NOT EXISTS ledger_rule ON ledger (rule_id);
CREATE TABLE IF NOT EXISTS tier_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT, member_id TEXT NOT NULL REFERENCES members(id),
    from_tier TEXT, to_tier TEXT NOT NULL, reason TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rewards (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL CHECK (kind IN ('physical', 'voucher', 'experience', 'donation')),
    points_cost INTEGER NOT NULL CHECK (points_cost > 0), value_vnd INTEGER NOT NULL, stock INTEGER,
    min_tier TEXT NOT NULL REFERENCES tiers(code), status TEXT NOT NULL CHECK (status IN ('active', 'inactive')),
    campaign_id TEXT REFERENCES campaigns(id), voucher_discount_vnd INTEGER,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS redemptions (
    id TEXT PRIMARY KEY, member_id TEXT NOT NULL REFERENCES members(id),
    reward_id TEXT NOT NULL REFERENCES rewards(id), points INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('completed', 'cancelled')), voucher_id TEXT,
    created_at TEXT NOT NULL, cancelled_at TEXT, cancel_reason TEXT);
CREATE TABLE IF NOT EXISTS vouchers (
    id TEXT PRIMARY KEY, code TEXT NOT NULL UNIQUE, member_id TEXT REFERENCES members(id),
    campaign_id TEXT REFERENCES campaigns(id),
    discount_type TEXT NOT NULL CHECK (discount_type IN ('percent', 'amount')),
    discount_value INTEGER NOT NULL, min_spend_vnd INTEGER NOT NULL, max_discount_vnd INTEGER,
    status TEXT NOT NULL CHECK (status IN ('issued', 'redeemed', 'revoked', 'expired')),
    issued_at TEXT NOT NULL, expires_at TEXT NOT NULL, redeemed_at TEXT, order_ref TEXT,
    discount_applied_vnd INTEGER, revoke_reason TEXT);
CREATE TABLE IF NOT EXISTS segments (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL CHECK (kind IN ('static', 'dynamic')), criteria TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS segment_members (
    segment_id TEXT NOT NULL REFERENCES segments(id) ON DELETE CASCADE,
    member_id TEXT NOT NULL REFERENCES members(id), added_at TEXT NOT NULL, PRIMARY KEY (segment_id, member_id));
CREATE TABLE IF NOT EXISTS idempotency_keys (
    key TEXT PRIMARY KEY, tool TEXT NOT NULL, request_hash TEXT NOT NULL, result TEXT NOT NULL,
    created_at TEXT NOT NULL);
"""


def utc_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def fold(text: str | None) -> str:
    """Lower-case without Vietnamese diacritics, so ``"khuyen mai"`` finds ``"Khuyến mãi"``."""
    if text is None:
        return ""
    decomposed = unicodedata.normalize("NFD", text.replace("đ", "d").replace("Đ", "D"))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def dumps(value: object) -> str:
    """Compact JSON for TEXT columns; dates become ISO strings."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_iso_or_str)


def _iso_or_str(value: object) -> str:
    return value.isoformat() if isinstance(value, date | datetime) else str(value)


class Database:
    """One SQLite connection, a lock, the clock, and the few query helpers the domain modules use."""

    def __init__(self, path: str | Path, clock: Clock = utc_now) -> None:
        self.path = Path(path)
        self.clock = clock
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.create_function("fold", 1, fold, deterministic=True)
        self._conn.execute("PRAGMA foreign_keys = ON")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        return [dict(r) for r in self._conn.execute(sql, params).fetchall()]

    def row(self, sql: str, params: Sequence[object] = ()) -> Row | None:
        found = self._conn.execute(sql, params).fetchone()
        return None if found is None else dict(found)

    def scalar(self, sql: str, params: Sequence[object] = ()) -> Any:
        found = self._conn.execute(sql, params).fetchone()
        return None if found is None else found[0]

    def execute(self, sql: str, params: Sequence[object] = ()) -> int:
        return self._conn.execute(sql, params).rowcount

    def insert(self, table: str, values: Row) -> None:
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        self._conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(values.values()))

    def update(self, table: str, key: str, values: Row) -> None:
        sets = ", ".join(f"{column} = ?" for column in values)
        self._conn.execute(f"UPDATE {table} SET {sets} WHERE id = ?", [*values.values(), key])

    def next_id(self, prefix: str, width: int = 4) -> str:
        """The next stable id of a kind, e.g. ``cmp_0007``; ids are never reused."""
        value = self.scalar(
            "INSERT INTO sequences (name, value) VALUES (?, 1) "
            "ON CONFLICT (name) DO UPDATE SET value = value + 1 RETURNING value",
            (prefix,),
        )
        return f"{prefix}_{int(value):0{width}d}"

    def now(self) -> datetime:
        return self.clock()

    def now_iso(self) -> str:
        return iso(self.clock())

    def create_schema(self) -> None:
        self._conn.executescript(SCHEMA)

    def close(self) -> None:
        self._conn.close()
