"""The operations surface: metrics, spans, structured logs and readiness (docs/observability.md).

The app builds one ``Observability`` from settings and activates it for everything it runs;
instrumented code calls the functions of ``instruments`` and ``tracing.stage``, which record on
the active one and do nothing outside an app.
"""

from frontdesk.platform.observability.exporters import build_tracer_provider
from frontdesk.platform.observability.instruments import (
    DEFERRED,
    ToolOutcome,
    claim_rejected,
    lock_taken_over,
    model_called,
    model_failed,
    observe_turn,
    receipt_finished,
    reply_verified,
    tool_called,
    turn_outcome,
)
from frontdesk.platform.observability.logs import JsonFormatter, TextFormatter, configure_logging, log_context
from frontdesk.platform.observability.metrics import Metrics
from frontdesk.platform.observability.observer import Observability, ObservabilityMiddleware, active
from frontdesk.platform.observability.readiness import Readiness, check_readiness
from frontdesk.platform.observability.tracing import current_trace_id, failed, stage

__all__ = [
    "DEFERRED",
    "JsonFormatter",
    "Metrics",
    "Observability",
    "ObservabilityMiddleware",
    "Readiness",
    "TextFormatter",
    "ToolOutcome",
    "active",
    "build_tracer_provider",
    "check_readiness",
    "claim_rejected",
    "configure_logging",
    "current_trace_id",
    "failed",
    "lock_taken_over",
    "log_context",
    "model_called",
    "model_failed",
    "observe_turn",
    "receipt_finished",
    "reply_verified",
    "stage",
    "tool_called",
    "turn_outcome",
]
