"""Where spans go: ``otel_exporter`` none | console | otlp.

A tracer provider exists even with ``none``: spans are then recorded but exported nowhere, which
still gives every log line of a turn the same trace id. The OTLP exporter comes from the optional
``otlp`` extra and is imported only when chosen.
"""

from __future__ import annotations

import sys
from typing import Literal

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor, SpanExporter

from frontdesk import __version__
from frontdesk.errors import ConfigError

ExporterName = Literal["none", "console", "otlp"]
OTLP_TIMEOUT_S = 10.0


def build_tracer_provider(
    exporter: ExporterName,
    *,
    service_name: str,
    endpoint: str | None = None,
    span_exporter: SpanExporter | None = None,
) -> TracerProvider:
    """``span_exporter`` (tests: an ``InMemorySpanExporter``) replaces the configured exporter and is
    fed synchronously, so a test sees a span as soon as it ends."""
    provider = TracerProvider(resource=Resource.create({"service.name": service_name, "service.version": __version__}))
    if span_exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    elif exporter == "console":
        # ``out`` resolved now: the exporter's default is whatever stdout was when it was imported.
        console = ConsoleSpanExporter(service_name=service_name, out=sys.stdout)
        provider.add_span_processor(BatchSpanProcessor(console))
    elif exporter == "otlp":
        provider.add_span_processor(BatchSpanProcessor(otlp_exporter(endpoint)))
    return provider


def otlp_exporter(endpoint: str | None) -> SpanExporter:
    """OTLP over HTTP/protobuf. ``endpoint`` is the full traces URL (``.../v1/traces``); unset, the
    exporter's own default applies (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or localhost:4318)."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise ConfigError(
            "otel_exporter = 'otlp' needs the OTLP exporter: pip install 'frontdesk[otlp]' "
            f"(opentelemetry-exporter-otlp-proto-http is missing: {exc})"
        ) from exc
    return OTLPSpanExporter(endpoint=endpoint, timeout=OTLP_TIMEOUT_S)
