"""What the channel routes tell the OpenAPI document: the request bodies they take and every status
they answer, so a client (or Schemathesis) reading ``/openapi.json`` learns what it will really get.

Webhook routes read the raw body themselves (the signature covers the exact bytes), so FastAPI
cannot see their payload models; ``webhook_docs`` declares them by hand (inlined, see
``http_errors.json_schema``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from frontdesk.http_errors import UNAVAILABLE, error_responses, json_schema
from frontdesk.ingestion.channels._webhook import WEBHOOK_BODY_LIMIT


def webhook_docs(
    payload: type[BaseModel], *, unauthorized: str, schema: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``responses`` and ``openapi_extra`` for a platform webhook POST (``**webhook_docs(...)``).

    ``schema``: the body's JSON schema when it differs from ``payload``'s (a shared model narrowed
    to one product)."""
    body = schema if schema is not None else json_schema(payload)
    return {
        "responses": {
            200: {"description": "stored, a redelivery, or ignored on purpose: counts by outcome"},
            **error_responses(
                {
                    400: "the body is not JSON, not a JSON object, or nested too deeply to be a payload",
                    401: unauthorized,
                    404: "no account of this channel has this id",
                    413: f"the body is over {WEBHOOK_BODY_LIMIT} bytes",
                    422: "a JSON object that is not this platform's payload, or an account id the path refuses",
                    **UNAVAILABLE,
                }
            ),
        },
        "openapi_extra": {"requestBody": {"required": True, "content": {"application/json": {"schema": body}}}},
    }
