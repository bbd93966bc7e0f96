"""Monitor and hand-off: replies through the real deliverer, the AI pause, replays, SSE, policy."""

from __future__ import annotations

import json

import httpx2
from console_kit import build_console, client, csrf_of, listening, served, sign_in
from sqlalchemy import select

from frontdesk.platform.store.schema import Conversation, Message, Receipt, Tenant
from frontdesk.platform.store.schema_console import AuditEntry
from frontdesk.platform.store.schema_vault import Credential
from harness import replies, traces


async def _thread(db, conversation_id):
    async with db.read() as session:
        conversation = await session.get(Conversation, conversation_id)
        messages = list(
            await session.scalars(
                select(Message).where(Message.conversation_id == conversation_id).order_by(Message.id)
            )
        )
        receipts = {r.message_id: r for r in await session.scalars(select(Receipt))}
    return conversation, messages, receipts


async def test_operator_reply_is_delivered_with_a_receipt_and_pauses_the_ai(db):
    console = await build_console(db)
    conversation_id = await console.customer_says("demo-webchat", "c1", "can I talk to a person?")
    await console.drain()
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http, f"/console/conversations/{conversation_id}")
        sent = await http.post(
            f"/console/conversations/{conversation_id}/reply", data={"csrf": token, "text": "Hi, Ana here."}
        )
        page = await http.get(sent.headers["location"])

    conversation, messages, receipts = await _thread(db, conversation_id)
    operator_message = messages[-1]
    assert sent.status_code == 303
    assert conversation.ai_enabled is False
    assert operator_message.meta["origin"] == "operator"
    assert json.loads(operator_message.content) == [{"type": "text", "text": "Hi, Ana here."}]
    assert receipts[operator_message.id].status == "sent"
    assert "Reply sent. The AI is paused on this thread." in page.text
    assert "AI paused: a person has this thread" in page.text


async def test_ai_stays_silent_on_a_thread_after_an_operator_replies(db):
    console = await build_console(db)
    conversation_id = await console.customer_says("demo-webchat", "c2", "hello")
    await console.drain()
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http)
        await http.post(f"/console/conversations/{conversation_id}/reply", data={"csrf": token, "text": "On it."})
    await console.customer_says("demo-webchat", "c2", "thanks, and one more thing")
    await console.drain()

    texts = [m.content for m in await replies(db, conversation_id)]
    assert len(texts) == 2  # the agent's first echo, then only the operator
    assert "On it." in texts[-1]
    _, messages, _ = await _thread(db, conversation_id)
    assert messages[-1].role == "user"
    assert messages[-1].processed_at is not None


async def test_operator_reply_preempts_customer_rows_a_turn_has_not_answered_yet(db):
    console = await build_console(db)
    conversation_id = await console.customer_says("demo-webchat", "c3", "are you there?")
    async with client(console) as http:  # the turn has not run yet (jobs are drained by hand)
        await sign_in(http)
        token = await csrf_of(http)
        await http.post(f"/console/conversations/{conversation_id}/reply", data={"csrf": token, "text": "Yes!"})
    await console.drain()

    assert [m.meta.get("origin") for m in await replies(db, conversation_id)] == ["operator"]


async def test_ai_switch_turns_the_ai_off_and_back_on_with_audit_rows(db):
    console = await build_console(db)
    conversation_id = await console.customer_says("demo-webchat", "c4", "hi")
    await console.drain()
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http)
        url = f"/console/conversations/{conversation_id}/ai"
        off = await http.post(url, data={"csrf": token, "enabled": "false"})
        state_off = (await _thread(db, conversation_id))[0].ai_enabled
        on = await http.post(url, data={"csrf": token, "enabled": "true"})
        bad = await http.post(url, data={"csrf": token, "enabled": "maybe"})

    assert (off.status_code, on.status_code) == (303, 303)
    assert state_off is False
    assert (await _thread(db, conversation_id))[0].ai_enabled is True
    assert bad.status_code == 422
    assert "enabled" in bad.json()["error"]["message"]
    async with db.read() as session:
        actions = list(await session.scalars(select(AuditEntry.action).where(AuditEntry.target == conversation_id)))
    assert actions == ["ai_disabled", "ai_enabled"]


async def test_failed_operator_send_is_replayed_from_the_console(db):
    console = await build_console(db)
    conversation_id = await console.customer_says("demo-flaky", "f1", "hello over a flaky channel")
    async with db.transaction() as session:  # a person has this thread already: no agent turn
        stored = await session.get(Conversation, conversation_id)
        assert stored is not None
        stored.ai_enabled = False
    await console.drain()
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http)
        sent = await http.post(f"/console/conversations/{conversation_id}/reply", data={"csrf": token, "text": "Hi"})
        failed_page = await http.get(sent.headers["location"])
        _, messages, receipts = await _thread(db, conversation_id)
        receipt = receipts[messages[-1].id]
        console.flaky.failing = False
        replayed = await http.post(f"/console/receipts/{receipt.id}/replay", data={"csrf": token})
        again = await http.post(f"/console/receipts/{receipt.id}/replay", data={"csrf": token})

    assert receipt.status == "failed"
    assert "Reply not delivered: use replay." in failed_page.text
    assert f'action="/console/receipts/{receipt.id}/replay"' in failed_page.text
    assert replayed.status_code == 303
    assert "replay_sent" in replayed.headers["location"]
    assert again.status_code == 409  # a sent delivery is never sent twice
    assert [c["replay"] for c in console.flaky.calls] == [False, True]
    _, _, receipts = await _thread(db, conversation_id)
    assert (receipts[messages[-1].id].status, receipts[messages[-1].id].replays) == ("sent", 1)


async def test_thread_stream_announces_a_new_customer_message(db):
    console = await build_console(db)
    conversation_id = await console.customer_says("demo-webchat", "c5", "first")
    await console.drain()
    async with served(console) as base_url, httpx2.AsyncClient(base_url=base_url, timeout=10) as http:
        await sign_in(http)
        page = await http.get(f"/console/conversations/{conversation_id}")
        since = page.text.split(f"{conversation_id}/stream?since=")[1].split('"')[0]

        waiting = await listening(http, f"/console/conversations/{conversation_id}/stream", {"since": since})
        assert not waiting.done()  # nothing changed since the page was drawn
        await console.customer_says("demo-webchat", "c5", "second")
        changed = await waiting
        partial = await http.get(f"/console/conversations/{conversation_id}/messages")

    assert changed != since
    assert "second" in partial.text


async def test_policy_change_updates_the_prefix_hash_and_writes_an_audit_row(db):
    console = await build_console(db)
    async with client(console) as http:
        await sign_in(http)
        before = await http.get("/console/policy")
        token = await csrf_of(http, "/console/policy")
        form = {
            "csrf": token,
            "business_description": "We print posters.",
            "lead_capture_when": "",
            "tone": "warm",
            "escalate_when": "",
            "out_of_scope": "",
            "operator_language": "en",
            "timezone": "Asia/Ho_Chi_Minh",
        }
        saved = await http.post("/console/policy", data=form)
        after = await http.get("/console/policy")
        invalid = await http.post("/console/policy", data={**form, "timezone": "Mars/Olympus"})

    hash_before = before.text.split('id="prefix-hash">')[1].split("<")[0]
    hash_after = after.text.split('id="prefix-hash">')[1].split("<")[0]
    async with db.read() as session:
        tenant = await session.get(Tenant, "demo")
        entry = await session.scalar(select(AuditEntry).where(AuditEntry.action == "policy_changed"))
    # The hash shown is the one the agent records on its next turn.
    await console.customer_says("demo-webchat", "s-hash", "hello")
    await console.drain()
    expected = (await traces(db))[-1].prefix_hash
    assert saved.status_code == 303
    assert hash_after != hash_before
    assert hash_after == expected
    assert entry is not None
    assert entry.details["prefix_hash_after"] == expected
    assert set(entry.details["fields"]) >= {"business_description", "tone", "timezone"}
    assert invalid.status_code == 422
    assert "unknown time zone" in invalid.text
    assert tenant.policy["timezone"] == "Asia/Ho_Chi_Minh"


async def test_channel_credentials_are_never_shown(db):
    console = await build_console(db)
    now = console.clock.now()
    async with db.transaction() as session:
        for tenant, name in (("demo", "channel/demo-flaky/app_secret"), ("other", "channel/other-webchat/leak")):
            session.add(
                Credential(
                    tenant_id=tenant,
                    name=name,
                    envelope="sealed-ciphertext",
                    key_id="k1",
                    created_at=now,
                    updated_at=now,
                )
            )
    async with client(console) as http:
        await sign_in(http)
        page = await http.get("/console/accounts")

    assert page.status_code == 200
    assert "<code>app_secret</code>" in page.text  # sealed in the vault: its name only
    assert "<code>token</code>" in page.text  # legacy plaintext column: its name only
    assert "s3cr3t-never-shown" not in page.text
    assert "sealed-ciphertext" not in page.text
    assert "leak" not in page.text


async def test_reply_longer_than_a_block_or_blank_is_refused_with_a_clear_message(db):
    console = await build_console(db)
    conversation_id = await console.customer_says("demo-webchat", "c6", "hi")
    async with client(console) as http:
        await sign_in(http)
        token = await csrf_of(http)
        url = f"/console/conversations/{conversation_id}/reply"
        long = await http.post(url, data={"csrf": token, "text": "x" * 2001})
        blank = await http.post(url, data={"csrf": token, "text": "   "})

    assert long.status_code == 422
    assert "text" in long.json()["error"]["message"]
    assert blank.status_code == 422
    assert "write a message" in blank.json()["error"]["message"]
