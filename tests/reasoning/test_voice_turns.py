"""Voice notes in a turn: unclear words are confirmed before anything is saved; a note nobody
understood is answered without a model, in the customer's language."""

from __future__ import annotations

import pytest

from harness import make_runtime, message, reply_texts, traces

CAPTURE = "I'm Ann Lee, 0912 345 678, please save my order: 500 business cards, I confirm"
ANSWER = {"name": "a", "default": [{"reply": "Let me check that with you first."}]}


@pytest.mark.parametrize(("quality", "capture_offered"), [(None, True), ("ok", True), ("uncertain", False)])
async def test_an_uncertain_transcript_gets_read_only_tools(db, quality, capture_offered):
    runtime, accounts = await make_runtime(db, ANSWER, quiet_window_s=0)
    meta = {"transcript": {"quality": quality, "text": CAPTURE}} if quality else {}
    first = await runtime.ingestor.ingest(
        message(accounts.terminal_id, CAPTURE, content_type="voice" if quality else "text", metadata=meta)
    )
    await runtime.assembler.process(first.conversation_id, "w")

    (trace,) = await traces(db)
    assert ("capture_lead" in trace.tools_offered) is capture_offered
    assert ("voice_unconfirmed" in trace.route["signals"]) is (quality == "uncertain")


async def test_a_voice_note_nobody_understood_is_answered_without_the_model_in_the_customers_language(db):
    never = {"name": "never", "default": [{"error": "the model must not be called", "status": 500}]}
    runtime, accounts = await make_runtime(db, never, quiet_window_s=0)
    hola = await runtime.ingestor.ingest(message(accounts.terminal_id, "hola, ¿cuánto cuestan las tarjetas?"))
    await runtime.assembler.process(hola.conversation_id, "w")
    failed = {"transcript": {"quality": "failed"}}
    await runtime.ingestor.ingest(
        message(
            accounts.terminal_id, "[voice note that could not be understood]", content_type="voice", metadata=failed
        )
    )
    await runtime.assembler.process(hola.conversation_id, "w")

    assert (await reply_texts(db))[-1] == "Perdona, no pude entender tu mensaje de voz. ¿Podrías escribirlo?"
    assert (await traces(db))[-1].route["intent"] == "voice_not_understood"
