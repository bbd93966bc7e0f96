"""Scenario files for ``frontdesk eval`` (docs/eval.md): a pack, a channel, a model, a sequence of
customer messages and what must be true after each turn. Parsed strictly: a typo in a key is an
error naming the file and the key, not a silently skipped check."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from frontdesk.context.identity import IdentityPolicy
from frontdesk.errors import ConfigError
from frontdesk.verification import COMPANION_RULES
from frontdesk.verification.claims import CLAIM_TYPES

# A Monday: 09:17 in New York (the demo print shop's time zone), 21:17 in Ho Chi Minh City (the
# bakery's), both open. Not on the hour, so no time a scenario writes ("until 9 tonight") is "now"
# by chance.
PLAYED_AT = datetime(2026, 11, 2, 14, 17, tzinfo=UTC)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelChoice(_Strict):
    """``script``: a script file (relative to the scenario file) or an inline script object;
    ``configured``: the chat slot from settings (FRONTDESK_MODEL_CHAT) — a real model."""

    script: str | dict[str, Any] | None = None
    configured: bool = False

    @model_validator(mode="after")
    def _one(self) -> ModelChoice:
        if (self.script is None) == (not self.configured):
            raise ValueError("model needs exactly one of `script` or `configured: true`")
        return self


class ServiceCheck(_Strict):
    """A read of the pack's own service after the turn (an MCP tool call), to prove what really
    changed there: ``path`` selects a part of the JSON result (dotted, list indexes as numbers);
    ``where`` keeps the items of that list whose fields equal these values, and ``count`` is how
    many there must be; ``contains`` / ``not_contains`` are fragments of the selection's JSON."""

    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)
    path: str = ""
    where: dict[str, Any] = Field(default_factory=dict)
    count: int | None = Field(default=None, ge=0)
    contains: list[str] = Field(default_factory=list)
    not_contains: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _checks_something(self) -> ServiceCheck:
        if self.where and self.count is None:
            raise ValueError("`where` selects items to count: give `count` too")
        if self.count is None and not self.contains and not self.not_contains:
            raise ValueError("a service check needs `count`, `contains` or `not_contains`")
        return self


class OfferedAmong(_Strict):
    """Of the tools in ``tools``, exactly those in ``exactly`` were offered (e.g. of every formula
    setter, only the chosen type's)."""

    tools: list[str] = Field(min_length=1)
    exactly: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _subset(self) -> OfferedAmong:
        strays = sorted(set(self.exactly) - set(self.tools))
        if strays:
            raise ValueError(f"`exactly` names tools that are not among `tools`: {strays}")
        return self


class Expect(_Strict):
    route_intent: str | None = None
    route_domains: list[str] | None = None
    route_phase: str | None = None
    side_query: bool | None = None
    tools_called: list[str] = Field(default_factory=list)
    tools_not_called: list[str] = Field(default_factory=list)
    tools_refused: list[str] = Field(default_factory=list)
    tools_failed: list[str] = Field(default_factory=list)
    tools_offered: list[str] = Field(default_factory=list)
    tools_not_offered: list[str] = Field(default_factory=list)
    offered_among: OfferedAmong | None = None
    write_tools_offered: bool | None = None
    reply_contains: list[str] = Field(default_factory=list)
    reply_not_contains: list[str] = Field(default_factory=list)
    claims_accepted: list[str] = Field(default_factory=list)
    claims_rejected: list[str] = Field(default_factory=list)
    outcome: Literal["replied", "salvaged", "fallback", "templated"] | None = None
    fallback: bool | None = None
    no_reply: bool = False
    images: int | None = None
    tasks_open: dict[Literal["follow_up", "handoff", "needs_reply"], int] | None = None
    notifications: dict[str, int] | None = None
    ai_enabled: bool | None = None
    draft_open: bool | None = None
    draft_phase: str | None = None
    service: list[ServiceCheck] = Field(default_factory=list)

    @field_validator("claims_accepted", "claims_rejected")
    @classmethod
    def _known_claims(cls, value: list[str], info: Any) -> list[str]:
        known = set(CLAIM_TYPES) | (set(COMPANION_RULES) if info.field_name == "claims_rejected" else set())
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown claim types {unknown} (known: {', '.join(sorted(known))})")
        return value

    def needs_service(self) -> bool:
        """Checks that only a pack with its own service (and staged flows) can answer."""
        return bool(self.service) or self.draft_open is not None or self.draft_phase is not None


class ScenarioTurn(_Strict):
    """One agent turn: ``say`` is a message or a burst of messages sent together. ``restart``: the
    process is replaced before this turn (a new runtime on the same databases), as after a deploy."""

    say: list[str] = Field(min_length=1)
    restart: bool = False
    expect: Expect = Field(default_factory=Expect)

    @field_validator("say", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        if isinstance(value, bool | int | float):
            # YAML reads a bare yes / no / on / off / 1 as a boolean or a number, not as text.
            raise ValueError(f'a message is text, got {value!r}: quote it in YAML (say: "yes")')
        return [value] if isinstance(value, str) else value


class Scenario(_Strict):
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    pack: str = "catalog"
    # The business the scenario talks to: a business file (relative to the scenario file), or its
    # content inline (a scenario saved from the console), imported into a fresh tenant speaking
    # ``languages``; unset: the demo print shop.
    business: str | dict[str, Any] | None = None
    languages: list[str] = Field(default_factory=lambda: ["en"], min_length=1)
    channel: Literal["webchat", "terminal"] = "webchat"
    model: ModelChoice
    policy: dict[str, Any] = Field(default_factory=dict)
    # When the conversation starts (time then passes as it does): a reply about lead times,
    # weekdays or opening hours reads the same whatever day the eval is run.
    at: AwareDatetime = PLAYED_AT
    turns: list[ScenarioTurn] = Field(min_length=1)
    path: Path | None = Field(default=None, exclude=True)

    @field_validator("pack")
    @classmethod
    def _known_pack(cls, value: str) -> str:
        from frontdesk.packs import MCP_PACKS, PACKS

        if value not in PACKS and value not in MCP_PACKS:
            raise ValueError(f"unknown pack {value!r} (known: {', '.join([*PACKS, *MCP_PACKS])})")
        return value

    @field_validator("policy")
    @classmethod
    def _valid_policy(cls, value: dict[str, Any]) -> dict[str, Any]:
        IdentityPolicy.model_validate(value)  # the operator's fields: a typo is an error, not ignored
        return value

    @model_validator(mode="after")
    def _service_checks_need_a_service(self) -> Scenario:
        from frontdesk.packs import MCP_PACKS

        if self.pack not in MCP_PACKS:
            turns = [n for n, t in enumerate(self.turns, start=1) if t.expect.needs_service()]
            if turns:
                raise ValueError(
                    f"turns {turns}: `service`, `draft_open` and `draft_phase` need a pack with its own "
                    f"service ({', '.join(MCP_PACKS)}), not {self.pack!r}"
                )
        return self


def load_scenario(path: Path) -> Scenario:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read scenario: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a scenario file holds one mapping (name, model, turns...)")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{path}: {problems}") from exc
    return scenario.model_copy(update={"path": path})


def scenario_files(targets: list[Path]) -> list[Path]:
    """Every ``*.yaml``/``*.yml`` file named or found (recursively) under the targets, sorted."""
    found: list[Path] = []
    for target in targets:
        if target.is_dir():
            found.extend(p for p in target.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        elif target.is_file():
            found.append(target)
        else:
            raise ConfigError(f"no such scenario file or folder: {target}")
    return sorted(dict.fromkeys(found))
