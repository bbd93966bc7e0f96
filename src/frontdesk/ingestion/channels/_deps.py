"""What the composition root hands each channel: ports, never globals."""

from __future__ import annotations

from dataclasses import dataclass

import httpx2

from frontdesk.ingestion.accounts import AccountDirectory
from frontdesk.ingestion.ingest import Ingestor
from frontdesk.platform.clock import Clock
from frontdesk.platform.media import MediaStore
from frontdesk.platform.signals import ConversationSignals
from frontdesk.platform.store.engine import Database


@dataclass(frozen=True)
class ChannelDeps:
    db: Database
    ingestor: Ingestor
    signals: ConversationSignals
    max_text_chars: int
    model_label: str
    clock: Clock
    accounts: AccountDirectory
    http: httpx2.AsyncClient  # outbound calls to platform APIs (tests point it at loopback fakes)
    media: MediaStore
    public_base_url: str
