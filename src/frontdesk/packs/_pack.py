"""What a business pack hands the composition root: tools, their policies, router lexicons,
the default identity policy and a playbook. Packs never import ingestion or reasoning; the root
turns this plain data into a router and a catalog."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frontdesk.capabilities.policy import ToolPolicy
from frontdesk.capabilities.search import Document, IndexReport, SearchIndex
from frontdesk.capabilities.tools import Tool
from frontdesk.platform.clock import Clock
from frontdesk.platform.store.engine import Database


@dataclass(frozen=True)
class PackDeps:
    db: Database
    clock: Clock
    media_base_url: str  # absolute URL under which ``Pack.media_dir`` is served
    # The catalog search index (lexical, plus vectors when the ``embeddings`` slot is set). None:
    # tools search their shipped data in memory (unit tests that need no database index).
    search: SearchIndex | None = None


@dataclass(frozen=True)
class Pack:
    name: str
    business_name: str
    build_tools: Callable[[PackDeps], list[Tool]]
    policies: Mapping[str, ToolPolicy]
    discovery_domains: frozenset[str]
    # language -> signal -> regular expressions (matched case-insensitively)
    lexicons: Mapping[str, Mapping[str, list[str]]]
    # entity id -> words a customer uses for it (router: "an item is in context")
    item_keywords: Mapping[str, list[str]]
    default_policy: Mapping[str, Any]
    playbook: str
    media_dir: Path
    # language -> the polite hold message shipped when a reply cannot be verified
    fallback_texts: Mapping[str, str]
    # Said when a voice note could not be understood at all: ask the customer to type it.
    voice_failed_texts: Mapping[str, str] = field(default_factory=dict)
    # Search collections the pack ships (collection -> its documents): indexed at start-up.
    search_documents: Mapping[str, Callable[[], Sequence[Document]]] = field(default_factory=dict)
    # The playbook a small model reads (``chat_prompt_style`` compact); None: ``playbook``.
    compact_playbook: str | None = None

    async def sync_search(self, index: SearchIndex) -> dict[str, IndexReport]:
        """Index the pack's search collections (start-up): unchanged documents cost one read."""
        return {name: await index.sync(name, documents()) for name, documents in self.search_documents.items()}
