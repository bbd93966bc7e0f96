"""Spans for the stages of a turn, on the active app's tracer provider.

The tree of one turn (docs/observability.md)::

    turn
    ├── assemble        history loaded, the Turn built
    ├── context         the conversation's stored context
    ├── route           router decision and tool bundle
    ├── model.request   one per model step
    ├── tool.call       one per tool the model called
    ├── verify          the gate's judgement of a reply
    └── deliver         the platform calls of the reply

Attributes are ids, counts, names and outcomes: never message text, tool arguments or results,
and nothing from the vault.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.trace import Span, StatusCode
from opentelemetry.util.types import AttributeValue

from frontdesk.platform.observability.observer import active

Attributes = Mapping[str, AttributeValue]

TURN, ASSEMBLE, CONTEXT, ROUTE = "turn", "assemble", "context", "route"
MODEL_REQUEST, TOOL_CALL, VERIFY, DELIVER = "model.request", "tool.call", "verify", "deliver"
TURN_STAGES = (ASSEMBLE, CONTEXT, ROUTE, MODEL_REQUEST, TOOL_CALL, VERIFY, DELIVER)


@contextmanager
def stage(name: str, attributes: Attributes | None = None) -> Iterator[Span]:
    """A child span of the current one (a root span outside a turn). Outside an app, a span that
    records nothing, so instrumented code needs no ``if``. An exception marks the span failed."""
    observability = active()
    if observability is None:
        yield trace.INVALID_SPAN
        return
    # A failure is marked with the exception's type only: its message can carry SQL parameters
    # or customer text, which traces must not export.
    with observability.tracer.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_status(StatusCode.ERROR, type(exc).__name__)
            raise


def failed(span: Span, reason: str) -> None:
    """Mark a span failed when the failure was handled rather than raised (a model error that
    became the fallback reply). ``reason`` is a short description, never customer text."""
    span.set_status(StatusCode.ERROR, reason)


def current_trace_id() -> str | None:
    """The current trace id as 32 hex digits (what collectors and ``trace_id`` in logs show)."""
    context = trace.get_current_span().get_span_context()
    return trace.format_trace_id(context.trace_id) if context.is_valid else None
