"""Packs whose tools come from their own service over MCP (``packs.MCP_PACKS``), in eval scenarios.

Each scenario gets a fresh service database in its temporary folder, seeded by the service as on
a first start, and the service is connected as an in-process server object: the real MCP client
and server talk over in-memory streams, so a scenario stays fast without a subprocess or a port.
After a turn, ``service`` checks call the service's own tools to prove what really changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from frontdesk.capabilities.mcp import McpToolSource
from frontdesk.capabilities.tools import ToolFailure
from frontdesk.errors import ConfigError
from frontdesk.evals.checks import Checks, select_path
from frontdesk.evals.scenario import ServiceCheck
from frontdesk.packs import MCP_PACKS
from frontdesk.platform.ids import ConversationId
from frontdesk.runtime import Runtime

ServiceFactory = Callable[[Path], object]  # the scenario's folder -> an MCP server object


def _loyalty(folder: Path) -> object:
    from frontdesk.packs.loyalty.server import build_server
    from frontdesk.packs.loyalty.server._seed_data import SEED_NOW

    # The service's clock stands still on the seed's "today": vouchers, windows and reports read
    # the same on any day the suite runs.
    def clock() -> datetime:
        return SEED_NOW

    return build_server(folder / "loyalty.db", clock=clock)


# By MCP server name (``McpPack.mcp_server``). A service builds on an existing file as it is, so a
# restart mid-scenario reconnects to the same data.
SERVICES: dict[str, ServiceFactory] = {"loyalty": _loyalty}


async def connect_service(runtime: Runtime, pack_name: str, folder: Path) -> None:
    """Start ``runtime`` with the pack's service, built in ``folder``; a no-op for in-process packs.
    The runtime owns the connection from here: ``Runtime.close`` closes it."""
    pack = MCP_PACKS.get(pack_name)
    if pack is None:
        return
    factory = SERVICES.get(pack.mcp_server)
    if factory is None:
        raise ConfigError(
            f"pack {pack_name!r}: eval has no service for MCP server {pack.mcp_server!r} (known: {', '.join(SERVICES)})"
        )
    await runtime.start(mcp_targets={pack.mcp_server: factory(folder)})
    if pack_name not in runtime.agent_packs:
        raise ConfigError(f"pack {pack_name!r} did not start with its MCP service")


def service_source(runtime: Runtime, pack_name: str) -> McpToolSource:
    pack = MCP_PACKS[pack_name]
    for source in runtime.mcp_sources:
        if source.name == pack.mcp_server:
            return source
    raise ConfigError(f"pack {pack_name!r}: its MCP service is not connected")


async def open_drafts(runtime: Runtime, pack_name: str, conversation_id: str) -> dict[str, str]:
    """The conversation's live drafts of the pack's staged flows: workflow -> phase."""
    pack = MCP_PACKS.get(pack_name)
    found: dict[str, str] = {}
    for workflow in pack.workflow_domains if pack else {}:
        draft = await runtime.workflows.current(ConversationId(conversation_id), workflow)
        if draft is not None and draft.status == "open":
            found[workflow] = draft.phase
    return found


async def service_checks(runtime: Runtime, pack_name: str, checks: Sequence[ServiceCheck]) -> tuple[list[str], int]:
    """Each check's tool called on the pack's service, its result checked. Returns (failures, checks)."""
    done = Checks()
    if not checks:
        return done.failures, done.count
    source = service_source(runtime, pack_name)
    for item in checks:
        label = f"service {item.tool}({json.dumps(item.args, ensure_ascii=False)})"
        try:
            result = await source.call(item.tool, item.args)
        except ToolFailure as exc:
            done.need(False, f"{label} failed: {exc}")
            continue
        _check_result(item, result, label, done)
    return done.failures, done.count


def _check_result(item: ServiceCheck, result: Any, label: str, done: Checks) -> None:
    found, selected = select_path(result, item.path)
    if not found:
        done.need(False, f"{label}: no {item.path!r} in {_short(result)}")
        return
    if item.where:
        if not isinstance(selected, list):
            done.need(False, f"{label}: {item.path or 'the result'} is not a list: {_short(selected)}")
            return
        selected = [i for i in selected if isinstance(i, dict) and all(i.get(k) == v for k, v in item.where.items())]
    if item.count is not None:
        if isinstance(selected, list):
            what = f"items where {item.where}" if item.where else "items"
            done.need(len(selected) == item.count, f"{label}: {len(selected)} {what}, expected {item.count}")
        else:
            done.need(False, f"{label}: cannot count {_short(selected)}")
    text = json.dumps(selected, ensure_ascii=False)
    for fragment in item.contains:
        done.need(fragment.lower() in text.lower(), f"{label} does not contain {fragment!r}: {_short(selected)}")
    for fragment in item.not_contains:
        done.need(fragment.lower() not in text.lower(), f"{label} contains {fragment!r}: {_short(selected)}")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 300 else text[:297] + "..."
