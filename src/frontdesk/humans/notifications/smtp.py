"""The e-mail route: one plain-text message per delivery over SMTP (stdlib ``smtplib`` in a thread).

``smtp://user:password@host:587`` upgrades with STARTTLS and refuses to continue without it, so a
password or a customer's words never cross a network in the clear; the one exception is a relay on
loopback (a local MTA), where nothing leaves the machine. ``smtps://...:465`` is TLS from the first
byte.
"""

from __future__ import annotations

import asyncio
import ipaddress
import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from urllib.parse import unquote, urlsplit

from frontdesk.errors import ConfigError
from frontdesk.humans.notifications.routes import Delivery, DeliveryError


@dataclass(frozen=True)
class SmtpServer:
    host: str
    port: int
    implicit_tls: bool
    username: str | None
    password: str | None

    @classmethod
    def parse(cls, url: str) -> SmtpServer:
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            # Never echo the URL: it carries the password.
            raise ConfigError("FRONTDESK_SMTP_URL must look like smtp://user:password@host:587 or smtps://...:465")
        implicit = parts.scheme == "smtps"
        return cls(
            host=parts.hostname,
            port=parts.port or (465 if implicit else 587),
            implicit_tls=implicit,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
        )

    @property
    def on_loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


class EmailRoute:
    def __init__(
        self,
        server: SmtpServer,
        sender: str,
        *,
        timeout_s: float,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._server = server
        self._sender = sender
        self._timeout_s = timeout_s
        self._tls = tls or ssl.create_default_context()

    @classmethod
    def from_settings(cls, smtp_url: str, sender: str | None, *, timeout_s: float) -> EmailRoute:
        server = SmtpServer.parse(smtp_url)
        sender = sender or (server.username if server.username and "@" in server.username else None)
        if not sender:
            raise ConfigError("set FRONTDESK_NOTIFY_FROM: the address notification e-mails are sent from")
        return cls(server, sender, timeout_s=timeout_s)

    async def send(self, delivery: Delivery) -> None:
        message = EmailMessage()
        message["From"] = self._sender
        message["To"] = delivery.address
        message["Subject"] = delivery.message.subject
        message["Date"] = formatdate(localtime=False)
        message["Message-ID"] = make_msgid(domain=self._sender.rsplit("@", 1)[-1])
        # RFC 3834: out-of-office robots must not answer a notification.
        message["Auto-Submitted"] = "auto-generated"
        message.set_content(delivery.message.body)
        message["Content-Language"] = delivery.message.language  # after set_content, which drops Content-*
        await asyncio.to_thread(self._send_blocking, message)

    def _send_blocking(self, message: EmailMessage) -> None:
        server = self._server
        try:
            client = (
                smtplib.SMTP_SSL(server.host, server.port, timeout=self._timeout_s, context=self._tls)
                if server.implicit_tls
                else smtplib.SMTP(server.host, server.port, timeout=self._timeout_s)
            )
            with client:
                client.ehlo()
                if not server.implicit_tls:
                    if client.has_extn("starttls"):
                        client.starttls(context=self._tls)
                        client.ehlo()
                    elif not server.on_loopback:
                        raise DeliveryError("the SMTP server offers no STARTTLS; not sending in the clear")
                if server.username:
                    client.login(server.username, server.password or "")
                client.send_message(message)
        except smtplib.SMTPRecipientsRefused as exc:
            code, reply = next(iter(exc.recipients.values()))
            raise DeliveryError(f"SMTP {code}: {_text(reply)}", permanent=code >= 500) from exc
        except smtplib.SMTPResponseException as exc:
            raise DeliveryError(
                f"SMTP {exc.smtp_code}: {_text(exc.smtp_error)}", permanent=exc.smtp_code >= 500
            ) from exc
        except (smtplib.SMTPException, OSError) as exc:  # refused, reset, timed out, TLS failures
            raise DeliveryError(f"SMTP: {type(exc).__name__}: {exc}"[:300]) from exc


def _text(reply: bytes | str) -> str:
    return (reply.decode(errors="replace") if isinstance(reply, bytes) else reply)[:300]
