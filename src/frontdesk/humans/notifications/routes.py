"""The route port: how one delivery reaches one subscriber, and how a route reports failure.

A route raises ``DeliveryError`` with a message that is safe to store (no token, no password, no
URL carrying a secret); ``permanent`` failures (a refused address, a blocked bot, a 4xx from a
webhook) are not retried. ``RouteUnavailable`` means the route cannot serve this subscriber at all
(no SMTP server configured, no bot token): the attempt is recorded as ``skipped``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from frontdesk.humans.notifications.templates import Rendered


class SecretSource(Protocol):
    """Where bot tokens and signing secrets come from (the vault, wired by the composition root)."""

    async def get(self, tenant_id: str, name: str) -> str | None: ...


class MappingSecrets:
    """Secrets from a dict keyed by (tenant id, name): tests and local development."""

    def __init__(self, secrets: Mapping[tuple[str, str], str]) -> None:
        self._secrets = dict(secrets)

    async def get(self, tenant_id: str, name: str) -> str | None:
        return self._secrets.get((tenant_id, name))


class DeliveryError(Exception):
    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


class RouteUnavailable(DeliveryError):
    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=True)


@dataclass(frozen=True)
class Delivery:
    """One delivery to one subscriber on one route. ``address`` is the e-mail address, the
    Telegram chat id or the webhook URL; ``document`` is the event as webhooks receive it;
    ``delivery_id`` (the attempt row's id) lets receivers drop a repeat."""

    delivery_id: int
    tenant_id: str
    address: str
    message: Rendered
    document: Mapping[str, Any]
    secret_name: str | None = None


class Route(Protocol):
    async def send(self, delivery: Delivery) -> None:
        """Deliver, or raise ``DeliveryError``."""
        ...
