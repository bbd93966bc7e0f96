"""What the composition root hands each channel: ports, never globals."""

from __future__ import annotations

from dataclasses import dataclass

from frontdesk.ingestion.ingest import Ingestor
from frontdesk.platform.signals import ConversationSignals
from frontdesk.platform.store.engine import Database


@dataclass(frozen=True)
class ChannelDeps:
    db: Database
    ingestor: Ingestor
    signals: ConversationSignals
    max_text_chars: int
    model_label: str
