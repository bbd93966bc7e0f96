"""What a business pack hands the composition root: tools, their policies, router lexicons,
the default identity policy, a playbook, and what a tenant's own data adds to its turns. Packs
never import ingestion or reasoning; the root turns this plain data into a router and a catalog."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from frontdesk.capabilities.policy import ToolPolicy
from frontdesk.capabilities.search import SearchIndex
from frontdesk.capabilities.tools import Tool
from frontdesk.platform.clock import Clock
from frontdesk.platform.store.engine import Database


@dataclass(frozen=True)
class PackDeps:
    db: Database
    clock: Clock
    media_base_url: str  # absolute URL under which tenants' catalog photos are served
    # The catalog search index (lexical, plus vectors when the ``embeddings`` slot is set). None:
    # tools search their shipped data in memory (unit tests that need no database index).
    search: SearchIndex | None = None


@dataclass(frozen=True)
class TenantData:
    """What one tenant's own data adds to its turns, as of its data ``revision``."""

    revision: int
    # item id -> the words customers call it by (the router's "an item is in context")
    item_words: Mapping[str, list[str]]
    # appended to the pack's playbook (e.g. the catalog's ids and names)
    playbook_lines: str = ""
    # under the owner's policy edits (e.g. the profile's description as the business description)
    policy_defaults: Mapping[str, Any] = field(default_factory=dict)
    # language -> what a customer is told when a person will reply instead (the owner's words)
    hold_texts: Mapping[str, str] = field(default_factory=dict)
    # the languages its items are written in (the gate compares an offer's words only in those)
    data_languages: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Pack:
    name: str
    build_tools: Callable[[PackDeps], list[Tool]]
    policies: Mapping[str, ToolPolicy]
    discovery_domains: frozenset[str]
    # language -> signal -> regular expressions (matched case-insensitively)
    lexicons: Mapping[str, Mapping[str, list[str]]]
    default_policy: Mapping[str, Any]
    playbook: str
    # language -> the polite hold message shipped when a reply cannot be verified
    fallback_texts: Mapping[str, str]
    # Said when a voice note could not be understood at all: ask the customer to type it.
    voice_failed_texts: Mapping[str, str] = field(default_factory=dict)
    # event -> language -> the true outcome in the pack's words, said before the hold message
    # when the action happened but the reply about it was refused
    outcome_texts: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # event -> language -> the reply after it when the model's own was refused, a ``str.format``
    # template over the call's arguments and result (``reasoning.courtesy``), sent instead of the hold
    courtesy_texts: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # The playbook a small model reads (``chat_prompt_style`` compact); None: ``playbook``.
    compact_playbook: str | None = None
    # A tenant's own data for its turns (read at every turn; the root caches what it builds
    # from it by revision). None: the pack has no per-tenant data.
    tenant_data: Callable[[PackDeps, str], Awaitable[TenantData]] | None = None
