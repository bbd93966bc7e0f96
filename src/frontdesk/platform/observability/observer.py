"""The app's observability (metrics registry, tracer provider) and how instrumented code finds it.

Instrumentation is ambient, like logging: the loop, the gate and delivery do not take a metrics
object through every constructor. Unlike logging, it is not process-global: the app activates
its own ``Observability`` in a context variable for everything it runs (requests through
``ObservabilityMiddleware``, workers and sweeps because they are started inside the lifespan,
which the middleware also wraps). Tasks inherit it; code running outside any app records nothing.
Two apps in one process (tests) never mix their counters or spans.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.trace import Tracer
from starlette.types import ASGIApp, Receive, Scope, Send

from frontdesk import __version__
from frontdesk.platform.observability.exporters import build_tracer_provider
from frontdesk.platform.observability.metrics import Metrics
from frontdesk.settings import Settings

INSTRUMENTATION_NAME = "frontdesk"


class Observability:
    def __init__(self, tracer_provider: TracerProvider, metrics: Metrics | None = None) -> None:
        self.tracer_provider = tracer_provider
        self.tracer: Tracer = tracer_provider.get_tracer(INSTRUMENTATION_NAME, __version__)
        self.metrics = metrics

    @classmethod
    def from_settings(
        cls, settings: Settings, *, span_exporter: SpanExporter | None = None, process_metrics: bool = True
    ) -> Observability:
        provider = build_tracer_provider(
            settings.otel_exporter,
            service_name=settings.otel_service_name,
            endpoint=settings.otel_endpoint,
            span_exporter=span_exporter,
        )
        return cls(provider, Metrics(process_metrics=process_metrics) if settings.metrics_enabled else None)

    @contextmanager
    def activated(self) -> Iterator[None]:
        token = _ACTIVE.set(self)
        try:
            yield
        finally:
            _ACTIVE.reset(token)

    async def shutdown(self) -> None:
        """Flush and stop the span exporters (an OTLP flush is blocking network I/O: off the loop)."""
        await asyncio.to_thread(self.tracer_provider.shutdown)


_ACTIVE: ContextVar[Observability | None] = ContextVar("frontdesk_observability", default=None)


def active() -> Observability | None:
    """The observability of the app running the current task, if any."""
    return _ACTIVE.get()


class ObservabilityMiddleware:
    """Activates ``observability`` for every ASGI call: requests and the lifespan (and with it
    the workers the lifespan starts)."""

    def __init__(self, app: ASGIApp, observability: Observability) -> None:
        self._app = app
        self._observability = observability

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with self._observability.activated():
            await self._app(scope, receive, send)
