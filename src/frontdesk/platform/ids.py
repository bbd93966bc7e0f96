"""Typed ids, so passing a conversation id where a tenant id is expected is a type error."""

from __future__ import annotations

import secrets
from typing import NewType

TenantId = NewType("TenantId", str)
ChannelAccountId = NewType("ChannelAccountId", str)
ContactId = NewType("ContactId", str)
ConversationId = NewType("ConversationId", str)
MessageId = NewType("MessageId", int)
JobId = NewType("JobId", int)
TraceId = NewType("TraceId", int)


def new_id(prefix: str) -> str:
    """An opaque, unguessable id such as ``conv_3f9c0a1b2c4d5e6f7a8b``."""
    return f"{prefix}_{secrets.token_hex(10)}"
