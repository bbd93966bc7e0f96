"""Engine construction: one code path for SQLite (embedded default) and PostgreSQL.

SQLite gets WAL, a busy timeout and ``BEGIN IMMEDIATE`` for every transaction: with deferred
transactions, two async writers that both read first fail with "database is locked" under exactly
the bursts frontdesk exists for. Transactions are kept short and never span a model call.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, Result, Update, event, update
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from frontdesk.errors import ConfigError
from frontdesk.platform.store.sqlite_lock import SqliteWriteLock

SQLITE_BUSY_TIMEOUT_MS = 30_000
_READ_ONLY = "frontdesk_read_only"


DEFAULT_POOL_SIZE = 10
# Statements that only open or close a transaction: counted as the transaction, not as work.
_TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


def create_engine(database_url: str, *, pool_size: int = DEFAULT_POOL_SIZE) -> AsyncEngine:
    """``pool_size`` (PostgreSQL only) is the most connections this engine opens: no overflow, so
    instances x pool size (+ one LISTEN connection each) is a bound operators can plan against
    ``max_connections``; a burst beyond it waits for a connection instead of opening more."""
    try:
        url = make_url(database_url)
    except Exception as exc:  # sqlalchemy raises ArgumentError with a terse message
        raise ConfigError(f"FRONTDESK_DATABASE_URL is not a database URL: {database_url!r}") from exc
    if url.get_backend_name() == "sqlite":
        if url.get_driver_name() != "aiosqlite":
            raise ConfigError("SQLite needs the async driver: use sqlite+aiosqlite:///path.db")
        engine = create_async_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        _make_sqlite_safe(engine)
        return engine
    if url.get_backend_name() == "postgresql":
        if url.get_driver_name() != "asyncpg":
            raise ConfigError("PostgreSQL needs the async driver: use postgresql+asyncpg://...")
        return create_async_engine(url, pool_size=pool_size, max_overflow=0, pool_pre_ping=True)
    raise ConfigError(f"unsupported database {url.get_backend_name()!r}: use SQLite or PostgreSQL")


def _make_sqlite_safe(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let us issue BEGIN ourselves (pysqlite's implicit BEGIN is DEFERRED).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        # Reads (``Database.read``) need no write lock: in WAL mode they never block writers.
        deferred = connection.get_execution_options().get(_READ_ONLY, False)
        connection.exec_driver_sql("BEGIN" if deferred else "BEGIN IMMEDIATE")


def rows_affected(result: Result[Any]) -> int:
    """Rows an UPDATE/DELETE touched (session.execute types its result as the generic Result)."""
    return cast(CursorResult[Any], result).rowcount


# The database cannot be reached right now, or has no connection to spare: the request may
# succeed if sent again shortly (a server restart, a failover, a full pool), so HTTP answers 503
# with Retry-After and a platform redelivers the webhook. asyncpg raises a refused or reset
# connection as the OSError it is; SQLAlchemy wraps what the drivers report once connected
# (SQLite's "database is locked" included) as OperationalError or InterfaceError.
UNAVAILABLE_ERRORS: tuple[type[Exception], ...] = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.TimeoutError,  # no pooled connection free within the pool's timeout
    ConnectionError,
    socket.gaierror,  # the database host's name does not resolve
)


def unsynced_update(entity: Any) -> Update:
    """An ORM UPDATE that leaves the session's objects alone. By default SQLAlchemy matches the
    WHERE clause against every object the session holds, to change them too: work for nothing in
    a turn's short transactions, which hold none of the rows they change (about 4% of a turn's
    CPU). Use it only where the session does not read a changed row back from memory."""
    return update(entity).execution_options(synchronize_session=False)


@dataclass
class DatabaseWork:
    """What this process has asked of its database since it started: transactions opened by
    intent (``transaction()`` writes, ``read()`` reads) and SQL statements sent. Exported as
    ``frontdesk_db_*_total`` and printed per turn and per ingest by the benches: the work a turn
    does, not only its time."""

    write_transactions: int = 0
    read_transactions: int = 0
    statements: int = 0

    def copy(self) -> DatabaseWork:
        return DatabaseWork(self.write_transactions, self.read_transactions, self.statements)

    def __add__(self, other: DatabaseWork) -> DatabaseWork:
        return DatabaseWork(
            self.write_transactions + other.write_transactions,
            self.read_transactions + other.read_transactions,
            self.statements + other.statements,
        )

    def __sub__(self, earlier: DatabaseWork) -> DatabaseWork:
        return DatabaseWork(
            self.write_transactions - earlier.write_transactions,
            self.read_transactions - earlier.read_transactions,
            self.statements - earlier.statements,
        )


class Database:
    """The engine plus a session factory. ``transaction()`` is the only way code writes;
    ``read()`` is for queries that change nothing."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.work = DatabaseWork()
        event.listen(engine.sync_engine, "before_cursor_execute", self._count_statement)
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        # SQLite has one writer at a time: writers queue on this lock (this process's and, through
        # a lock file, the other processes' on the same file) instead of in SQLite's busy handler.
        self._write_lock = SqliteWriteLock(engine.url.database) if engine.dialect.name == "sqlite" else None

    def favour_writes(self) -> None:
        """On SQLite, this process's writes go before those of other processes sharing the file
        (``serve``'s HTTP process, whose acknowledgements wait on them, over its worker processes)."""
        if self._write_lock is not None:
            self._write_lock.favoured = True

    @classmethod
    def from_url(cls, database_url: str, *, pool_size: int = DEFAULT_POOL_SIZE) -> Database:
        return cls(create_engine(database_url, pool_size=pool_size))

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def _count_statement(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if not statement.lstrip()[:9].upper().startswith(_TRANSACTION_CONTROL):
            self.work.statements += 1

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        self.work.write_transactions += 1
        if self._write_lock is None:
            async with self._sessions() as session, session.begin():
                yield session
            return
        async with self._write_lock.held(), self._sessions() as session, session.begin():
            yield session

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A transaction that only reads: on SQLite it does not take the write lock, so live views
        and polls never queue behind (or in front of) the writers. Anything written is discarded."""
        self.work.read_transactions += 1
        async with self._sessions() as session:  # closing ends the transaction; loaded rows stay readable
            await session.connection(execution_options={_READ_ONLY: True})
            yield session

    async def dispose(self) -> None:
        await self.engine.dispose()
        if self._write_lock is not None:
            self._write_lock.close()
