"""The knowledge registry: versioned, reviewed snippets about how a business works, injected into
a turn's prompt by routed domain and action (never all at once). See docs/knowledge.md."""

from frontdesk.context.knowledge.registry import (
    KNOWLEDGE_FILE,
    MAX_SNIPPET_TOKENS,
    NO_KNOWLEDGE_INTENTS,
    KnowledgeRegistry,
    load_pack_knowledge,
)
from frontdesk.context.knowledge.snippet import DEFAULT_REVIEW_DAYS, Snippet

__all__ = [
    "DEFAULT_REVIEW_DAYS",
    "KNOWLEDGE_FILE",
    "MAX_SNIPPET_TOKENS",
    "NO_KNOWLEDGE_INTENTS",
    "KnowledgeRegistry",
    "Snippet",
    "load_pack_knowledge",
]
