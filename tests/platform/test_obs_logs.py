"""Log lines: one JSON object per line with the trace and conversation, uvicorn's lines through the
same formatter, and no query strings (verification tokens) in access lines."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
from collections.abc import Iterator

import httpx2
import pytest
import uvicorn
from logging_kit import logging_restored

from frontdesk.app import create_app
from frontdesk.platform.observability import Observability, configure_logging, log_context, stage
from frontdesk.platform.observability.logs import JsonFormatter, TextFormatter
from frontdesk.settings import Settings
from harness import make_runtime, reply


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """configure_logging changes process-wide state: put it back for the next test."""
    with logging_restored():
        yield


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # pytest owns the process's signals
        yield


async def test_uvicorn_lines_are_json_and_access_lines_drop_the_query_string(db):
    lines = io.StringIO()
    configure_logging("json", "INFO", stream=lines)
    runtime, _ = await make_runtime(db, {"name": "t", "default": [reply("hi")]})
    # What `frontdesk serve` does: uvicorn's own logging config off, its loggers into ours.
    config = uvicorn.Config(
        create_app(runtime, run_workers=False), host="127.0.0.1", port=0, log_config=None, log_level="info"
    )
    server = _QuietServer(config)
    task = asyncio.create_task(server.serve())
    for _ in range(500):  # up to 5 s
        if server.started:
            break
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        response = await http.get("/healthz", params={"hub.mode": "subscribe", "hub.verify_token": "tok-4711"})
    assert response.status_code == 200
    server.should_exit = True
    await asyncio.wait_for(task, 10)

    parsed = [json.loads(line) for line in lines.getvalue().splitlines()]
    access = [p for p in parsed if p["logger"] == "uvicorn.access"]
    assert [a["message"].split(" - ", 1)[1] for a in access] == ['"GET /healthz HTTP/1.1" 200']
    assert any(p["logger"] == "uvicorn.error" and "Uvicorn running" in p["message"] for p in parsed)
    assert all(p.keys() >= {"time", "level", "logger", "message"} for p in parsed)
    assert not any("color_message" in p for p in parsed)  # uvicorn's terminal-colour copy of the text
    assert "tok-4711" not in lines.getvalue()


def test_a_json_line_carries_the_span_and_conversation_it_was_written_in():
    lines = io.StringIO()
    configure_logging("json", "DEBUG", stream=lines)
    observability = Observability.from_settings(Settings())
    log = logging.getLogger("frontdesk.test")
    log.info("outside")
    with observability.activated(), log_context("c_123"), stage("turn") as span:
        log.warning("inside %s", "a turn", extra={"receipt_id": 7})
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("it failed")
    outside, inside, failed = (json.loads(line) for line in lines.getvalue().splitlines())
    context = span.get_span_context()
    assert outside | {"time": "-"} == {"time": "-", "level": "INFO", "logger": "frontdesk.test", "message": "outside"}
    assert inside | {"time": "-"} == {
        "time": "-",
        "level": "WARNING",
        "logger": "frontdesk.test",
        "message": "inside a turn",
        "trace_id": f"{context.trace_id:032x}",
        "span_id": f"{context.span_id:016x}",
        "conversation_id": "c_123",
        "receipt_id": 7,
    }
    assert failed["exception"].startswith("Traceback")
    assert "ValueError: boom" in failed["exception"]
    assert inside["time"].endswith("+00:00")


def test_text_lines_name_the_trace_and_reconfiguring_keeps_one_handler():
    first, second = io.StringIO(), io.StringIO()
    configure_logging("json", "INFO", stream=first)
    other = logging.NullHandler()
    logging.getLogger().addHandler(other)
    configure_logging("text", "INFO", stream=second)
    assert other in logging.getLogger().handlers  # somebody else's handler stays
    observability = Observability.from_settings(Settings())
    with observability.activated(), stage("turn") as span:
        logging.getLogger("frontdesk.test").info("hello")
    assert first.getvalue() == ""
    line = second.getvalue().strip()
    assert line.endswith(f"INFO frontdesk.test: hello [trace {span.get_span_context().trace_id:032x}]")


def test_a_line_written_in_a_worker_process_says_which_one():
    # serve's worker processes log to the same stream as its HTTP process: an operator reading a
    # failed turn must know which process wrote it (the one whose pid the lease names).
    text, json_lines = io.StringIO(), io.StringIO()

    def record(process_name: str) -> logging.LogRecord:
        made = logging.LogRecord("frontdesk.turns", logging.INFO, __file__, 1, "turn finished", None, None)
        made.processName = process_name
        return made

    for formatter, out in ((TextFormatter(), text), (JsonFormatter(), json_lines)):
        for name in ("frontdesk-worker-1", "MainProcess"):
            out.write(formatter.format(record(name)) + "\n")

    from_worker, from_http = text.getvalue().splitlines()
    assert from_worker.endswith("INFO frontdesk.turns: turn finished [worker process 1]")
    assert from_http.endswith("INFO frontdesk.turns: turn finished")
    worker_json, http_json = (json.loads(line) for line in json_lines.getvalue().splitlines())
    assert worker_json["worker_process"] == "1"
    assert "worker_process" not in http_json
