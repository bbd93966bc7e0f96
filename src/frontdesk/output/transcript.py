"""Reading back what a conversation looks like to its customer: messages, blocks, receipts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from frontdesk.output.blocks import Block, TextBlock, blocks_adapter
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Message, Receipt


@dataclass(frozen=True)
class TranscriptEntry:
    id: int
    role: str
    blocks: list[Block]
    created_at: datetime
    receipt: dict[str, Any] | None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role,
            "blocks": [b.model_dump(mode="json") for b in self.blocks],
            "created_at": self.created_at.isoformat(),
            "receipt": self.receipt,
        }


async def read_transcript(
    db: Database,
    conversation_id: str,
    *,
    after_id: int = 0,
    roles: tuple[str, ...] = ("user", "assistant"),
    limit: int = 200,
) -> list[TranscriptEntry]:
    """The newest ``limit`` messages after ``after_id``, oldest first."""
    async with db.read() as session:
        rows = (
            await session.execute(
                select(Message, Receipt)
                .outerjoin(Receipt, Receipt.message_id == Message.id)
                .where(Message.conversation_id == conversation_id, Message.id > after_id, Message.role.in_(roles))
                .order_by(Message.id.desc())
                .limit(limit)
            )
        ).all()
    return [_entry(message, receipt) for message, receipt in reversed(rows)]


async def latest_message_id(db: Database, conversation_id: str) -> int:
    async with db.read() as session:
        value = await session.scalar(
            select(Message.id).where(Message.conversation_id == conversation_id).order_by(Message.id.desc()).limit(1)
        )
    return int(value or 0)


def _entry(message: Message, receipt: Receipt | None) -> TranscriptEntry:
    if message.content_type == "blocks":
        blocks = list(blocks_adapter.validate_json(message.content))
    else:
        # A customer's message is shown as sent: it is not bound by the reply contract's limits.
        blocks = [TextBlock.model_construct(type="text", text=message.content or f"[{message.content_type}]")]
    return TranscriptEntry(
        id=message.id,
        role=message.role,
        blocks=blocks,
        created_at=message.created_at,
        receipt=None
        if receipt is None
        else {
            "status": receipt.status,
            "parts_total": receipt.parts_total,
            "parts_sent": receipt.parts_sent,
            "errors": receipt.errors,
            "finished_at": receipt.finished_at.isoformat() if receipt.finished_at else None,
        },
    )


def message_text(message: Message) -> str:
    """What a stored message reads as, for the model and for people (a reply's blocks as text,
    its images as a labelled count)."""
    if message.content_type != "blocks":
        return message.content
    parts: list[str] = []
    for block in blocks_adapter.validate_json(message.content):
        if block.type == "text":
            parts.append(block.text)
        else:
            parts.append(f"[{len(block.urls)} image(s)" + (f": {block.caption}]" if block.caption else "]"))
    return "\n\n".join(parts)
