"""The Telegram route: ``sendMessage`` to the operator's linked chat, with the tenant's bot token
from the secret source (``notify/telegram_bot_token``)."""

from __future__ import annotations

import httpx2

from frontdesk.humans.notifications.routes import Delivery, DeliveryError, RouteUnavailable, SecretSource

BOT_TOKEN_SECRET = "notify/telegram_bot_token"  # vault names: ``<feature>/<what>``
MAX_TEXT = 4096  # Telegram refuses longer messages


class TelegramRoute:
    def __init__(
        self,
        http: httpx2.AsyncClient,
        secrets: SecretSource,
        *,
        timeout_s: float,
        api_base: str = "https://api.telegram.org",
    ) -> None:
        self._http = http
        self._secrets = secrets
        self._timeout_s = timeout_s
        self._api_base = api_base.rstrip("/")

    async def send(self, delivery: Delivery) -> None:
        if not delivery.address:
            raise RouteUnavailable("the operator has no Telegram chat linked")
        token = await self._secrets.get(delivery.tenant_id, BOT_TOKEN_SECRET)
        if not token:
            raise RouteUnavailable(f"no Telegram bot token (secret {BOT_TOKEN_SECRET!r})")
        body = {
            "chat_id": delivery.address,
            "text": delivery.message.chat_text()[:MAX_TEXT],
            "link_preview_options": {"is_disabled": True},
        }
        try:
            response = await self._http.post(
                f"{self._api_base}/bot{token}/sendMessage", json=body, timeout=self._timeout_s
            )
        except httpx2.HTTPError as exc:
            # ``from None``: the exception's chain would carry the request URL, and the URL carries
            # the bot token.
            raise DeliveryError(f"Telegram: {type(exc).__name__}") from None
        if response.is_success:
            return
        try:
            description = str(response.json().get("description", ""))[:300]
        except ValueError:
            description = ""
        status = response.status_code
        # 400 (chat not found), 401 (bad token), 403 (the operator blocked the bot) will not heal
        # by themselves; 429 and 5xx will.
        raise DeliveryError(f"Telegram HTTP {status}: {description}", permanent=status < 500 and status != 429)
