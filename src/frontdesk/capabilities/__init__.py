"""Capabilities: typed tool contracts the generation loop may offer."""

from frontdesk.capabilities.tools import Tool, ToolContext, ToolKind

__all__ = ["Tool", "ToolContext", "ToolKind"]
