"""What the composition root hands each channel: ports, never globals."""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx2

from frontdesk.ingestion.accounts import AccountDirectory
from frontdesk.ingestion.channels.webchat.limits import WebchatLimits
from frontdesk.ingestion.ingest import Ingestor
from frontdesk.platform.clock import Clock
from frontdesk.platform.media import MediaStore
from frontdesk.platform.outbound import GuardedClient
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
    # Fetches of URLs a customer or the payload chose (media URLs): every connection passes the
    # outbound guard (platform/outbound.py), which refuses loopback, private, link-local... hosts.
    guarded_http: GuardedClient
    # Messages a minute per web chat session, client address and account (webchat/limits.py).
    webchat_limits: WebchatLimits = field(default_factory=WebchatLimits)
