"""Capabilities: typed tool contracts, the fail-closed policy catalog and per-turn bundles."""

from frontdesk.capabilities.policy import (
    Bundle,
    Operation,
    Risk,
    RoutingDecision,
    ToolPolicy,
    ToolPolicyCatalog,
)
from frontdesk.capabilities.tools import Tool, ToolContext, ToolEvidence, ToolFailure, ToolKind, ToolResult

__all__ = [
    "Bundle",
    "Operation",
    "Risk",
    "RoutingDecision",
    "Tool",
    "ToolContext",
    "ToolEvidence",
    "ToolFailure",
    "ToolKind",
    "ToolPolicy",
    "ToolPolicyCatalog",
    "ToolResult",
]
