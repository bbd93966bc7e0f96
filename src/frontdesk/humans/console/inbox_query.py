"""The inbox's query string (view, channel, AI, search), validated at the edge into an
``InboxFilter``: the list page, its live stream and the thread page (which shows the list beside
the thread) take it as one dependency."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from frontdesk.humans.console.inbox import VIEWS, InboxFilter

MAX_QUERY_CHARS = 100


def _inbox_filter(
    view: Annotated[str, Query(pattern="^(" + "|".join(VIEWS) + ")?$")] = "",
    channel: Annotated[str, Query(max_length=32, pattern=r"^[a-z]*$")] = "",
    ai: Annotated[str, Query(pattern=r"^(|on|off)$")] = "",
    q: Annotated[str, Query(max_length=MAX_QUERY_CHARS)] = "",
    attention: Annotated[str, Query(pattern=r"^(|1)$")] = "",
) -> InboxFilter:
    # ``attention=1`` is the old list's checkbox: bookmarks of it still work.
    return InboxFilter(view=view or ("attention" if attention else "all"), channel=channel, ai=ai, q=q.strip())


Wanted = Annotated[InboxFilter, Depends(_inbox_filter)]
