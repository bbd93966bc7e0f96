"""The link between ``serve``'s HTTP process (the edge) and one of its worker processes.

A socket pair carries small frames, each a kind byte, a 4-byte length and a payload:

- ``WAKE`` (edge to worker): a job was queued (a customer's message starts a turn's quiet
  window), so an idle worker reads the queue now instead of at its next poll;
- ``CHANGED`` (worker to edge): a conversation changed (a reply was committed); the edge
  publishes it, so a web-chat stream or console page open in it wakes at once, and on PostgreSQL
  its ``NOTIFY`` tells the other instances (a worker keeps no ``LISTEN`` connection of its own);
- ``METRICS_ASK`` / ``METRICS`` : a scrape of the edge's ``/metrics`` asks each worker for its own
  counters, and adds them up (``observability.metrics.merge``);
- ``READY`` (worker to edge): the worker has started its runner.

Nothing here is a source of truth: a frame lost with a dying process costs a poll interval, never
a message, because the jobs and the messages are rows in the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterator
from typing import Final

WAKE: Final = b"w"
CHANGED: Final = b"c"
METRICS_ASK: Final = b"m"
METRICS: Final = b"M"
READY: Final = b"r"

_HEADER = struct.Struct(">cI")
MAX_FRAME_BYTES = 16 * 1024 * 1024  # a metrics exposition is tens of kB; more means a broken peer


class LinkClosed(Exception):
    """The other process has gone (its end of the socket pair closed)."""


class ProcessLink:
    """One end of the socket pair, on the running event loop. ``send`` never waits: frames are
    buffered, and a send after the peer has gone is dropped (the database still holds the work)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    @classmethod
    async def open(cls, sock: socket.socket) -> ProcessLink:
        reader, writer = await asyncio.open_unix_connection(sock=sock)
        return cls(reader, writer)

    def send(self, kind: bytes, payload: bytes = b"") -> None:
        if self._writer.is_closing():
            return
        self._writer.write(_HEADER.pack(kind, len(payload)) + payload)

    async def receive(self) -> tuple[bytes, bytes]:
        """The next frame; ``LinkClosed`` once the peer has gone."""
        try:
            kind, size = _HEADER.unpack(await self._reader.readexactly(_HEADER.size))
            if size > MAX_FRAME_BYTES:
                raise LinkClosed(f"a frame of {size} bytes: the peer is broken")
            return kind, await self._reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise LinkClosed(str(exc)) from None

    async def frames(self) -> AsyncIterator[tuple[bytes, bytes]]:
        """Every frame until the peer goes."""
        while True:
            try:
                yield await self.receive()
            except LinkClosed:
                return

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()
