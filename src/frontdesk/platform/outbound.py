"""The outbound guard: every fetch of a URL a tenant or a customer can influence goes through it.

A notification webhook's URL is typed by a tenant's owner; a customer's media URL comes in a
platform's payload or answer. Fetched from the server, either could reach what only the server
can: the cloud's metadata service (169.254.169.254), a database on 10.0.0.5, an admin port on
127.0.0.1. So ``GuardedClient`` is an httpx2 client whose every TCP connection, redirects
included, goes through ``GuardedBackend.connect_tcp``:

1. the host is resolved once (``loop.getaddrinfo``: decimal, octal and hex IPv4 spellings come
   out as the address they mean);
2. the connection is refused (``OutboundRefused``) if *any* resolved address is not a public
   unicast one: loopback, private, link-local, shared (CGNAT), multicast, reserved, unspecified,
   or an IPv6 address carrying one of those (IPv4-mapped, 6to4, NAT64), unless ``outbound_allow``
   names the host or covers the address;
3. the socket connects to the checked address itself, never to the name again, so a DNS answer
   that changes between the check and the connect (rebinding) changes nothing. TLS still sends
   the name (SNI, certificate check) and the Host header is still the URL's.

API calls to a platform's own configured base URL (the Telegram Bot API, the Graph API, LINE's
API) use the plain client: the deployer set those, and tests point them at loopback doubles.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import httpcore2
import httpx2

from frontdesk.errors import FrontdeskError

__all__ = [
    "GuardedBackend",
    "GuardedClient",
    "GuardedTransport",
    "OutboundAllow",
    "OutboundRefused",
    "Resolver",
    "literal_address",
    "refusal",
    "system_resolver",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# Resolves a host name to its addresses, as getaddrinfo would (tests inject a stub).
Resolver = Callable[[str, int], Awaitable[list[str]]]

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052: the IPv4 address is the last 32 bits
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215: a site's own translator
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")  # RFC 6598: carrier-grade NAT, inside a provider


class OutboundRefused(FrontdeskError):
    """A connection the guard would not open. The message names the host and why; never a
    path, a query or a credential (the guard only ever sees the host and the port)."""

    code = "outbound_refused"


@dataclass(frozen=True)
class OutboundAllow:
    """The ``outbound_allow`` setting: host names (exact, lower-case) and networks that may be
    reached although they are not public (a self-hosted webhook receiver on 10.0.0.5)."""

    names: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> OutboundAllow:
        names: set[str] = set()
        networks: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip().lower().rstrip(".")
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                names.add(entry)
        return cls(frozenset(names), tuple(networks))

    def allows_host(self, host: str) -> bool:
        """The host itself is named, or it is an address a listed network covers."""
        host = _bare_host(host)
        if host in self.names:
            return True
        address = literal_address(host)
        return address is not None and self.allows_address(address)

    def allows_address(self, address: IPAddress) -> bool:
        address = _unmapped(address)
        return any(address.version == network.version and address in network for network in self.networks)


def refusal(address: IPAddress) -> str | None:
    """Why ``address`` may not be reached from the server (``"a loopback address"``), or None
    for a public unicast address."""
    address = _unmapped(address)
    if isinstance(address, ipaddress.IPv6Address):
        if address in _LOCAL_NAT64:
            return "a NAT64 address of a private translator"
        # 6to4 and well-known NAT64 (a DNS64 resolver's answer on an IPv6-only host) are routed
        # to the IPv4 address they carry: that address decides.
        embedded = address.sixtofour or (
            ipaddress.IPv4Address(int(address) & 0xFFFFFFFF) if address in _NAT64 else None
        )
        if embedded is not None:
            inner = _kind(embedded)
            return f"an address carrying {embedded} ({inner})" if inner is not None else None
    return _kind(address)


def literal_address(host: str) -> IPAddress | None:
    """The address ``host`` spells without any DNS: a plain IPv4 or IPv6 literal, or an IPv4 in
    one of the forms ``inet_aton`` still reads (``2130706433``, ``0x7f.1``, ``0177.0.0.1``)."""
    host = _bare_host(host)
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if host and all(c in "0123456789abcdefx." for c in host) and any(c.isdigit() for c in host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


async def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for ``host``, in its order, each once."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class GuardedBackend(httpcore2.AsyncNetworkBackend):
    """Resolves, checks, and connects to the checked address (see the module's docstring).
    ``inner`` opens the sockets (httpcore2's anyio backend; tests pass a recording one)."""

    def __init__(
        self,
        allow: OutboundAllow,
        *,
        resolver: Resolver | None = None,
        inner: httpcore2.AsyncNetworkBackend | None = None,
    ) -> None:
        self._allow = allow
        self._resolve = resolver or system_resolver
        self._inner = inner or httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109  # httpcore2's interface names it so
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = await self.checked_addresses(host, port, timeout)
        failure: Exception | None = None
        for address in addresses:  # the checked addresses only, never the name again
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except httpcore2.ConnectError as exc:
                failure = exc
        assert failure is not None  # checked_addresses never returns an empty list
        raise failure

    async def checked_addresses(self, host: str, port: int, within_s: float | None = None) -> list[str]:
        """The addresses to connect to for ``host``, every one of them allowed; else
        ``OutboundRefused`` (a bad address) or ``httpcore2.ConnectError`` (no address at all)."""
        name = _bare_host(host)
        literal = literal_address(name)
        if literal is not None:
            found = [str(literal)]
        else:
            try:
                async with asyncio.timeout(within_s):
                    found = await self._resolve(name, port)
            except TimeoutError:
                raise httpcore2.ConnectTimeout(f"resolving {name} timed out") from None
            except OSError as exc:  # socket.gaierror: no such name
                raise httpcore2.ConnectError(f"cannot resolve {name}: {exc}") from None
        if not found:
            raise httpcore2.ConnectError(f"{name} has no address")
        if name in self._allow.names:
            return found
        for text in found:
            address = ipaddress.ip_address(text.split("%", 1)[0])  # an IPv6 scope ("%eth0") aside
            reason = refusal(address)
            if reason is not None and not self._allow.allows_address(address):
                where = name if literal is not None else f"{name} ({text})"
                raise OutboundRefused(f"refused to connect to {where}: {reason}, not in outbound_allow")
        return found

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109  # httpcore2's interface names it so
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise OutboundRefused("refused to connect to a unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx2.AsyncBaseTransport):
    """httpx2's transport over a connection pool that opens every connection through
    ``backend``: httpx2's own ``AsyncHTTPTransport`` has no way to take a network backend, so
    this is the same small bridge onto httpcore2's public pool."""

    def __init__(
        self, backend: httpcore2.AsyncNetworkBackend, *, limits: httpx2.Limits, ssl_context: ssl.SSLContext
    ) -> None:
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=backend,
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        assert isinstance(request.stream, AsyncIterable)
        core = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            response = await self._pool.handle_async_request(core)
        assert isinstance(response.stream, AsyncIterable)
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


class GuardedClient(httpx2.AsyncClient):
    """An ``httpx2.AsyncClient`` whose every connection passes the guard (``allow`` is the
    ``outbound_allow`` setting). It never uses an environment proxy: a proxy would resolve the
    name itself, after the check. Redirects are not followed unless a request asks; every hop
    is a new connection through the same guard."""

    def __init__(
        self,
        allow: OutboundAllow,
        *,
        resolver: Resolver | None = None,
        network: httpcore2.AsyncNetworkBackend | None = None,
        timeout: float = 15.0,
        headers: Mapping[str, str] | None = None,
        limits: httpx2.Limits | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.allow = allow
        backend = GuardedBackend(allow, resolver=resolver, inner=network)
        transport = GuardedTransport(
            backend, limits=limits or httpx2.Limits(), ssl_context=ssl_context or httpx2.create_ssl_context()
        )
        super().__init__(transport=transport, timeout=timeout, headers=headers, trust_env=False)


# httpcore2's errors as httpx2's, so callers keep catching ``httpx2.HTTPError``; most specific first.
_ERRORS: tuple[tuple[type[Exception], type[httpx2.HTTPError]], ...] = (
    (httpcore2.ConnectTimeout, httpx2.ConnectTimeout),
    (httpcore2.ReadTimeout, httpx2.ReadTimeout),
    (httpcore2.WriteTimeout, httpx2.WriteTimeout),
    (httpcore2.PoolTimeout, httpx2.PoolTimeout),
    (httpcore2.TimeoutException, httpx2.TimeoutException),
    (httpcore2.ConnectError, httpx2.ConnectError),
    (httpcore2.ReadError, httpx2.ReadError),
    (httpcore2.WriteError, httpx2.WriteError),
    (httpcore2.NetworkError, httpx2.NetworkError),
    (httpcore2.ProxyError, httpx2.ProxyError),
    (httpcore2.UnsupportedProtocol, httpx2.UnsupportedProtocol),
    (httpcore2.LocalProtocolError, httpx2.LocalProtocolError),
    (httpcore2.RemoteProtocolError, httpx2.RemoteProtocolError),
    (httpcore2.ProtocolError, httpx2.ProtocolError),
)


@contextmanager
def _httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for source, target in _ERRORS:
            if isinstance(exc, source):
                raise target(str(exc)) from exc
        raise


class _ResponseStream(httpx2.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


def _bare_host(host: str) -> str:
    return host.strip().lower().strip("[]").rstrip(".")


def _unmapped(address: IPAddress) -> IPAddress:
    """``::ffff:127.0.0.1`` is 127.0.0.1 on the wire."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _kind(address: IPAddress) -> str | None:
    checks = (
        (address.is_unspecified, "an unspecified address"),
        (address.is_loopback, "a loopback address"),
        (address.is_link_local, "a link-local address"),
        (address.is_multicast, "a multicast address"),
        (address.is_private, "a private address"),
        (address.is_reserved, "a reserved address"),
        (isinstance(address, ipaddress.IPv4Address) and address in _SHARED, "a shared (carrier-grade NAT) address"),
        (not address.is_global, "not a public address"),
    )
    return next((reason for matched, reason in checks if matched), None)
