"""Web chat renderer: the widget streams the stored reply rows (``GET .../stream``)."""

from __future__ import annotations

from frontdesk.ingestion.channels._store_backed import StoreBackedRenderer


class WebchatRenderer(StoreBackedRenderer):
    pass
