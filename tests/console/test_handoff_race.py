"""The AI must never talk over a human, including a turn that is already generating when the
operator acts. A reply pre-empts it (the operator's reply marks the customer rows answered, so the
turn's compare-and-set on ``processed_at`` fails and its reply is discarded); the bare AI switch is
caught by the assembler's re-check of ``ai_enabled`` before it stages the reply (the turn is
traced as ``suppressed``)."""

from __future__ import annotations

import asyncio

from console_kit import build_console, client, csrf_of, sign_in

from harness import replies, traces

SLOW = {"name": "slow", "default": [{"reply": "AI: {user_text}", "delay_ms": 1500}]}


async def _while_a_turn_generates(console, action) -> None:
    turn = asyncio.create_task(console.drain())
    await asyncio.sleep(0.5)  # the turn has collected the batch and waits on the model
    assert not turn.done()
    await action()
    await turn


async def test_operator_reply_during_a_running_turn_discards_the_ai_reply(db):
    console = await build_console(db, SLOW)
    conversation_id = await console.customer_says("demo-webchat", "race1", "anyone?")
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http)

        async def reply() -> None:
            url = f"/console/conversations/{conversation_id}/reply"
            assert (await http.post(url, data={"csrf": token, "text": "Ana here."})).status_code == 303

        await _while_a_turn_generates(console, reply)

    assert [m.meta.get("origin") for m in await replies(db, conversation_id)] == ["operator"]


async def test_ai_switched_off_during_a_running_turn_sends_nothing(db):
    console = await build_console(db, SLOW)
    conversation_id = await console.customer_says("demo-webchat", "race2", "anyone?")
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http)

        async def switch_off() -> None:
            url = f"/console/conversations/{conversation_id}/ai"
            assert (await http.post(url, data={"csrf": token, "enabled": "false"})).status_code == 303

        await _while_a_turn_generates(console, switch_off)

    assert await replies(db, conversation_id) == []
    assert [t.outcome for t in await traces(db)][-1] == "suppressed"
