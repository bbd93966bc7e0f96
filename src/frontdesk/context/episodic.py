"""Episodic memory: a utility model's running summary of a conversation.

It is refreshed by a background job every few assistant replies (or when it is stale), never on
the reply's path. Whatever the model returns is parsed leniently and then hard-capped field by
field (ARCHITECTURE.md §4), so a verbose model cannot bloat every later prompt; service names
that look like ids are dropped (ids only ever come from retrieval tools).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

CAPS = {
    "summary_text": 900,
    "last_intent": 80,
    "contact_preference": 120,
    "unresolved_question": 240,
    "next_action": 180,
    "preferred_language": 16,
}
MAX_SERVICE_NAMES = 12
MAX_SERVICE_NAME_CHARS = 80
# Ids look like "business-cards", "9b2f0c1de4" or "task_3f9c0a1b"; a customer's "t-shirts" keeps
# its one-letter part and stays a name.
_ID_LIKE = re.compile(r"^(?:[a-z0-9]{3,}(?:[-_][a-z0-9]{3,})+|[0-9a-f]{8,}|[A-Za-z]+_[A-Za-z0-9]{6,})$")


def _clip(value: str, limit: int) -> str:
    value = " ".join(value.split())
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


class EpisodicSnapshot(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    summary_text: str = ""
    preferred_language: str = ""
    last_intent: str = ""
    interested_service_names: list[str] = []
    contact_preference: str = ""
    unresolved_question: str = ""
    next_action: str = ""
    turn_count: int = 0

    @field_validator(*CAPS, mode="before")
    @classmethod
    def _cap_text(cls, value: Any, info: Any) -> str:
        if value is None:
            return ""
        return _clip(str(value), CAPS[info.field_name])

    @field_validator("interested_service_names", mode="before")
    @classmethod
    def _names_not_ids(cls, value: Any) -> list[str]:
        if not isinstance(value, list):
            value = [value] if isinstance(value, str) and value else []
        names: list[str] = []
        for item in value:
            name = _clip(str(item), MAX_SERVICE_NAME_CHARS)
            if name and not _ID_LIKE.match(name) and name not in names:
                names.append(name)
        return names[:MAX_SERVICE_NAMES]

    @field_validator("turn_count", mode="before")
    @classmethod
    def _count(cls, value: Any) -> int:
        try:
            return max(0, int(value))
        except (TypeError, ValueError):
            return 0

    def lines(self) -> list[str]:
        """The snapshot as the prompt's tail shows it (empty fields left out)."""
        fields = [
            ("Summary", self.summary_text),
            ("Language", self.preferred_language),
            ("Last intent", self.last_intent),
            ("Interested in", ", ".join(self.interested_service_names)),
            ("Contact preference", self.contact_preference),
            ("Unresolved question", self.unresolved_question),
            ("Next action", self.next_action),
        ]
        return [f"{label}: {value}" for label, value in fields if value]


@dataclass(frozen=True)
class EpisodicCadence:
    every_replies: int = 4
    stale_after: timedelta = timedelta(hours=12)

    def due(self, replies_total: int, replies_covered: int, updated_at: datetime | None, now: datetime) -> bool:
        """Whether a refresh is due after a reply: N new replies, or any new reply on a stale one."""
        new = replies_total - replies_covered
        if new <= 0:
            return False
        if new >= self.every_replies:
            return True
        return updated_at is not None and now - updated_at >= self.stale_after
