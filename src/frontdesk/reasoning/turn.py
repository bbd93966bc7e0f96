"""The unit of agent work: one batch of customer messages in one conversation."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class TurnMessage:
    id: int
    role: str  # "user" | "assistant"
    content_type: str
    text: str
    created_at: datetime
    image_key: str | None = None  # a re-hosted customer image (media store key), shown to a vision model
    transcript_quality: str | None = None  # a voice note's verdict: "ok" | "uncertain" | "failed"


@dataclass(frozen=True)
class Turn:
    tenant_id: str
    business_name: str
    conversation_id: str
    batch: tuple[TurnMessage, ...]
    history: tuple[TurnMessage, ...]
    channel_account_id: str = ""
    run_key: str = ""  # unique per agent run ("notify once per run" dedupes on it)

    @property
    def batch_span_ms(self) -> int:
        if not self.batch:
            return 0
        return int((self.batch[-1].created_at - self.batch[0].created_at).total_seconds() * 1000)

    @property
    def batch_text(self) -> str:
        return "\n".join(m.text for m in self.batch)
