"""Voice notes to text, through the model gateway (audio input to a multimodal model).

The ``transcription`` slot is used when configured, else ``chat``. The prompt carries context a
human transcriber would want: the business's name, the language the customer is likely to speak
(what the conversation has shown wins over the business's default), the words of its trade, and
the last few lines of the conversation. The model answers through one ``transcript`` tool whose
arguments are the verdict; a missing or malformed verdict is a ``failed`` one, never a guess.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_ai import BinaryContent, ModelRequest, SystemPromptPart, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

from frontdesk.platform.models.gateway import ModelGateway

TRANSCRIPT_TOOL = "transcript"
MAX_TEXT_CHARS = 4000
MAX_SPANS = 8
MAX_SPAN_CHARS = 80


class TranscriptVerdict(BaseModel):
    """What the transcriber says about one voice note. Fields are capped after parsing."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    text: str = ""
    quality: Literal["ok", "uncertain", "failed"]
    unclear_spans: list[str] = Field(default_factory=list)
    detected_language: str | None = None
    note: str | None = None

    @field_validator("text")
    @classmethod
    def _cap_text(cls, value: str) -> str:
        return value.strip()[:MAX_TEXT_CHARS]

    @field_validator("unclear_spans")
    @classmethod
    def _cap_spans(cls, value: list[str]) -> list[str]:
        return [s.strip()[:MAX_SPAN_CHARS] for s in value if s.strip()][:MAX_SPANS]

    @field_validator("detected_language")
    @classmethod
    def _cap_language(cls, value: str | None) -> str | None:
        return value.strip()[:16] or None if value else None

    @field_validator("note")
    @classmethod
    def _cap_note(cls, value: str | None) -> str | None:
        return value.strip()[:200] or None if value else None

    def settled(self) -> TranscriptVerdict:
        """An "ok" or "uncertain" verdict without words is a failed one."""
        if self.quality != "failed" and not self.text:
            return self.model_copy(update={"quality": "failed", "note": self.note or "no words in the transcript"})
        return self


@dataclass(frozen=True)
class TranscriptionHints:
    business_name: str = ""
    language: str | None = None
    keywords: Sequence[str] = ()
    recent_lines: Sequence[str] = field(default_factory=tuple)


HintSource = Callable[[str], Awaitable[TranscriptionHints]]  # conversation id -> hints

INSTRUCTIONS = (
    "You transcribe a customer's voice note for a business's customer service. Write exactly what "
    "was said, in the language it was said; do not translate, answer or summarise. Call the "
    f"`{TRANSCRIPT_TOOL}` tool once with the verdict: quality 'ok' when every word is clear; "
    "'uncertain' when some words are unclear (list them in unclear_spans, as you heard them); "
    "'failed' when you cannot tell what was said (silence, noise, music, an unknown language)."
)


def transcript_tool() -> ToolDefinition:
    schema = TranscriptVerdict.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return ToolDefinition(name=TRANSCRIPT_TOOL, description="Report the transcript.", parameters_json_schema=schema)


def hint_text(hints: TranscriptionHints) -> str:
    lines = ["Transcribe the customer's voice note (attached)."]
    if hints.business_name:
        lines.append(f"Business: {hints.business_name}.")
    if hints.language:
        lines.append(f"The customer most likely speaks: {hints.language}.")
    if hints.keywords:
        lines.append("Words of this trade that may come up: " + ", ".join(list(hints.keywords)[:40]) + ".")
    if hints.recent_lines:
        lines.append("The conversation so far (latest last):")
        lines.extend(f"  {line[:200]}" for line in list(hints.recent_lines)[-4:])
    return "\n".join(lines)


class Transcriber:
    def __init__(self, gateway: ModelGateway, hints: HintSource) -> None:
        self._gateway = gateway
        self._hints = hints

    async def transcribe(self, conversation_id: str, audio: bytes, mime_type: str) -> TranscriptVerdict:
        """The verdict; a model failure (``ModelAPIError``) propagates so the job can retry."""
        slot = "transcription" if self._gateway.configured("transcription") else "chat"
        client = self._gateway.client(slot)
        hints = await self._hints(conversation_id)
        request = ModelRequest(
            parts=[
                SystemPromptPart(INSTRUCTIONS),
                UserPromptPart([hint_text(hints), BinaryContent(data=audio, media_type=_audio_type(mime_type))]),
            ]
        )
        params = ModelRequestParameters(function_tools=[transcript_tool()], allow_text_output=True)
        response = await client.request([request], params)
        return parse_verdict(response.parts)


def parse_verdict(parts: Sequence[object]) -> TranscriptVerdict:
    for part in parts:
        if isinstance(part, ToolCallPart) and part.tool_name == TRANSCRIPT_TOOL:
            return _validated(part.args_as_dict() if part.args else {})
    for part in parts:  # a model that wrote the verdict as JSON text instead of calling the tool
        if isinstance(part, TextPart):
            try:
                return _validated(json.loads(part.content))
            except ValueError:
                continue
    return TranscriptVerdict(quality="failed", note="the transcriber gave no verdict")


def _validated(data: object) -> TranscriptVerdict:
    try:
        return TranscriptVerdict.model_validate(data).settled()
    except ValidationError:
        return TranscriptVerdict(quality="failed", note="the transcriber's verdict was malformed")


def _audio_type(mime_type: str) -> str:
    """Platforms send ``audio/ogg; codecs=opus``; model APIs want the bare type."""
    bare = mime_type.split(";")[0].strip().lower()
    return bare if bare.startswith("audio/") else "audio/ogg"


def transcript_content(verdict: TranscriptVerdict, caption: str = "") -> str:
    """What the model reads for a transcribed voice note."""
    if verdict.quality == "failed":
        head = "[voice note that could not be understood]"
        return f"{head} {caption}".strip()
    if verdict.quality == "uncertain" and verdict.unclear_spans:
        spans = ", ".join(f"«{s}»" for s in verdict.unclear_spans)
        head = f"[voice note, partly unclear: {spans} — confirm these words with the customer before acting on them]"
    else:
        head = "[voice note]"
    return " ".join(p for p in (head, verdict.text, caption) if p)
