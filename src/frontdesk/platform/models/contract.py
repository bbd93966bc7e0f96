"""Names shared by the generation loop and model clients that constrain their output."""

from __future__ import annotations

# The terminal tool: a reply reaches the customer only through a call of it.
REPLY_TOOL = "reply"
# Metadata on the reply tool's definition: this turn asks for something a tool must give or do, so
# a client that can (``local:``) makes the first step a tool call.
TOOL_FIRST = "tool_first"
# Metadata on the reply tool's definition: the tools the first step should choose from (the
# router's reading of the turn: a person asked for -> the hand-over).
FIRST_STEP = "first_step"
# Metadata on the reply tool's definition: the JSON schema of its arguments with every rule written
# out (pydantic's), holding only what could pass the verification gate at this step (no image block
# before a tool returned a photo). A client that constrains its output (``local:``) generates under
# it; the tool's own schema, the lean one hosted models see and cache, stays the same throughout.
GATE_SCHEMA = "gate_schema"
# Metadata on the reply tool's definition: the words the reply starts with, in the customer's
# language (``context.identity.REPLY_OPENINGS``). A client that constrains its output writes them
# first; the model goes on in that language.
REPLY_OPENING = "reply_opening"
