"""Before the first customer writes: each business's opening evaluated by the embedded model.

Every prompt opens with its business's static prefix (the policy, the playbook, the item index):
some 700 tokens that a CPU evaluates at ~135 a second. Evaluated once at start, in the background,
they are reused by every turn that opens with them (``LocalModelClient.prefill``), so the first
customer does not wait five seconds more than the next. Only for a model that can evaluate ahead
(``local:``); a hosted provider keeps its own prompt cache.
"""

from __future__ import annotations

import logging
import time
from typing import Protocol

from sqlalchemy import select

from frontdesk.errors import ConfigError
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Tenant
from frontdesk.reasoning.agent import Agent

log = logging.getLogger(__name__)

# The businesses whose openings are evaluated, most recently created first: a demo has one, and
# the state cache (``local_model_state_cache_mb``) keeps a few dozen openings of this size.
MAX_WARMED_TENANTS = 4


class Prefilling(Protocol):
    async def prefill(self, system_text: str) -> int: ...


async def warm_openings(db: Database, agent: Agent, model: Prefilling, limit: int = MAX_WARMED_TENANTS) -> int:
    """Evaluate the openings of up to ``limit`` tenants; returns how many. A tenant whose pack is
    not available (an MCP server not connected) is skipped: its turns fail with their own error."""
    async with db.transaction() as session:
        tenants = list(await session.scalars(select(Tenant).order_by(Tenant.created_at.desc()).limit(limit)))
    warmed = 0
    for tenant in tenants:
        try:
            opening = await agent.opening_of(
                tenant.id, tenant.pack, tenant.name, tenant.policy or {}, int(tenant.data_revision or 0)
            )
        except ConfigError as exc:
            log.info("opening of tenant %s not evaluated ahead: %s", tenant.id, exc)
            continue
        started = time.perf_counter()
        evaluated = await model.prefill(opening)
        warmed += 1
        log.info(
            "opening of tenant %s evaluated ahead: %d tokens in %.1f s",
            tenant.id,
            evaluated,
            time.perf_counter() - started,
        )
    return warmed
