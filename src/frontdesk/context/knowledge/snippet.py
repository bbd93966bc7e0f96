"""One piece of reviewed business knowledge, as the registry and the prompt use it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

DEFAULT_REVIEW_DAYS = 180


@dataclass(frozen=True, kw_only=True)
class Snippet:
    """A short, reviewed fact about how the business works, offered to the model on matching turns.

    ``domains``: the routed domains it is about (at least one). ``actions``: the intents it is for;
    empty means any intent. ``source``: where the fact comes from (a policy document, a code path).
    ``owner``: who keeps it true. ``version`` goes up whenever the text's meaning changes, so a
    turn's trace says exactly which wording the model saw."""

    id: str
    domains: frozenset[str]
    actions: frozenset[str] = frozenset()
    text: str
    source: str
    owner: str
    reviewed_at: date
    version: int
    review_days: int = DEFAULT_REVIEW_DAYS

    @property
    def ref(self) -> str:
        """``id@version``: how traces name the snippet."""
        return f"{self.id}@{self.version}"

    @property
    def review_due(self) -> date:
        """The last day the review still covers."""
        return self.reviewed_at + timedelta(days=self.review_days)

    def days_overdue(self, today: date) -> int:
        return max(0, (today - self.review_due).days)

    def is_stale(self, today: date) -> bool:
        return today > self.review_due

    def line(self) -> str:
        """The snippet as the model sees it."""
        return f"[{self.id} v{self.version}] {self.text}"
