"""``configure_logging`` changes process-wide state; tests that call it put all of it back."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from frontdesk.platform.observability.logs import NOISY_LOGGERS, UVICORN_LOGGERS


@contextmanager
def logging_restored() -> Iterator[None]:
    """The root logger's handlers and level, and the handlers, filters, propagation and level of
    every logger ``configure_logging`` touches, as they were. (A filter left on ``uvicorn.access``
    would change what every later test's access log says.)"""
    loggers = [logging.getLogger(), *(logging.getLogger(n) for n in (*UVICORN_LOGGERS, *NOISY_LOGGERS))]
    saved = [(lg, list(lg.handlers), list(lg.filters), lg.propagate, lg.level) for lg in loggers]
    try:
        yield
    finally:
        for lg, handlers, filters, propagate, level in saved:
            lg.handlers[:] = handlers
            lg.filters[:] = filters
            lg.propagate = propagate
            lg.setLevel(level)
