"""The fast variants of the reliability benches (issue 8): ``bench/reliability/storm.py --quick``
(every webhook of the four platforms delivered three times at once, to three instances) and
``bench/reliability/crash.py --quick`` (``kill -9`` of an instance with turns in flight, then a
restart), each against real ``frontdesk serve`` processes on a scratch PostgreSQL database with
the platforms' APIs faked on loopback. The benches check their figures and exit non-zero on a
duplicate, a loss or a 5xx; this test also reads the must-be-0 lines, so a bench that stopped
checking would be noticed. Each takes about 30 s on a quiet 2-core machine (45-50 s on a busy one)."""

from __future__ import annotations

import asyncio
import re
import sys

from instances_kit import POSTGRES_URL, REPO, needs_postgres

pytestmark = needs_postgres

BENCHES = REPO / "bench" / "reliability"


async def run_bench(script: str, timeout_s: float = 240.0) -> str:
    assert POSTGRES_URL, "FRONTDESK_TEST_POSTGRES_URL is required under CI"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(BENCHES / script),
        "--quick",
        "--postgres",
        POSTGRES_URL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        stdin=asyncio.subprocess.DEVNULL,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    finally:
        if proc.returncode is None:
            proc.terminate()  # the bench stops its servers and drops its database on SIGTERM
            await asyncio.wait_for(proc.wait(), 60)
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text[-6000:]
    return text


def figure(output: str, label: str) -> str:
    """The value printed after ``label: `` at the start of a line."""
    found = re.search(rf"^{re.escape(label)}: (\S+)", output, re.MULTILINE)
    assert found, f"the bench printed no {label!r} line:\n{output}"
    return found.group(1)


async def test_a_redelivery_storm_over_three_instances_stores_and_answers_every_message_once() -> None:
    output = await run_bench("storm.py")

    assert figure(output, "storm") == "3"  # instances
    for label in (
        "duplicate message rows",
        "messages answered by two replies",
        "duplicate outbound sends",
        "replies to the wrong customer",
        "lost messages",
        "replies not delivered",
        "server errors (5xx other than 503)",
        "dead jobs",
    ):
        assert figure(output, label) == "0", label
    assert re.search(r"^late redelivery: .* new message rows 0, new sends 0$", output, re.MULTILINE), output
    assert "result: PASS" in output


async def test_killing_an_instance_with_turns_in_flight_loses_nothing_and_answers_nothing_twice() -> None:
    output = await run_bench("crash.py")

    assert re.search(r"^kill -9: instance\d \(pids \[\d+(, \d+)*\]\)", output, re.MULTILINE), output
    for label in (
        "inbound messages lost",
        "turns answered more than once",
        "replies to the wrong customer",
        "server errors (5xx other than 503)",
        "dead jobs",
    ):
        assert figure(output, label) == "0", label
    # Interrupted sends are allowed (never resent on their own), but each one is listed.
    interrupted = int(figure(output, "interrupted sends left visible"))
    assert len(re.findall(r"^  receipt \d+ (sending|partial) ", output, re.MULTILINE)) == interrupted
    assert "result: PASS" in output
