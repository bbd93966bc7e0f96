"""The tool contract: a pydantic input model, a handler, a contract kind, and evidence.

A handler returns a ``ToolResult``: what the model reads (``output``), what the call proved
(``evidence``, the verification gate's raw material) and a compact ledger summary. Handlers
report a clean, model-readable failure by raising ``ToolFailure``; anything else they raise is
logged in the trace and the model is told only that the tool failed.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel
from pydantic_ai import ToolDefinition

from frontdesk.capabilities.lean_schema import nullable_as_type

if TYPE_CHECKING:
    from frontdesk.capabilities.policy import RoutingDecision

ToolKind = Literal["retrieval", "action", "handoff"]
# What a field bound to the conversation may hold (``reasoning.binding``): a phone number or an
# e-mail address the customer gave, an id of the business's items.
BindKind = Literal["phone", "email", "item"]


class ToolFailure(Exception):
    """A handler's expected failure ("no service called that"), told to the model as is."""


@dataclass(frozen=True)
class ToolEvidence:
    """What one tool call proved, in terms the verification gate checks claims against.

    ``references``: ids of entities the call returned (citable by reference claims).
    ``prices``: price texts of returned rows (the price companion rule's sources).
    ``prices_by_reference``: the same price texts keyed by the entity they belong to, so a reply
    that declares which entities it presents may quote only their prices.
    ``photos``: photo id -> URL of photos returned (the image companion rule's sources).
    ``captions``: photo URL -> what the photo shows, as returned (a photo shown as another is refused).
    ``facts``: named blocks of information loaded, e.g. ``business_info``.
    ``events``: side effects that really happened, as (event, reference) pairs.
    ``contacts``: phone numbers and e-mail addresses returned (the contact companion rule's sources).
    ``texts``: every value the call returned, as text (filled from the output when the ledger
    records the call): the closed-world rules look up addresses, links, percentages and times in it.
    ``schedule``: opening hours returned, by weekday (``mon`` ... ``sun``) and by ISO date for
    special days, as ``HH:MM-HH:MM`` ranges (none: closed).
    ``turnaround_days``: item id -> the days an order of it takes, as returned.
    ``minimums``: item id -> the smallest order of it, as returned.
    ``revision``: the tenant's business-data revision the call read (None: not the tenant's data).
    Once the owner changes that data, the tool ledger drops this evidence: a price quoted before an
    edit proves nothing after it.
    """

    references: frozenset[str] = frozenset()
    prices: tuple[str, ...] = ()
    prices_by_reference: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    photos: Mapping[str, str] = field(default_factory=dict)
    captions: Mapping[str, str] = field(default_factory=dict)
    facts: frozenset[str] = frozenset()
    events: tuple[tuple[str, str | None], ...] = ()
    contacts: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()
    schedule: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    turnaround_days: Mapping[str, int] = field(default_factory=dict)
    minimums: Mapping[str, int] = field(default_factory=dict)
    revision: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            **({"revision": self.revision} if self.revision is not None else {}),
            "references": sorted(self.references),
            "prices": list(self.prices),
            "prices_by_reference": {k: list(v) for k, v in self.prices_by_reference.items()},
            "photos": dict(self.photos),
            **({"captions": dict(self.captions)} if self.captions else {}),
            "facts": sorted(self.facts),
            "events": [list(e) for e in self.events],
            "contacts": list(self.contacts),
            **({"texts": list(self.texts)} if self.texts else {}),
            **({"schedule": {k: list(v) for k, v in self.schedule.items()}} if self.schedule else {}),
            **({"turnaround_days": dict(self.turnaround_days)} if self.turnaround_days else {}),
            **({"minimums": dict(self.minimums)} if self.minimums else {}),
        }

    def visible_in(self, shown: str) -> ToolEvidence:
        """What is left of this evidence once the model saw only ``shown`` (a truncated result):
        ids, prices and photos that were cut out cannot be cited, since the model never read them.
        Facts and events stay: the block was loaded and the side effect happened either way."""
        return ToolEvidence(
            references=frozenset(r for r in self.references if r in shown),
            prices=tuple(p for p in self.prices if p in shown),
            prices_by_reference={
                ref: tuple(p for p in prices if p in shown)
                for ref, prices in self.prices_by_reference.items()
                if ref in shown
            },
            photos={photo: url for photo, url in self.photos.items() if photo in shown or url in shown},
            captions={url: caption for url, caption in self.captions.items() if url in shown and caption in shown},
            facts=self.facts,
            events=self.events,
            contacts=tuple(c for c in self.contacts if c in shown),
            texts=tuple(t for t in self.texts if t in shown or t.removesuffix("%") in shown),
            schedule={day: hours for day, hours in self.schedule.items() if all(h in shown for h in hours)},
            turnaround_days={ref: days for ref, days in self.turnaround_days.items() if ref in shown},
            minimums={ref: least for ref, least in self.minimums.items() if ref in shown},
            revision=self.revision,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolEvidence:
        return cls(
            references=frozenset(map(str, data.get("references", ()))),
            prices=tuple(map(str, data.get("prices", ()))),
            prices_by_reference={
                str(k): tuple(map(str, v)) for k, v in dict(data.get("prices_by_reference", {})).items()
            },
            photos={str(k): str(v) for k, v in dict(data.get("photos", {})).items()},
            captions={str(k): str(v) for k, v in dict(data.get("captions", {})).items()},
            facts=frozenset(map(str, data.get("facts", ()))),
            events=tuple((str(e[0]), None if e[1] is None else str(e[1])) for e in data.get("events", ())),
            contacts=tuple(map(str, data.get("contacts", ()))),
            texts=tuple(map(str, data.get("texts", ()))),
            schedule={str(k): tuple(map(str, v)) for k, v in dict(data.get("schedule", {})).items()},
            turnaround_days={str(k): int(v) for k, v in dict(data.get("turnaround_days", {})).items()},
            minimums={str(k): int(v) for k, v in dict(data.get("minimums", {})).items()},
            revision=int(data["revision"]) if data.get("revision") is not None else None,
        )


_PERCENT_KEY = re.compile(r"percent|pct|discount|rate", re.IGNORECASE)


def output_texts(output: Any) -> tuple[str, ...]:
    """Every string and number in a tool's output, in order, once each. Keys are not facts, but a
    number under a key that names a percentage is one written with its sign (``discount_value:
    15`` is "15%")."""
    found: dict[str, None] = {}

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                if isinstance(item, int | float) and not isinstance(item, bool) and _PERCENT_KEY.search(str(key)):
                    found[f"{item}%"] = None
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)
        elif isinstance(value, str | int | float) and not isinstance(value, bool) and str(value).strip():
            found[str(value)] = None

    walk(output)
    return tuple(found)


@dataclass(frozen=True)
class ToolResult:
    """A handler's answer. ``state_key``: a later result with the same tool name and key replaces
    this one in the tool ledger (None: the entry is never replaced, only aged out)."""

    output: Any
    evidence: ToolEvidence = field(default_factory=ToolEvidence)
    summary: Mapping[str, Any] | None = None
    state_key: str | None = None
    # Tools this result makes callable from the generation's next step (``find_tools``); the
    # catalog admitted them under the turn's rules before they got here.
    offers: tuple[Tool, ...] = ()
    # What the result tells the customer, in their language, written by the tool from its own data
    # ("Prices for Postcards: $55 / 250 …"): sent when the model's replies about it were refused
    # twice, instead of the hold message (and only if it passes the gate itself). None: no answer.
    answer: str | None = None


@dataclass(frozen=True)
class ToolContext:
    """What a handler may know about the turn it runs in."""

    tenant_id: str
    conversation_id: str
    channel_account_id: str = ""
    turn_key: str = ""  # unique per agent run: "once per run" side effects dedupe on it
    customer_language: str = "en"
    # How the router read the turn: what a tool search may offer depends on it (``find_tools``).
    decision: RoutingDecision | None = None
    # The customer's message(s) this turn: a tool may answer the part it is about first (the
    # hours of the weekday they named), for a model that reads a long result poorly.
    customer_message: str = ""


Handler = Callable[[Any, ToolContext], Awaitable[ToolResult | Any]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_model: type[BaseModel]
    handler: Handler
    kind: ToolKind = "retrieval"
    # A schema that is not generated from ``input_model``: an MCP server's own input schema
    # (``input_model`` then checks arguments against it).
    json_schema: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    # Fields bound to the conversation (``capabilities.binding``): field -> "phone", "email", "item".
    binds: Mapping[str, BindKind] = field(default_factory=dict, compare=False, repr=False)

    def definition(self) -> ToolDefinition:
        schema = compact_schema(self.json_schema) if self.json_schema is not None else _schema(self.input_model)
        return ToolDefinition(
            name=self.name,
            description=self.description,
            parameters_json_schema=copy.deepcopy(schema),  # a provider may edit its copy
        )


@cache
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    """Built once per input model: every turn asks for the definitions of its bundle."""
    schema: dict[str, Any] = compact_schema(model.model_json_schema())
    return schema


def compact_schema(schema: Any) -> Any:
    """A JSON schema without what only costs tokens, on every request that offers the tool:
    pydantic's generated ``title`` of every object and field (property names already say it; a
    property that is *called* ``title`` is kept), a ``default`` of null (``required`` already says
    the field may be left out), and an optional field's ``anyOf: [T, null]`` written as
    ``type: [T, "null"]``. What the schema accepts does not change."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    compact: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            compact[key] = {name: compact_schema(sub) for name, sub in value.items()}
        else:
            compact[key] = compact_schema(value)
    return nullable_as_type(compact)
