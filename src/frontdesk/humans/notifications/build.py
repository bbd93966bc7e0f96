"""Building the routes from settings (called once, by the composition root)."""

from __future__ import annotations

import httpx2

from frontdesk.humans.notifications.routes import Route, SecretSource
from frontdesk.humans.notifications.smtp import EmailRoute
from frontdesk.humans.notifications.telegram import TelegramRoute
from frontdesk.humans.notifications.webhook import WebhookRoute
from frontdesk.platform.clock import Clock
from frontdesk.platform.outbound import GuardedClient


def build_routes(
    *,
    http: httpx2.AsyncClient,
    guarded_http: GuardedClient,
    secrets: SecretSource,
    clock: Clock,
    smtp_url: str | None,
    sender: str | None,
    timeout_s: float,
    telegram_api_base: str = "https://api.telegram.org",
) -> dict[str, Route]:
    """Every route; e-mail only when ``smtp_url`` is set (otherwise its attempts are recorded
    ``skipped``). Telegram and webhooks look their secrets up per tenant at send time.

    ``http`` reaches the Telegram Bot API the deployer configured; ``guarded_http`` reaches the
    webhook URLs tenants typed, through the outbound guard (``platform/outbound``)."""
    routes: dict[str, Route] = {
        "telegram": TelegramRoute(http, secrets, timeout_s=timeout_s, api_base=telegram_api_base),
        "webhook": WebhookRoute(guarded_http, secrets, timeout_s=timeout_s, clock=clock),
    }
    if smtp_url:
        routes["email"] = EmailRoute.from_settings(smtp_url, sender, timeout_s=timeout_s)
    return routes
