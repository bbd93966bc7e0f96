"""Schemathesis over the app's own OpenAPI document: every documented operation, positive and
negative cases, every built-in check (no 5xx, documented statuses, content types and bodies,
invalid data refused, valid data accepted...), plus the hostile rules of ``hostile_kit``.

The schema is loaded in-process with ``schemathesis.openapi.from_asgi``. The cases go through
this module's ``HostileApp`` client rather than Schemathesis's own ASGI client: that one runs the
app on an event loop in a thread of its own (and starts its lifespan there), while the database
connections of our runtime belong to the loop they were opened on. Each response is then handed
to ``case.validate_response``, so the checks are Schemathesis's, unchanged.

Schemathesis draws path parameters from their patterns and would never hit a real account id;
a share of the cases is pointed at the real accounts (and, for webhooks, correctly signed over
the generated body), so the checks also see what lies behind authentication.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import jsonschema
import pytest
import schemathesis
from hostile_harness import HostileApp, hostile_fixture
from hostile_kit import SECRET, TALLY, examples, line_signature, meta_signature
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from frontdesk.http_errors import ERROR_SCHEMA

OPENAPI = "/openapi.json"
# Where a case goes when it is pointed at a real account: the operation's path parameter -> id.
REAL_ACCOUNTS = {
    "/webhooks/telegram/{account_id}": "hostile-telegram",
    "/webhooks/messenger/{account_id}": "hostile-messenger",
    "/webhooks/instagram/{account_id}": "hostile-instagram",
    "/webhooks/whatsapp/{account_id}": "hostile-whatsapp",
    "/webhooks/line/{account_id}": "hostile-line",
}
WEBCHAT = "demo-webchat"
VALID_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")  # an id both path patterns accept


class _NoLifespan:
    """The app without its lifespan: Schemathesis starts one when it loads the schema, on a loop
    of its own; our runtime is started and stopped by the fixture instead."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        await self.app(scope, receive, send)


hostile = hostile_fixture("hostile-openapi", webchat_max_text_chars=400)


def test_the_openapi_document_is_valid_and_documents_our_error_body(hostile: HostileApp) -> None:
    from openapi_spec_validator import validate  # a dependency of schemathesis

    document = hostile.run(hostile.client.get(OPENAPI)).json()
    validate(document)
    documented = {(m.upper(), p) for p, ops in document["paths"].items() for m in ops}
    assert ("POST", "/v1/webchat/{channel_account_id}/messages") in documented
    assert {("POST", p) for p in REAL_ACCOUNTS} <= documented
    # Every error an operation declares is our JSON error body, whatever the route's own media
    # type; FastAPI's default ("detail": [...]) was documented for 422s we never send.
    errors = [
        response.get("content")
        for path, operations in document["paths"].items()
        for operation in operations.values()
        for status, response in operation["responses"].items()
        if status.startswith(("4", "5")) and (path, status) != ("/readyz", "503")  # readiness has its own body
    ]
    assert len(errors) > 50
    assert all(content == errors[0] for content in errors), "an error documented with another body"
    assert errors[0]["application/json"]["schema"]["title"] == ERROR_SCHEMA["title"] == "ErrorBody"
    assert "HTTPValidationError" not in json.dumps(document)


@pytest.mark.parametrize(
    ("path", "folder", "prefix", "unless"),
    [
        ("/webhooks/telegram/{account_id}", "telegram", "", None),
        ("/webhooks/messenger/{account_id}", "messenger", "", "instagram"),
        ("/webhooks/instagram/{account_id}", "messenger", "instagram", None),
        ("/webhooks/whatsapp/{account_id}", "whatsapp", "", None),
        ("/webhooks/line/{account_id}", "line", "", None),
    ],
)
def test_a_documented_webhook_body_admits_every_real_payload_and_no_malformed_one(
    hostile: HostileApp, path: str, folder: str, prefix: str, unless: str | None
) -> None:
    # The catch-all models of tagged unions (an event type we do not model) used to fit every
    # payload too, so a "oneOf" of them called each real LINE or WhatsApp message invalid.
    document = hostile.run(hostile.client.get(OPENAPI)).json()
    schema = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    validator = jsonschema.Draft202012Validator(schema)
    fixtures = resources.files(f"frontdesk.ingestion.channels.{folder}").joinpath("fixtures")
    names = [f.name for f in fixtures.iterdir() if f.name.startswith(prefix) and f.name.endswith(".json")]
    names = [n for n in names if unless is None or not n.startswith(unless)]
    verdicts = {n: validator.is_valid(json.loads(fixtures.joinpath(n).read_bytes())) for n in sorted(names)}

    assert {n for n, valid in verdicts.items() if not valid} == {n for n in verdicts if n.startswith("malformed")}


def _aim(case: Any) -> bool:
    """Point the case at a real account, unless its account id is what it got wrong (a negative
    case whose invalid part is the path must stay invalid). Returns whether it did."""
    path = case.operation.path
    real = REAL_ACCOUNTS.get(path) or (WEBCHAT if "{channel_account_id}" in path else None)
    name = "account_id" if "{account_id}" in path else "channel_account_id"
    current = (case.path_parameters or {}).get(name)
    if real is None or not isinstance(current, str) or not VALID_ID.fullmatch(current):
        return False
    case.path_parameters = {**case.path_parameters, name: real}
    return True


def _signature(path: str, raw: bytes) -> dict[str, str]:
    """The header a platform signs a webhook body with, made with the account's real secret."""
    channel = path.split("/")[2]
    if channel == "telegram":
        return {"X-Telegram-Bot-Api-Secret-Token": SECRET}
    if channel == "line":
        return {"X-Line-Signature": line_signature(SECRET, raw)}
    return {"X-Hub-Signature-256": meta_signature(SECRET, raw)}


def test_every_documented_operation_holds_to_its_documentation(hostile: HostileApp) -> None:
    api = schemathesis.openapi.from_asgi(OPENAPI, _NoLifespan(hostile.app))
    # No made-up query parameters: like almost every HTTP API, ours ignores parameters it does not
    # know (a platform may add some), so a request with one is not invalid.
    api.config.generation.update(allow_extra_parameters=False)
    operations = [result.ok() for result in api.get_all_operations()]
    failures: dict[str, str] = {}
    for operation in operations:
        # An operation that takes nothing (/healthz) has no invalid requests to make.
        takes_input = bool(list(operation.iter_parameters())) or bool(list(operation.body))
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)[: 2 if takes_input else 1]:
            # Every operation gets its run; the failures are reported together.
            try:
                _fuzz_operation(hostile, operation, mode)
            except (Exception, BaseExceptionGroup) as exc:  # Schemathesis raises a BaseExceptionGroup
                failures[f"{operation.label} ({mode.value})"] = f"{type(exc).__name__}: {exc}"[:5000]
    assert not failures, "\n\n".join(f"{label}:\n{problem}" for label, problem in failures.items())
    assert len(operations) >= 14


def _fuzz_operation(hostile: HostileApp, operation: Any, mode: GenerationMode) -> None:
    # A platform payload's schema is large: drawing one body from WhatsApp's (30 kB) costs ~0.5 s,
    # so those operations get few cases here; test_webhooks_fuzz sends them thousands of bodies.
    size = len(json.dumps(operation.definition.raw))
    budget = 60 if size < 10_000 else 10 if size < 40_000 else 4

    @settings(
        max_examples=examples(budget),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),  # generation speed is Schemathesis's business here
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case: Any) -> None:
        # Every other case goes to a real account; a webhook body there is signed as the platform would.
        aimed = TALLY[case.operation.label] % 2 == 0 and _aim(case)
        request = case.as_transport_kwargs(base_url="http://hostile.test")
        body = json.dumps(request["json"]).encode() if "json" in request else request.get("data")
        if isinstance(body, str):
            body = body.encode()
        headers = dict(request.get("headers") or {})
        if aimed and case.method.upper() == "POST" and case.operation.path.startswith("/webhooks/"):
            signature = _signature(case.operation.path, body or b"")
            headers = {k: v for k, v in headers.items() if k.lower() not in {h.lower() for h in signature}}
            headers.update(signature)
        if request.get("cookies"):  # a header, not httpx's per-request cookies (deprecated)
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in request["cookies"].items())
        stream = case.method.upper() == "GET" and case.operation.path.endswith("/stream")
        response = hostile.exchange(
            case.operation.label,
            case.method.upper(),
            request["url"],
            content=body,
            headers=headers,
            params=request.get("params"),
            stream=stream,
        )
        case.validate_response(response)

    check()
