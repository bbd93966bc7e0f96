"""Log lines: JSON (one object per line) or text, with the current trace and conversation.

``configure_logging`` is called once by the process that serves (``frontdesk serve``/``demo``),
before uvicorn starts and with uvicorn's own ``log_config`` off, so uvicorn's error and access
lines go through the same formatter. Access lines lose their query string on the way: platform
verification requests carry secrets there (``hub.verify_token``), and signed media URLs their
signature.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import IO, Any, Literal

from opentelemetry import trace

LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")
# A quiet default for libraries that log a line per HTTP call.
NOISY_LOGGERS = {"httpx2": logging.WARNING, "httpx": logging.WARNING, "httpcore": logging.WARNING}

_conversation_id: ContextVar[str | None] = ContextVar("frontdesk_log_conversation_id", default=None)
# Every attribute a bare LogRecord has: anything else on a record came from ``extra=``.
# (uvicorn adds ``color_message``: the same text with terminal colour codes.)
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",
}


@contextmanager
def log_context(conversation_id: str) -> Iterator[None]:
    """Log lines written inside (in this task and the tasks it starts) name the conversation."""
    token = _conversation_id.set(conversation_id)
    try:
        yield
    finally:
        _conversation_id.reset(token)


WORKER_PROCESS_PREFIX = "frontdesk-worker-"  # platform/worker_pool.py names its processes so


def _worker_process(record: logging.LogRecord) -> str | None:
    """Which of ``serve``'s worker processes wrote the line (None: the HTTP process, or any other)."""
    name = record.processName or ""
    return name.removeprefix(WORKER_PROCESS_PREFIX) if name.startswith(WORKER_PROCESS_PREFIX) else None


def correlation() -> dict[str, str]:
    """The current trace id, span id and conversation id, as far as they are known."""
    found: dict[str, str] = {}
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        found["trace_id"] = trace.format_trace_id(context.trace_id)
        found["span_id"] = trace.format_span_id(context.span_id)
    conversation_id = _conversation_id.get()
    if conversation_id:
        found["conversation_id"] = conversation_id
    return found


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", worker_process?, trace_id?, span_id?,
    conversation_id?, ...extra}``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        worker = _worker_process(record)
        if worker is not None:
            line["worker_process"] = worker
        line.update(correlation())
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and key not in line:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """The classic line, with the worker process that wrote it and the trace id appended when
    there are (to find the turn's spans)."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        worker = _worker_process(record)
        if worker is not None:
            text += f" [worker process {worker}]"
        ids = correlation()
        if "trace_id" in ids:
            text += f" [trace {ids['trace_id']}]"
        return text


class _StandardErrorHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time (test runners swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # logging must never take the process down
            self.handleError(record)


class _StripQueryString(logging.Filter):
    """uvicorn access records carry (client, method, path with query, http version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (args[0], args[1], args[2].split("?", 1)[0], args[3], args[4])
        return True


def configure_logging(log_format: LogFormat, log_level: str, *, stream: IO[str] | None = None) -> logging.Handler:
    """Install frontdesk's handler on the root logger (replacing one installed before, and a bare
    console handler from ``logging.basicConfig``), set the level, and route uvicorn's loggers
    through it. Other handlers (a test's capture, an embedding app's own) are left alone.
    Returns the handler."""
    root = logging.getLogger()
    for existing in list(root.handlers):
        if getattr(existing, "_frontdesk", False) or type(existing) is logging.StreamHandler:
            root.removeHandler(existing)
    handler: logging.Handler = logging.StreamHandler(stream) if stream is not None else _StandardErrorHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    handler._frontdesk = True  # type: ignore[attr-defined]  # marks our handler for the next call
    root.addHandler(handler)
    root.setLevel(log_level)
    for name in UVICORN_LOGGERS:
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, _StripQueryString) for f in access.filters):
        access.addFilter(_StripQueryString())  # on the logger: every handler gets the stripped path
    for name, level in NOISY_LOGGERS.items():
        logging.getLogger(name).setLevel(level)
    return handler
