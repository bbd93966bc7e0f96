"""The reply contract (invariant 8's payload): 1 to 8 typed blocks, discriminated by ``type``.

This is the schema the model fills through the terminal ``reply`` tool, what the store keeps for
an assistant message, and what every renderer compiles to its platform's native calls.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, TypeAdapter, field_validator

MAX_BLOCKS = 8
MAX_TEXT_CHARS = 2000
MAX_IMAGES = 10
MAX_CAPTION_CHARS = 500


class _Block(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextBlock(_Block):
    """A paragraph of plain text shown to the customer."""

    type: Literal["text"] = "text"
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("text must not be blank")
        return value


class ImageGroupBlock(_Block):
    """One to ten images sent together, with an optional caption."""

    type: Literal["image_group"] = "image_group"
    urls: list[AnyHttpUrl] = Field(min_length=1, max_length=MAX_IMAGES)
    caption: str | None = Field(default=None, max_length=MAX_CAPTION_CHARS)


Block = Annotated[TextBlock | ImageGroupBlock, Field(discriminator="type")]


class ReplyPayload(_Block):
    """The terminal tool's arguments: the whole reply, as the customer will see it."""

    blocks: list[Block] = Field(min_length=1, max_length=MAX_BLOCKS)


blocks_adapter: TypeAdapter[list[Block]] = TypeAdapter(list[Block])


def text_blocks(text: str) -> list[Block]:
    """Split prose into text blocks at paragraph or sentence boundaries (salvage, fallbacks)."""
    chunks: list[str] = []
    rest = text.strip()
    while rest and len(chunks) < MAX_BLOCKS:
        if len(rest) <= MAX_TEXT_CHARS:
            chunks.append(rest)
            break
        window = rest[:MAX_TEXT_CHARS]
        cut = max(window.rfind("\n\n"), window.rfind(". ") + 1, window.rfind("\n"))
        if cut <= MAX_TEXT_CHARS // 2:
            cut = MAX_TEXT_CHARS
        chunks.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    return [TextBlock(text=c) for c in chunks if c]
