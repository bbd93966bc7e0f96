"""The fast variant of the concurrency bench (issue 8), on every CI run: ``bench/burst.py`` against
real ``frontdesk`` processes on loopback, on SQLite and on three PostgreSQL instances. The bench
itself checks its figures and exits non-zero on a lost message, a second run or a second reply;
this test also reads the figures it printed, so a bench that stopped checking would be noticed."""

from __future__ import annotations

import asyncio
import re
import sys
import uuid
from pathlib import Path

from instances_kit import POSTGRES_URL, REPO, _admin, needs_postgres
from sqlalchemy.engine import make_url

BENCH = REPO / "bench" / "burst.py"


async def run_bench(*args: str, timeout_s: float = 240.0) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(BENCH),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        stdin=asyncio.subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text[-4000:]
    return text


def figure(output: str, pattern: str) -> str:
    found = re.search(pattern, output)
    assert found, f"the bench printed no line matching {pattern!r}:\n{output}"
    return found.group(1)


def assert_sound(output: str, sessions: int, messages: int) -> None:
    assert figure(output, r"202: (\d+)/") == str(sessions * messages)
    assert figure(output, r"lost messages: (\d+)") == "0"
    assert figure(output, r"model runs per burst: ([\d.]+)") == "1.00"
    assert figure(output, r"duplicate replies: (\d+)") == "0"
    assert figure(output, r"redeliveries: \d+, new replies: (\d+)") == "0"
    assert int(figure(output, r"held connections: (\d+) event streams")) == sessions
    assert "result: PASS" in output


async def test_bursts_with_one_second_turns_on_sqlite_lose_nothing_and_run_once_each() -> None:
    output = await run_bench("--sessions", "40", "--messages", "3", "--model-delay-ms", "1000", "--workers", "16")
    assert_sound(output, 40, 3)
    memory = figure(output, r"peak RSS per server \(its HTTP process \+ its worker processes\): (.*)")
    http_mb, *workers_mb = (float(mb) for mb in re.findall(r"([\d.]+) MB", memory))
    assert http_mb > 0
    assert workers_mb  # the turns ran in a worker process (the default on SQLite)
    assert all(mb > 0 for mb in workers_mb)


@needs_postgres
async def test_bursts_spread_over_three_instances_on_postgresql_lose_nothing_and_run_once_each(
    tmp_path: Path,
) -> None:
    assert POSTGRES_URL
    name = f"frontdesk_burst_{uuid.uuid4().hex[:10]}"
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    await _admin(f'CREATE DATABASE "{name}"')
    try:
        output = await run_bench(
            "--instances", "3", "--database", url, "--sessions", "24", "--messages", "3", "--model-delay-ms", "1000"
        )
    finally:
        await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    assert_sound(output, 24, 3)
    assert figure(output, r"server: (\d) instances") == "3"
