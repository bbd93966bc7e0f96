"""``/readyz``: can this instance do its work? The database answers, and the jobs table with it.

Bounded: the checks share one deadline, so a database that accepts connections and then says
nothing (a stuck pooler, a full disk) yields 503 in ``timeout_s``, not a hung probe. Liveness
(``/healthz``) never touches the database: a slow database must not get instances restarted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sqlalchemy import select, text

from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Job

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 2.0
OK, SKIPPED = "ok", "skipped"


@dataclass(frozen=True)
class Readiness:
    ready: bool
    checks: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        return {"status": "ready" if self.ready else "unready", "checks": self.checks}


async def check_readiness(db: Database, *, timeout_s: float = READY_TIMEOUT_S) -> Readiness:
    """``checks``: ``{"database": ..., "jobs": ...}``, each ``ok``, ``skipped`` (an earlier check
    failed), ``timeout`` or ``failed: <error type>`` (details go to the log, not the response)."""
    steps: list[tuple[str, Callable[[], Awaitable[None]]]] = [
        ("database", lambda: _query_one(db)),
        ("jobs", lambda: _query_jobs(db)),
    ]
    checks: dict[str, str] = {}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    for name, check in steps:
        if checks and any(v != OK for v in checks.values()):
            checks[name] = SKIPPED
            continue
        try:
            await asyncio.wait_for(check(), max(deadline - loop.time(), 0.0))
        except TimeoutError:
            log.warning("readiness check %s: no answer within %.1f s", name, timeout_s)
            checks[name] = "timeout"
        except Exception as exc:  # any failure is "not ready"; the probe itself must answer
            log.warning("readiness check %s failed: %s: %s", name, type(exc).__name__, str(exc)[:300])
            checks[name] = f"failed: {type(exc).__name__}"
        else:
            checks[name] = OK
    return Readiness(all(v == OK for v in checks.values()), checks)


async def _query_one(db: Database) -> None:
    async with db.read() as session:
        await session.execute(text("SELECT 1"))


async def _query_jobs(db: Database) -> None:
    async with db.read() as session:
        await session.execute(select(Job.id).limit(1))
