"""Terminal renderer: ``frontdesk chat`` prints the stored reply rows, so a turn that another
instance ran still reaches the terminal that asked."""

from __future__ import annotations

from frontdesk.ingestion.channels._store_backed import StoreBackedRenderer


class TerminalRenderer(StoreBackedRenderer):
    pass
