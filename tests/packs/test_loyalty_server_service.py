"""The loyalty service as a separate process: stdio and Streamable HTTP end to end (loopback only),
its deterministic demo data, and that it imports nothing of frontdesk outside its own package."""

from __future__ import annotations

import ast
import json
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from frontdesk.packs.loyalty.server import TOOL_NAMES, open_database

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "frontdesk" / "packs" / "loyalty" / "server"
MODULE = "frontdesk.packs.loyalty.server"


def _args(db: Path, *transport: str) -> list[str]:
    return ["-m", MODULE, "--db", str(db), "--transport", *transport]


async def test_stdio_transport_lists_every_tool_and_answers_a_call(tmp_path: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=_args(tmp_path / "stdio.db", "stdio"))
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("member_get_balance", {"member_id": "mem_0001"})
        missing = await client.call_tool("campaign_get", {"campaign_id": "cmp_0404"})
    assert [tool.name for tool in tools] == list(TOOL_NAMES)
    assert json.loads(result.content[0].text)["member_id"] == "mem_0001"
    assert missing.is_error
    assert "campaign 'cmp_0404' not found" in missing.content[0].text
    assert (tmp_path / "stdio.db").exists()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def http_url(tmp_path: Path) -> Iterator[str]:
    """The service running over Streamable HTTP in a subprocess on a free loopback port."""
    port = _free_port()
    args = [sys.executable, *_args(tmp_path / "http.db", "http"), "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else "server exited"
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"nothing listening on 127.0.0.1:{port}"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)
        if process.stderr:
            process.stderr.close()


async def test_streamable_http_on_a_loopback_port_serves_the_same_tools(http_url: str) -> None:
    async with Client(http_url) as client:
        tools = (await client.list_tools()).tools
        created = await client.call_tool(
            "segment_create",
            {"name": "Khách Đà Nẵng", "kind": "dynamic", "criteria": {"cities": ["da nang"]}},
        )
    assert len(tools) == len(TOOL_NAMES)
    segment = json.loads(created.content[0].text)["segment"]
    assert (segment["id"], segment["kind"], segment["members"] > 0) == ("seg_0007", "dynamic", True)


def _snapshot(path: Path) -> dict[str, list[tuple[object, ...]]]:
    tables = ["campaigns", "rules", "rewards", "members", "ledger", "vouchers", "segments", "segment_members"]
    with sqlite3.connect(path) as conn:
        return {table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall() for table in tables}


def test_demo_data_is_the_same_on_every_first_start_and_ledgers_add_up(tmp_path: Path) -> None:
    for name in ("a.db", "b.db"):
        open_database(tmp_path / name).close()
    first, second = _snapshot(tmp_path / "a.db"), _snapshot(tmp_path / "b.db")
    assert first == second
    sizes = {table: len(rows) for table, rows in first.items() if table not in ("ledger", "segment_members")}
    assert sizes == {"campaigns": 6, "rules": 15, "rewards": 10, "members": 120, "vouchers": 20, "segments": 6}
    with sqlite3.connect(tmp_path / "a.db") as conn:
        statuses = {row[0] for row in conn.execute("SELECT status FROM campaigns")}
        tiers = {row[0] for row in conn.execute("SELECT DISTINCT tier FROM members")}
        formula_types = {row[0] for row in conn.execute("SELECT DISTINCT formula_type FROM rules")}
        mismatched = conn.execute(
            "SELECT m.id FROM members m WHERE m.points_balance != "
            "(SELECT COALESCE(SUM(points), 0) FROM ledger l WHERE l.member_id = m.id)"
        ).fetchall()
    assert statuses == {"draft", "active", "paused", "ended"}
    assert tiers == {"bronze", "silver", "gold", "platinum"}
    assert len(formula_types) == 8
    assert mismatched == []
    open_database(tmp_path / "a.db").close()  # a second start keeps the data as it is
    assert _snapshot(tmp_path / "a.db") == first


def test_the_service_imports_nothing_of_frontdesk_outside_its_package() -> None:
    offenders = []
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            offenders += [
                f"{path.name}: {name}" for name in names if name.startswith("frontdesk") and not name.startswith(MODULE)
            ]
    assert offenders == []
