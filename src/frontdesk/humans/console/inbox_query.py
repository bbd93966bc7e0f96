"""The inbox's query string (view, channel, AI, search), validated at the edge: the list page,
its live stream and the thread page (which shows the list beside the thread) read the same."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from frontdesk.humans.console.inbox import VIEWS, InboxFilter

MAX_QUERY_CHARS = 100

ViewQuery = Annotated[str, Query(pattern="^(" + "|".join(VIEWS) + ")?$")]
ChannelQuery = Annotated[str, Query(max_length=32, pattern=r"^[a-z]*$")]
AiQuery = Annotated[str, Query(pattern=r"^(|on|off)$")]
SearchQuery = Annotated[str, Query(max_length=MAX_QUERY_CHARS)]


def inbox_filter(view: str, channel: str, ai: str, q: str, attention: str = "") -> InboxFilter:
    # ``attention=1`` is the old list's checkbox: bookmarks of it still work.
    return InboxFilter(view=view or ("attention" if attention else "all"), channel=channel, ai=ai, q=q.strip())
