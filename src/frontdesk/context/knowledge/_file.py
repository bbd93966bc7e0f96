"""Reading a ``knowledge.json`` file: JSON, then pydantic, then checks that need today's date.

Every problem names the file and the snippet (by id, or by position when the id itself is
missing or bad), because the person fixing it edits JSON by hand.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator
from pydantic_core import ErrorDetails

from frontdesk.context.knowledge.snippet import DEFAULT_REVIEW_DAYS, Snippet
from frontdesk.errors import ConfigError

# A reviewer a few time zones ahead of the server may date a review "tomorrow" in server time.
FUTURE_TOLERANCE = timedelta(days=1)

Name = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=40)]


class _SnippetModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")
    domains: list[Name] = Field(min_length=1, max_length=10)
    actions: list[Name] = Field(default=[], max_length=20)
    text: str = Field(min_length=1, max_length=1200)
    source: str = Field(min_length=1, max_length=300)
    owner: str = Field(min_length=1, max_length=120)
    reviewed_at: date
    version: StrictInt = Field(ge=1)
    review_days: StrictInt = Field(default=DEFAULT_REVIEW_DAYS, ge=1, le=730)

    @field_validator("text")
    @classmethod
    def _one_paragraph(cls, text: str) -> str:
        # Rendered as one ``[id vN] text`` line: line breaks written for readability collapse.
        return " ".join(text.split())


class _FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    snippets: list[_SnippetModel]


def parse_snippets(text: str, origin: str, today: date) -> list[Snippet]:
    """The snippets of a knowledge file's text; ``ConfigError`` listing every problem found."""
    try:
        raw: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"knowledge file {origin} is not valid JSON: {exc}") from None
    try:
        parsed = _FileModel.model_validate(raw)
    except ValidationError as exc:
        problems = [_describe(error, raw) for error in exc.errors()]
        raise ConfigError(_report(origin, problems), details=problems) from None
    problems = [
        f"snippet {item.id!r}: reviewed_at {item.reviewed_at} is in the future (today is {today})"
        for item in parsed.snippets
        if item.reviewed_at > today + FUTURE_TOLERANCE
    ]
    if problems:
        raise ConfigError(_report(origin, problems), details=problems)
    return [
        Snippet(
            id=item.id,
            domains=frozenset(item.domains),
            actions=frozenset(item.actions),
            text=item.text,
            source=item.source,
            owner=item.owner,
            reviewed_at=item.reviewed_at,
            version=item.version,
            review_days=item.review_days,
        )
        for item in parsed.snippets
    ]


def _report(origin: str, problems: list[str]) -> str:
    return f"knowledge file {origin} is invalid:\n" + "\n".join(f"  - {problem}" for problem in problems)


def _describe(error: ErrorDetails, raw: Any) -> str:
    location = error["loc"]
    if len(location) >= 2 and location[0] == "snippets" and isinstance(location[1], int):
        where, field = _snippet_name(raw, location[1]), ".".join(str(part) for part in location[2:])
    else:
        where, field = "file", ".".join(str(part) for part in location)
    if error["type"] == "extra_forbidden":
        return f"{where}: unknown field {field!r}"
    if error["type"] == "missing":
        return f"{where}: missing field {field!r}"
    return f"{where}: {field or 'value'}: {error['msg']}"


def _snippet_name(raw: Any, index: int) -> str:
    item = raw["snippets"][index]
    if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"].strip():
        return f"snippet {item['id'].strip()!r}"
    return f"snippet #{index + 1} (no usable id)"
