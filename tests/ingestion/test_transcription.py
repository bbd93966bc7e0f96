"""The transcriber's verdict: parsed, capped, and never a guess when the model says nothing usable."""

from __future__ import annotations

from pydantic_ai import ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart

from frontdesk.ingestion.transcription import (
    Transcriber,
    TranscriptionHints,
    TranscriptVerdict,
    hint_text,
    parse_verdict,
    transcript_content,
)
from frontdesk.platform.models.gateway import ModelGateway


def test_a_tool_call_verdict_is_parsed_and_capped():
    args = {"text": " hello ", "quality": "uncertain", "unclear_spans": ["x" * 200, " ", "b"] + ["c"] * 20}
    verdict = parse_verdict([ToolCallPart("transcript", args)])
    assert verdict.text == "hello"
    assert verdict.unclear_spans[0] == "x" * 80
    assert len(verdict.unclear_spans) == 8


def test_a_verdict_written_as_json_text_is_accepted():
    verdict = parse_verdict([TextPart('{"text": "hi", "quality": "ok"}')])
    assert (verdict.text, verdict.quality) == ("hi", "ok")


def test_no_verdict_a_malformed_one_or_an_empty_ok_is_failed():
    assert parse_verdict([TextPart("I think they said hello")]).quality == "failed"
    assert parse_verdict([ToolCallPart("transcript", {"quality": "great"})]).quality == "failed"
    assert parse_verdict([ToolCallPart("transcript", {"quality": "ok", "text": "  "})]).quality == "failed"


def test_what_the_model_reads_for_each_quality():
    ok = TranscriptVerdict(text="two boxes", quality="ok")
    unsure = TranscriptVerdict(text="two boxes of 500", quality="uncertain", unclear_spans=["500"])
    failed = TranscriptVerdict(quality="failed")
    assert transcript_content(ok) == "[voice note] two boxes"
    assert transcript_content(unsure).startswith("[voice note, partly unclear: «500» — confirm these words")
    assert transcript_content(failed, "caption") == "[voice note that could not be understood] caption"


async def test_the_request_carries_the_audio_and_the_context_hints():
    seen = {}

    class Recording:
        name = "recording"

        async def request(self, messages, params):
            seen["messages"], seen["params"] = messages, params
            return ModelResponse(parts=[ToolCallPart("transcript", {"text": "hola", "quality": "ok"})])

    async def hints(conversation_id):
        return TranscriptionHints(
            "Inkwell Print", "Spanish", ["tarjetas", "folletos"], ["user: hola", "assistant: ¡Hola!"]
        )

    gateway = ModelGateway.with_clients({"chat": Recording()})
    verdict = await Transcriber(gateway, hints).transcribe("conv", b"OggS...", "audio/ogg; codecs=opus")

    assert verdict.text == "hola"
    (request,) = seen["messages"]
    assert isinstance(request, ModelRequest)
    prompt = next(p for p in request.parts if isinstance(p, UserPromptPart)).content
    assert "Inkwell Print" in prompt[0]
    assert "Spanish" in prompt[0]
    assert "tarjetas" in prompt[0]
    assert (prompt[1].data, prompt[1].media_type) == (b"OggS...", "audio/ogg")
    assert [t.name for t in seen["params"].function_tools] == ["transcript"]


async def test_the_transcription_slot_is_used_when_configured():
    used = []

    def client(name):
        class Client:
            async def request(self, messages, params):
                used.append(name)
                return ModelResponse(parts=[ToolCallPart("transcript", {"text": "x", "quality": "ok"})])

        Client.name = name
        return Client()

    async def hints(_):
        return TranscriptionHints()

    gateway = ModelGateway.with_clients({"chat": client("chat"), "transcription": client("transcription")})
    await Transcriber(gateway, hints).transcribe("c", b"a", "audio/ogg")
    assert used == ["transcription"]


def test_hints_keep_only_the_last_four_lines():
    text = hint_text(TranscriptionHints(recent_lines=[f"line {i}" for i in range(10)]))
    assert "line 5" not in text
    assert "line 9" in text
