"""Which web sites may use a web chat account from a browser (CORS).

A business embeds the widget on its own site, so the browser calls our API from that site's
origin and says so in ``Origin``. Allowed are the account's ``allowed_origins`` (a comma-separated
config value, as ``frontdesk accounts add webchat --config allowed_origins=...`` stores it) and
frontdesk's own origin (the chat page at ``/webchat/{id}``). A request without ``Origin`` is no
browser calling across sites (curl, a server, the page's own GETs) and is not this module's
business: the API stays public, as it always was; the check only keeps other sites' pages out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from frontdesk.errors import ForbiddenError

CONFIG_KEY = "allowed_origins"
# ``scheme://host[:port]``, nothing else (an optional trailing "/", the empty path): no path, no
# user, no wildcard. Hosts in ASCII, as browsers write them in ``Origin`` (punycode for IDNs).
# cli_accounts.py checks saved values with the same expression (it may not import a channel);
# tests/channels/test_webchat_widget.py holds the two to the same verdicts.
ORIGIN_PATTERN = r"(?i)(https?)://([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?/?"
_ORIGIN = re.compile(ORIGIN_PATTERN)
_DEFAULT_PORTS = {"http": "80", "https": "443"}
# What a preflight allows: the API's methods, and the headers the widget sends (Content-Type on a
# POST; Last-Event-ID when EventSource reconnects). Max-age: a browser asks again within 10 minutes,
# so an origin taken off the list stops passing preflights soon (the requests are refused at once).
ALLOWED_HEADERS = "Content-Type, Last-Event-ID"
PREFLIGHT_MAX_AGE_S = 600


def normalise_origin(text: str) -> str | None:
    """``text`` as a browser writes it in ``Origin`` (lowercase, no default port, no trailing
    slash), or None when it is not ``scheme://host[:port]``."""
    match = _ORIGIN.fullmatch(text.strip())
    if match is None:
        return None
    scheme, host, port = match[1].lower(), match[2].lower(), match[3]
    if port is not None and port.lstrip("0") != _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}:{int(port)}"
    return f"{scheme}://{host}"


def allowed_origins(config: Mapping[str, Any]) -> frozenset[str]:
    """The origins an account's config allows (entries that are not origins allow nothing)."""
    value = config.get(CONFIG_KEY)
    entries = value if isinstance(value, list) else str(value or "").split(",")
    return frozenset(o for o in (normalise_origin(str(e)) for e in entries) if o is not None)


def is_own_origin(origin: str, *, public_base_url: str, host: str | None, fetch_site: str | None) -> bool:
    """Whether ``origin`` is frontdesk itself: its public base URL, or the host the request was
    sent to (behind a proxy that keeps ``Host``), or a request the browser calls same-origin
    (``Sec-Fetch-Site``, which page scripts cannot set: it holds behind a proxy that rewrites
    ``Host`` and with no ``public_url`` configured)."""
    if fetch_site == "same-origin" or origin == normalise_origin(public_base_url):
        return True
    if host is None or not origin.startswith(("http://", "https://")):
        return False
    netloc = origin.split("://", 1)[1]
    return netloc == host.lower().removesuffix(":80").removesuffix(":443")


def refusal(origin: str, account_id: str) -> ForbiddenError:
    """The 403 for an origin the account does not allow: what is wrong and how to allow it."""
    shown = origin if len(origin) <= 100 else origin[:100] + "…"
    return ForbiddenError(
        f"the origin {shown!r} is not allowed for this web chat account; to embed the chat on that site,"
        f" add the origin to the account's {CONFIG_KEY}: frontdesk accounts add webchat --id {account_id}"
        f" --tenant <tenant> --config {CONFIG_KEY}=<every allowed origin, comma-separated>"
        " (docs/channels/webchat.md, On your own website)"
    )


def check_origin(
    origin: str | None,
    config: Mapping[str, Any],
    *,
    account_id: str,
    public_base_url: str,
    host: str | None,
    fetch_site: str | None,
) -> str | None:
    """The origin to grant CORS headers to, None when the request named none; raises the 403
    (``refusal``) when it names one this account does not allow."""
    if origin is None:
        return None
    normalised = normalise_origin(origin)  # "null" (a sandboxed frame, a file) is no origin: refused
    if normalised is not None and (
        normalised in allowed_origins(config)
        or is_own_origin(normalised, public_base_url=public_base_url, host=host, fetch_site=fetch_site)
    ):
        return origin
    raise refusal(origin, account_id)


def cors_headers(origin: str) -> dict[str, str]:
    """What an allowed origin's answers carry. No credentials: the widget sends no cookies (its
    session id travels in the query and the body)."""
    return {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}


def preflight_headers(origin: str, methods: str) -> dict[str, str]:
    return {
        **cors_headers(origin),
        "Access-Control-Allow-Methods": methods,
        "Access-Control-Allow-Headers": ALLOWED_HEADERS,
        "Access-Control-Max-Age": str(PREFLIGHT_MAX_AGE_S),
    }
