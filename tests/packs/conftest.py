"""The loyalty MCP server for tests: one seeded file per session, a fresh copy per test, its clock
fixed at ``LOYALTY_NOW`` (see ``loyalty_client.py`` for calling it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from loyalty_client import LOYALTY_NOW
from mcp.server.mcpserver import MCPServer

from frontdesk.packs.loyalty.server import build_server, open_database


@pytest.fixture(scope="session")
def seeded_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One seeded file, copied for each test (seeding per test would be slower)."""
    path = tmp_path_factory.mktemp("loyalty") / "template.db"
    open_database(path, clock=lambda: LOYALTY_NOW).close()
    return path


@pytest.fixture
def server(seeded_db: Path, tmp_path: Path) -> MCPServer:
    """A server on a fresh copy of the seeded file.

    Tests open ``Client(server)`` themselves: an async-generator fixture would enter the client's
    task group in one task and leave it in another, which anyio refuses."""
    path = tmp_path / "loyalty.db"
    shutil.copy(seeded_db, path)
    return build_server(path, clock=lambda: LOYALTY_NOW)
