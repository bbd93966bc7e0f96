"""Names shared by the generation loop and model clients that constrain their output."""

from __future__ import annotations

# The terminal tool: a reply reaches the customer only through a call of it.
REPLY_TOOL = "reply"
# Metadata on the reply tool's definition: this turn asks for something a tool must give or do, so
# a client that can (``local:``) makes the first step a tool call.
TOOL_FIRST = "tool_first"
