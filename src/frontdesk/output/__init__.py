"""Output: the reply contract, staging replies with receipts, delivering through renderers."""

from frontdesk.output.blocks import Block, ImageGroupBlock, ReplyPayload, TextBlock, text_blocks
from frontdesk.output.delivery import Deliverer, StagedReply
from frontdesk.output.rendering import DeliveryTarget, PlannedPart, Renderer, SentPart, split_text

__all__ = [
    "Block",
    "Deliverer",
    "DeliveryTarget",
    "ImageGroupBlock",
    "PlannedPart",
    "Renderer",
    "ReplyPayload",
    "SentPart",
    "StagedReply",
    "TextBlock",
    "split_text",
    "text_blocks",
]
