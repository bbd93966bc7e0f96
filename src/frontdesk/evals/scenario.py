"""Scenario files for ``frontdesk eval`` (docs/eval.md): a pack, a channel, a model, a sequence of
customer messages and what must be true after each turn. Parsed strictly: a typo in a key is an
error naming the file and the key, not a silently skipped check."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from frontdesk.context.identity import IdentityPolicy
from frontdesk.errors import ConfigError
from frontdesk.verification.claims import CLAIM_TYPES


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


class Expect(_Strict):
    route_intent: str | None = None
    route_domains: list[str] | None = None
    tools_called: list[str] = Field(default_factory=list)
    tools_not_called: list[str] = Field(default_factory=list)
    tools_refused: list[str] = Field(default_factory=list)
    tools_offered: list[str] = Field(default_factory=list)
    tools_not_offered: list[str] = Field(default_factory=list)
    reply_contains: list[str] = Field(default_factory=list)
    reply_not_contains: list[str] = Field(default_factory=list)
    claims_accepted: list[str] = Field(default_factory=list)
    claims_rejected: list[str] = Field(default_factory=list)
    outcome: Literal["replied", "salvaged", "fallback"] | None = None
    fallback: bool | None = None
    no_reply: bool = False
    images: int | None = None
    tasks_open: dict[Literal["follow_up", "handoff"], int] | None = None
    notifications: dict[str, int] | None = None
    ai_enabled: bool | None = None

    @field_validator("claims_accepted", "claims_rejected")
    @classmethod
    def _known_claims(cls, value: list[str], info: Any) -> list[str]:
        known = set(CLAIM_TYPES) | ({"price", "image"} if info.field_name == "claims_rejected" else set())
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown claim types {unknown} (known: {', '.join(sorted(known))})")
        return value


class ScenarioTurn(_Strict):
    """One agent turn: ``say`` is a message or a burst of messages sent together."""

    say: list[str] = Field(min_length=1)
    expect: Expect = Field(default_factory=Expect)

    @field_validator("say", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class Scenario(_Strict):
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    pack: str = "printshop"
    channel: Literal["webchat", "terminal"] = "webchat"
    model: ModelChoice
    policy: dict[str, Any] = Field(default_factory=dict)
    turns: list[ScenarioTurn] = Field(min_length=1)
    path: Path | None = Field(default=None, exclude=True)

    @field_validator("pack")
    @classmethod
    def _known_pack(cls, value: str) -> str:
        from frontdesk.packs import PACKS

        if value not in PACKS:
            raise ValueError(f"unknown pack {value!r} (known: {', '.join(PACKS)})")
        return value

    @field_validator("policy")
    @classmethod
    def _valid_policy(cls, value: dict[str, Any]) -> dict[str, Any]:
        IdentityPolicy.model_validate(value)  # the operator's fields: a typo is an error, not ignored
        return value


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
