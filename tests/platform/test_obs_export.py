"""Where spans go: OTLP/HTTP to a collector (a loopback server here), the console, or nowhere; and a
clear error when the OTLP extra is not installed."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from channels.loopback import client, serve
from frontdesk.app import create_app
from frontdesk.errors import ConfigError
from frontdesk.platform.models.gateway import ModelGateway
from frontdesk.platform.observability import Observability, stage
from frontdesk.settings import Settings
from harness import make_runtime, wait_idle


class Collector:
    """An OTLP/HTTP traces endpoint that keeps what it receives."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, bytes]] = []

    def app(self) -> Starlette:
        async def traces(request: Request) -> Response:
            self.requests.append((request.url.path, request.headers.get("content-type", ""), await request.body()))
            return Response(b"", media_type="application/x-protobuf")

        return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])

    def spans(self) -> list[tuple[str, dict[str, Any], str]]:
        """(service.name, span attributes, span name) of every span received."""
        found = []
        for _path, _type, body in self.requests:
            export = ExportTraceServiceRequest.FromString(body)
            for resource_spans in export.resource_spans:
                resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        found.append((resource["service.name"], {a.key: a.value for a in span.attributes}, span.name))
        return found


async def test_a_turn_s_spans_reach_an_otlp_collector_over_http(db):
    collector = Collector()
    async with serve(collector.app()) as collector_url:
        runtime, accounts = await make_runtime(
            db,
            ModelGateway({"chat": "script:demo"}).client("chat"),
            quiet_window_s=0,
            otel_exporter="otlp",
            otel_endpoint=f"{collector_url}/v1/traces",
            otel_service_name="frontdesk-test",
        )
        async with serve(create_app(runtime)) as base_url, client(base_url) as http:
            url = f"/v1/webchat/{accounts.webchat_id}/messages"
            posted = await http.post(
                url, json={"session": "otlp-session-0001", "id": "m1", "text": "how much are flyers?"}
            )
            assert posted.status_code == 202
            await wait_idle(db)
        # The app has stopped: its shutdown flushed the batch to the collector.
    assert collector.requests, "no OTLP request arrived"
    assert {(path, kind) for path, kind, _ in collector.requests} == {("/v1/traces", "application/x-protobuf")}
    spans = collector.spans()
    assert {service for service, _, _ in spans} == {"frontdesk-test"}
    names = {name for _, _, name in spans}
    assert {"turn", "assemble", "context", "route", "model.request", "tool.call", "verify", "deliver"} <= names


def test_otlp_without_its_extra_is_a_clear_config_error(monkeypatch: pytest.MonkeyPatch):
    # None in sys.modules makes the import fail as if the package were not installed.
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with pytest.raises(ConfigError, match=r"pip install 'frontdesk\[otlp\]'"):
        Observability.from_settings(Settings(otel_exporter="otlp", otel_endpoint="http://127.0.0.1:9/v1/traces"))


async def test_the_console_exporter_prints_finished_spans(capsys: pytest.CaptureFixture[str]):
    observability = Observability.from_settings(Settings(otel_exporter="console", otel_service_name="console-test"))
    with observability.activated(), stage("deliver", {"frontdesk.parts": 2}):
        pass
    await observability.shutdown()
    printed = capsys.readouterr().out
    assert '"name": "deliver"' in printed
    assert '"frontdesk.parts": 2' in printed
    assert "console-test" in printed


async def test_with_no_exporter_spans_still_give_log_lines_a_trace_id():
    from frontdesk.platform.observability import current_trace_id

    observability = Observability.from_settings(Settings(otel_exporter="none"))
    assert current_trace_id() is None
    with observability.activated(), stage("turn"):
        trace_id = current_trace_id()
    assert trace_id is not None
    assert len(trace_id) == 32
    assert int(trace_id, 16) != 0
    await observability.shutdown()
