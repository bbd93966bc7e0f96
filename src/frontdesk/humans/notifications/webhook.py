"""The webhook route: the event as JSON, POSTed and signed with the webhook's secret.

Headers: ``Frontdesk-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." + raw body)>``,
``Frontdesk-Event`` (the kind) and ``Frontdesk-Delivery`` (stable across retries: receivers drop a
repeat). ``docs/notifications.md`` shows receivers how to verify.
"""

from __future__ import annotations

import hashlib
import hmac
import json

import httpx2

from frontdesk.errors import PayloadError
from frontdesk.humans.notifications.routes import Delivery, DeliveryError, RouteUnavailable, SecretSource
from frontdesk.platform.clock import Clock, SystemClock
from frontdesk.platform.outbound import GuardedClient, OutboundAllow, OutboundRefused, literal_address, refusal

SIGNATURE_HEADER = "Frontdesk-Signature"
TOLERANCE_S = 300
NOTHING_ALLOWED = OutboundAllow()


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify(secret: str, header: str, body: bytes, *, now: float, tolerance_s: float = TOLERANCE_S) -> bool:
    """What a receiver does: recompute over the raw body, compare in constant time, and refuse a
    timestamp outside the tolerance (a replayed request)."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(fields.get("t", ""))
    except ValueError:
        return False
    if abs(now - timestamp) > tolerance_s:
        return False
    expected = sign(secret, timestamp, body).split("v1=", 1)[1]
    return hmac.compare_digest(expected, fields.get("v1", ""))


def check_webhook_url(url: str, allow: OutboundAllow = NOTHING_ALLOWED) -> None:
    """https only, and never a literal loopback, private, link-local... address (nor ``localhost``)
    unless ``allow`` (the ``outbound_allow`` setting) names it; plain http only to an allowed host.
    A name's addresses are checked again at every send, by the guarded client (``platform/outbound``)."""
    try:
        parsed = httpx2.URL(url)
    except Exception as exc:  # httpx raises a few types for a malformed URL
        raise PayloadError("not a webhook URL") from exc
    host = parsed.host
    if parsed.scheme not in ("https", "http") or not host:
        raise PayloadError("a webhook URL must be https://")
    allowed = allow.allows_host(host)
    if parsed.scheme == "http" and not allowed:
        raise PayloadError("a webhook URL must be https:// (plain http only to a host in outbound_allow)")
    if allowed:
        return
    reason = _refusal(host)
    if reason is not None:
        raise PayloadError(f"a webhook URL may not point at {host}: {reason}, not in outbound_allow")


def _refusal(host: str) -> str | None:
    """What the URL's host alone shows (no DNS at save time): a literal address that is not
    public, or a name that always means this machine."""
    address = literal_address(host)
    if address is not None:
        return refusal(address)
    name = host.lower().rstrip(".")
    return "a name for this machine" if name == "localhost" or name.endswith(".localhost") else None


class WebhookRoute:
    """POSTs each delivery through ``http``, the guarded client: its allow-list is the one the URL
    is checked against, and every connection it opens is checked again (``platform/outbound``)."""

    def __init__(
        self, http: GuardedClient, secrets: SecretSource, *, timeout_s: float, clock: Clock | None = None
    ) -> None:
        self._http = http
        self._secrets = secrets
        self._timeout_s = timeout_s
        self._clock = clock or SystemClock()

    async def send(self, delivery: Delivery) -> None:
        try:
            check_webhook_url(delivery.address, self._http.allow)
        except PayloadError as exc:
            raise DeliveryError(exc.message, permanent=True) from None
        secret = await self._secrets.get(delivery.tenant_id, delivery.secret_name or "")
        if not secret:
            raise RouteUnavailable(f"no signing secret (secret {delivery.secret_name!r})")
        body = json.dumps(delivery.document, ensure_ascii=False, separators=(",", ":")).encode()
        timestamp = int(self._clock.now().timestamp())
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: sign(secret, timestamp, body),
            "Frontdesk-Event": str(delivery.document.get("kind", "")),
            "Frontdesk-Delivery": str(delivery.delivery_id),
        }
        try:
            # Redirects are not followed: a signed body must land where the owner said, nowhere else.
            response = await self._http.post(
                delivery.address, content=body, headers=headers, timeout=self._timeout_s, follow_redirects=False
            )
        except OutboundRefused as exc:
            raise DeliveryError(f"webhook: {exc.message}", permanent=True) from None
        except httpx2.HTTPError as exc:
            raise DeliveryError(f"webhook: {type(exc).__name__}") from None
        if response.is_success:
            return
        status = response.status_code
        raise DeliveryError(
            f"webhook HTTP {status}: {response.text[:200]}", permanent=400 <= status < 500 and status not in (408, 429)
        )
