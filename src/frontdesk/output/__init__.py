"""Output: the reply contract, staging replies with receipts, delivering through renderers."""

from frontdesk.output.blocks import Block, ImageGroupBlock, ReplyPayload, TextBlock, text_blocks
from frontdesk.output.delivery import (
    Deliverer,
    DeliveryTarget,
    Renderer,
    RenderResult,
    StagedReply,
    stage_reply,
)

__all__ = [
    "Block",
    "Deliverer",
    "DeliveryTarget",
    "ImageGroupBlock",
    "RenderResult",
    "Renderer",
    "ReplyPayload",
    "StagedReply",
    "TextBlock",
    "stage_reply",
    "text_blocks",
]
