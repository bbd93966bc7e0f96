"""``bench/ingest.py`` stays runnable (it stopped working once, unnoticed, when ``accounts add``
began to require a tenant): a small run of each mode against a real ``frontdesk serve`` on
loopback, every payload stored once, and the database work per request it read from the
server's ``/metrics`` printed (an ingest is one write transaction)."""

from __future__ import annotations

import asyncio
import re
import sys

import pytest
from instances_kit import REPO

BENCH = REPO / "bench" / "ingest.py"


async def run_bench(*args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(BENCH), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, stdin=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 180)
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text[-4000:]
    return text


@pytest.mark.parametrize("mode", [("--concurrency", "4"), ("--rate", "40")], ids=["closed-loop", "open-loop"])
async def test_the_ingest_bench_acknowledges_and_stores_every_payload_once(mode):
    output = await run_bench("--requests", "30", *mode)
    rows = re.findall(r"^(telegram|whatsapp) .* (\d+)/30 +([\d.]+), ([\d.]+), ([\d.]+)$", output, re.M)
    assert [(platform, stored) for platform, stored, *_ in rows] == [("telegram", "30"), ("whatsapp", "30")], output
    for _, _, write, _read, statements in rows:
        assert float(write) == 1.0  # no turn workers: the acknowledgement's own transaction only
        assert float(statements) >= 1.0
