"""A scenario file saved from the console, played before it is kept (the console's "save as
scenario", ``humans/console/scenarios.py``): it must pass as written, with the operator's
correction, and fail with the reply the customer read. Wired into the console by the app (the
console's layer cannot import the runtime an eval builds)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from frontdesk.evals.runner import run_scenario
from frontdesk.evals.scenario import load_scenario
from frontdesk.settings import Settings

MAX_REASON_CHARS = 600


async def trial(corrected: str, replayed: str) -> str:
    """Why the file would not do its job, or "". Played as ``frontdesk eval`` plays it (a fresh
    database of its own), in a thread with its own event loop, so the console keeps answering
    while it plays (about two seconds)."""
    return await asyncio.to_thread(asyncio.run, _played(corrected, replayed))


async def _played(corrected: str, replayed: str) -> str:
    # The console's own settings, without its traces and metrics: a trial is not traffic.
    quiet = Settings(otel_exporter="none", metrics_enabled=False)
    with tempfile.TemporaryDirectory(prefix="frontdesk-saved-") as folder:
        results = []
        for name, content in (("corrected", corrected), ("replayed", replayed)):
            path = Path(folder) / f"{name}.yaml"
            path.write_text(content, encoding="utf-8")
            results.append(await run_scenario(load_scenario(path), quiet))
    with_correction, with_sent_reply = results
    if not with_correction.passed:
        why = with_correction.error or "; ".join(with_correction.failures)
        return f"with this reply the conversation does not play as it should: {why[:MAX_REASON_CHARS]}"
    if with_sent_reply.passed:
        return "the file would not catch the reply that was sent: change what was wrong in it"
    return ""
