"""What the console needs from the composition root, as small typed pieces."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from frontdesk.output.delivery import Deliverer
from frontdesk.platform.clock import Clock
from frontdesk.platform.media import MediaStore
from frontdesk.platform.signals import ConversationSignals
from frontdesk.platform.store.engine import Database
from frontdesk.platform.vault import Vault
from frontdesk.settings import Settings


class TenantShape(Protocol):
    """What one tenant's own data adds to its prompt (``reasoning.agent.TenantTurnView`` fits)."""

    @property
    def playbook_lines(self) -> str: ...

    @property
    def policy_defaults(self) -> Mapping[str, Any]: ...


class PolicySource(Protocol):
    """A business pack as far as identity & policy go (``reasoning.agent.AgentPack`` fits)."""

    @property
    def default_policy(self) -> Mapping[str, Any]: ...

    @property
    def playbook(self) -> str: ...

    @property
    def compact_playbook(self) -> str | None: ...

    @property
    def for_tenant(self) -> Callable[[str, int | None], Awaitable[TenantShape]] | None: ...


@dataclass(frozen=True)
class ConsoleConfig:
    secure_cookies: bool
    session_ttl_s: float
    login_max_attempts: int
    login_window_s: float
    login_max_attempts_per_ip: int = 30
    outbound_allow: tuple[str, ...] = ()  # the setting: webhook URLs an owner may point at private hosts

    @classmethod
    def from_settings(cls, settings: Settings) -> ConsoleConfig:
        """From ``frontdesk.settings.Settings``: cookies are secure unless the public URL is plain
        http (or unset: local development on http://host:port)."""
        secure = settings.console_secure_cookies
        if secure is None:
            public = settings.public_url or ""
            secure = public.startswith("https://")
        return cls(
            secure_cookies=bool(secure),
            session_ttl_s=float(settings.console_session_ttl_s),
            login_max_attempts=int(settings.console_login_max_attempts),
            login_window_s=float(settings.console_login_window_s),
            login_max_attempts_per_ip=int(settings.console_login_max_attempts_per_ip),
            outbound_allow=tuple(settings.outbound_allow),
        )


@dataclass(frozen=True)
class ConsoleDeps:
    db: Database
    clock: Clock
    signals: ConversationSignals
    deliverer: Deliverer
    config: ConsoleConfig
    packs: Mapping[str, PolicySource]
    # Optional (the configure pages fall back to ``request.app.state.runtime``, which ``app.py``
    # sets): the runtime's vault (``channel_deps.accounts.vault``), its settings (model slots),
    # and its media store (catalog photo uploads).
    vault: Vault | None = None
    settings: Settings | None = None
    media: MediaStore | None = None
    # The chat model reads the compact prompt (``Runtime.compact_prompt``): the prefix hash shown
    # is the one the agent will record.
    compact_prompt: bool = False
    # Plays a scenario file saved from a thread before it is kept (``evals/trial.py``, wired by the
    # app): the file as written and the file with the reply that was sent -> why it would not do
    # its job, or "". Unset: files are kept unplayed.
    scenario_trial: Callable[[str, str], Awaitable[str]] | None = None
